#!/usr/bin/env python3
"""The cost of a hostile search, against an ordinary one in the same run (issue 23, hole 1).

    .venv/bin/python bench/hostile_search.py [--pills 60] [--chars 5000] [--repeat 3] [--database-url postgres://…]

One user stores ``--pills`` pills of ``--chars`` characters of random words (one bottle, over HTTP's reach), then
calls the ``pill_search`` tool function with: an ordinary query (two words of the pills), and the hostile one: a
1,000-character query of 200 random words of the same vocabulary with ``limit: 100``, strict and fuzzy. Timed is
the tool function (server time: search, snippets and the answer's text), p50 of ``--repeat`` calls each after
one warm-up call, meaning off. The ratio is hostile over ordinary. SQLite in a scratch PILLBOX_HOME, or PostgreSQL
at ``--database-url`` (a database this run flushes: never a real one).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import setup_django

GOAL_MS = 200.0


def words(rng: random.Random, count: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(count)]


def text_of(rng: random.Random, vocabulary: list[str], chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(vocabulary)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pills", type=int, default=60)
    parser.add_argument("--chars", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--vocabulary", type=int, default=300,
                        help="distinct words of the pills (the query takes 200 of them: every word of a pill is "
                        "then likely a query term, the worst case for snippets)")
    parser.add_argument("--database-url", default=None)
    a = parser.parse_args(argv)
    os.environ["EMBEDDINGS"] = "off"
    home = Path(tempfile.mkdtemp(prefix="hostile-search-"))
    setup_django(home, database_url=a.database_url)
    if a.database_url:
        from django.core.management import call_command

        call_command("flush", interactive=False, verbosity=0)
    from django.contrib.auth import get_user_model

    from mcp_bridge.tools import Caller
    from pillbox import services
    from pillbox.access import reach_for
    from pillbox.tools import TOOLSET

    rng = random.Random(23)
    vocabulary = words(rng, a.vocabulary)
    user = get_user_model().objects.create_user("bob")
    caller = Caller(user=user, transport="http")
    reach = reach_for(caller)
    bottle = services.bottle_create(reach=reach, name="bob", display_name="Bob", scope="global")
    reach = reach_for(caller)
    rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="flood", author_name="Bob",
                                    author_email="bob@example.com")
    for index in range(a.pills):
        services.pill_store(reach=reach, prescription_id=rx.id.hex, title=f"pill {index} {rng.choice(vocabulary)}",
                           content=text_of(rng, vocabulary, a.chars), compound="notes", author_name="Bob",
                           author_email="bob@example.com")
    hostile = " ".join(rng.sample(vocabulary, 200))[:1000]
    cases = {
        "ordinary": {"query": " ".join(rng.sample(vocabulary, 2)), "limit": 20, "fuzzy": False},
        "hostile strict": {"query": hostile, "limit": 100, "fuzzy": False},
        "hostile fuzzy": {"query": hostile, "limit": 100, "fuzzy": True},
    }
    handler = TOOLSET.by_name["pill_search"].handler
    handler(caller, dict(cases["ordinary"]))  # warm: the scope's vocabulary is read once, then cached
    p50: dict[str, float] = {}
    for name, arguments in cases.items():
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            reply = handler(caller, dict(arguments))
            times.append((time.perf_counter() - t0) * 1000)
        p50[name] = statistics.median(times)
        text = reply if isinstance(reply, str) else reply.text
        print(f"{name:15} p50 {p50[name]:9.1f} ms  ({text.splitlines()[0][:70]})", flush=True)
    backend = "PostgreSQL" if a.database_url else "SQLite"
    worst = max(p50["hostile strict"], p50["hostile fuzzy"])
    print(f"{backend}: {a.pills} pills x {a.chars} chars; hostile/ordinary strict "
          f"{p50['hostile strict'] / p50['ordinary']:.1f}x, fuzzy {p50['hostile fuzzy'] / p50['ordinary']:.1f}x; "
          f"worst hostile {worst:.0f} ms (goal <= {GOAL_MS:.0f} ms)")
    return 0 if worst <= GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())

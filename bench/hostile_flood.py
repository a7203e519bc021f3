#!/usr/bin/env python3
"""A victim's calls while another user floods hostile searches over MCP and the REST API at once (issue 23, hole 1).

    .venv/bin/python bench/hostile_flood.py [--seconds 10] [--threads 4]

One gunicorn worker with ``--threads`` threads (a scratch PILLBOX_HOME, SQLite). The attacker stores 60 pills of
5,000 characters of random words, then sends the 200-word, 1,000-character ``pill_search`` with ``limit: 100``,
fuzzy, from 2 MCP connections and 3 REST connections (``GET /api/pillbox/search/``) without pause; the victim calls
``bottle_list`` over MCP every 50 ms. The anchor is the victim's median on the same server in the same run with
nobody else on it; the goal is a flooded median within 2x of it. Also printed: one hostile search's time, and how
the attacker's requests were answered (429: over the user's in-flight slots).
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_stall import BIN, HEADERS, PYTHON, summary, victim_latencies  # noqa: E402
from common import REPO, server_env  # noqa: E402

POPULATE = """
import random, sys
import django
django.setup()
from accounts.services import user_get_or_create
from mcp_bridge.tools import Caller
from pillbox import services
from pillbox.access import reach_for

rng = random.Random(23)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(300)]
user = user_get_or_create(username="attacker")
reach = reach_for(Caller(user=user, transport="http"))
bottle = services.bottle_create(reach=reach, name="flood", display_name="Flood", scope="global")
reach = reach_for(Caller(user=user, transport="http"))
rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="x", author_name="A", author_email="a@a")
for n in range(60):
    text = " ".join(rng.choice(words) for _ in range(900))[:5000]
    services.pill_store(reach=reach, prescription_id=rx.id.hex, title=f"pill {n} {rng.choice(words)}",
                        content=text, compound="fact", author_name="A", author_email="a@a")
print(" ".join(rng.sample(words, 200))[:1000])
"""


def mcp_attack(url: str, key: str, query: str, stop: threading.Event, statuses: Counter[str]) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "pill_search", "arguments": {"query": query, "fuzzy": True, "limit": 100}}}
    with httpx2.Client(headers={**HEADERS, "Authorization": f"Bearer {key}"}, timeout=300) as http:
        while not stop.is_set():
            statuses[f"mcp {http.post(url, json=call).status_code}"] += 1


def rest_attack(url: str, key: str, query: str, stop: threading.Event, statuses: Counter[str]) -> None:
    with httpx2.Client(headers={"Authorization": f"Bearer {key}"}, timeout=300) as http:
        while not stop.is_set():
            response = http.get(url, params={"q": query, "limit": 100, "fuzzy": "true"})
            statuses[f"rest {response.status_code}"] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--user-concurrency", default="", help="MCP_USER_CONCURRENCY for the server (default: the "
                        "site's default)")
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = server_env(tmp / "home", EMBEDDINGS="off", API_USER_RATE_LIMIT="0", MCP_USER_RATE_LIMIT="0")
        if a.user_concurrency:
            env["MCP_USER_CONCURRENCY"] = a.user_concurrency
        subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
        query = subprocess.run([PYTHON, "-c", POPULATE], cwd=REPO, env=env, check=True, capture_output=True,
                               text=True).stdout.strip().splitlines()[-1]
        keys = {}
        for name in ("attacker", "victim"):
            made = subprocess.run([PYTHON, "manage.py", "createkey", name, "--create"], cwd=REPO, env=env, check=True,
                                  capture_output=True, text=True).stdout
            keys[name] = made.split("key: ")[1].strip()
        port = 18000 + secrets.randbelow(2000)
        server = subprocess.Popen([str(BIN / "gunicorn"), "config.wsgi", "-w", "1", "--threads", str(a.threads),
                                   "-b", f"127.0.0.1:{port}", "--timeout", "300"], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        site = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx2.get(f"{site}/healthz", timeout=2).status_code == 200:
                        break
                except httpx2.HTTPError:
                    time.sleep(0.1)
            one = time.perf_counter()
            answer = httpx2.get(f"{site}/api/pillbox/search/", params={"q": query, "limit": 100, "fuzzy": "true"},
                                headers={"Authorization": f"Bearer {keys['attacker']}"}, timeout=300)
            print(f"one hostile REST search: {(time.perf_counter() - one) * 1000:.0f} ms (HTTP {answer.status_code})")
            anchor = victim_latencies(f"{site}/pillbox/mcp", keys["victim"], a.seconds)
            base_median, base_p95 = summary(anchor)
            print(f"anchor (no attack): victim bottle_list median {base_median:.1f} ms, p95 {base_p95:.1f} ms")
            stop, statuses = threading.Event(), Counter[str]()
            workers = [threading.Thread(target=mcp_attack, args=(f"{site}/pillbox/mcp", keys["attacker"], query, stop,
                                                                 statuses)) for _ in range(2)]
            workers += [threading.Thread(target=rest_attack, args=(f"{site}/api/pillbox/search/", keys["attacker"],
                                                                   query, stop, statuses)) for _ in range(3)]
            for worker in workers:
                worker.start()
            time.sleep(0.5)
            try:
                found = victim_latencies(f"{site}/pillbox/mcp", keys["victim"], a.seconds)
            finally:
                stop.set()
                for worker in workers:
                    worker.join()
            median, p95 = summary(found)
            print(f"flood (2 MCP + 3 REST hostile searches): victim median {median:.1f} ms "
                  f"({median / base_median:.2f}x anchor, goal <= 2x), p95 {p95:.1f} ms ({p95 / base_p95:.1f}x); "
                  f"attack answered {dict(sorted(statuses.items()))}")
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How many characters an agent reads: the compact and tree views against the seed's JSON, on the public todos set.

    .venv/bin/python bench/todos_views.py [--data FILE] [--repeat 5] [--quick]

The 1,200 todos of todos_oauth_toolkit_s1.json are stored through the put_todo tool in a temporary PILLBOX_HOME,
then list_todos, search_todos and next_todos answer through their tool handlers in each view. Sizes are exact
(characters of the text an agent reads); the JSON answer of the same call is the anchor of every ratio. The public
set has no links, deadlines, tags or blockers, so a second pass gives a copy of it a planner's shape (a root every
ten todos with the next nine as its sub-tasks, a deadline on every third, a tag on every fourth, every fifth
waiting on the one before): sub-tasks and marks cost characters in the compact view, and the ratio should hold.
Timings (median of --repeat runs, same process) are reported as compact/JSON ratios only.

--quick is the CI guard: a non-zero exit when any compact answer is over a third of its JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DATA, setup_django

DEFAULT_DATA = DATA / "todos_oauth_toolkit_s1.json"
GOAL_SHARE = 1 / 3


class Agent:
    """One user calling the Todos tool handlers in-process, as the MCP bridge does for each request."""

    def __init__(self, username: str) -> None:
        from accounts.services import user_get_or_create
        from mcp_bridge.server import run_tool
        from mcp_bridge.tools import Caller
        from todos.tools import TOOLSET

        self._run = run_tool
        self._toolset = TOOLSET
        self.caller = Caller(user=user_get_or_create(username=username), transport="stdio", workdir=None)

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        reply = self._run(self._toolset, self._toolset.by_name[tool], self.caller, arguments)
        if reply.is_error:
            raise SystemExit(f"{tool}({arguments}) failed: {reply.text}")
        return reply.text


def load(agent: Agent, items: list[dict[str, Any]], *, planned: bool) -> None:
    root = None
    for number, item in enumerate(items):
        arguments: dict[str, Any] = {
            "id": item["id"],
            "name": item["name"],
            "description": item["description"] or "",
            "priority": item["priority"],
            "completedAt": item["completedAt"] if item["completed"] else None,
        }
        if planned:
            if number % 10 == 0:
                root = item["id"]
            else:
                arguments["links"] = [root]
            if number % 3 == 0:
                arguments["deadlineAt"] = f"2030-{number % 12 + 1:02d}-{number % 28 + 1:02d}"
            if number % 4 == 0:
                arguments["tags"] = ["backend" if number % 8 else "docs"]
            if number % 5 == 0 and number % 10:
                arguments["blockedBy"] = [items[number - 1]["id"]]
        agent.call("put_todo", arguments)


def measure(agent: Agent, tool: str, arguments: dict[str, Any], repeat: int) -> dict[str, Any]:
    sizes: dict[str, int] = {}
    times: dict[str, float] = {}
    count = 0
    for view in ("json", "compact", "tree"):
        text = agent.call(tool, {**arguments, "view": view})
        sizes[view] = len(text)
        if view == "json":
            count = len(json.loads(text))
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            agent.call(tool, {**arguments, "view": view})
            runs.append(time.perf_counter() - started)
        times[view] = statistics.median(runs)
    return {"count": count, "sizes": sizes, "times": times}


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_todos", {}),
    ("list_todos", {"includeCompleted": True}),
    ("search_todos", {"query": "token", "limit": 20}),
    ("next_todos", {"limit": 10}),
]


def report(title: str, agent: Agent, repeat: int) -> list[float]:
    print(f"\n{title}")
    print("| call | todos | JSON chars/todo | compact chars/todo | compact/JSON | tree/JSON | compact time/JSON time |")
    print("|---|---|---|---|---|---|---|")
    shares = []
    for tool, arguments in CALLS:
        found = measure(agent, tool, arguments, repeat)
        count, sizes, times = max(found["count"], 1), found["sizes"], found["times"]
        share = sizes["compact"] / sizes["json"]
        shares.append(share)
        label = f"{tool} {json.dumps(arguments, separators=(',', ':'))}"
        print(
            f"| `{label}` | {found['count']} | {sizes['json'] / count:.0f} | {sizes['compact'] / count:.0f} | "
            f"{share:.3f} | {sizes['tree'] / sizes['json']:.3f} | {times['compact'] / times['json']:.2f} |"
        )
    return shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    repeat = 1 if options.quick else options.repeat
    items = json.loads(options.data.read_text())["items"]
    with tempfile.TemporaryDirectory(prefix="todos-views-") as tmp:
        setup_django(Path(tmp) / "home")
        from accounts.models import Account

        shares = []
        for title, planned in (("public set as it is", False), ("public set with a planner's shape", True)):
            agent = Agent("bench-planned" if planned else "bench-public")
            Account.objects.filter(user=agent.caller.user).update(max_tasks=len(items))
            load(agent, items, planned=planned)
            shares += report(f"{title} ({len(items)} todos, {options.data.name})", agent, repeat)
    worst = max(shares)
    print(f"\nlargest compact/JSON share: {worst:.3f} (goal: at most {GOAL_SHARE:.3f})")
    return 1 if options.quick and worst > GOAL_SHARE else 0


if __name__ == "__main__":
    raise SystemExit(main())

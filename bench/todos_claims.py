#!/usr/bin/env python3
"""What claims and partial updates cost, through the Todos tool handlers on the embedded SQLite database.

    .venv/bin/python bench/todos_claims.py [--todos 1200] [--claimed 100] [--repeat 200]

A user with --todos todos (a tenth of them claimed by other agents) calls, --repeat times each, in one process:
claim_todo (a renewal by the same claimer: one conditional UPDATE and one read), get_todo (the anchor: one read),
update_todo of one field against put_todo of the same todo with every field, and next_todos, which leaves out the
others' claims, against next_todos with includeClaimed (no claim condition). Medians, reported as ratios of two
calls measured in the same run (the machine is shared and noisy; absolute times are not comparable across runs).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import setup_django


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--todos", type=int, default=1200)
    parser.add_argument("--claimed", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as home:
        setup_django(Path(home))
        from accounts.models import Account
        from accounts.services import user_get_or_create
        from mcp_bridge.server import run_tool
        from mcp_bridge.tools import Caller
        from todos import leases, services
        from todos.tools import TOOLSET

        user = user_get_or_create(username="bench")
        Account.objects.filter(user=user).update(max_tasks=options.todos + 10)
        for n in range(options.todos):
            services.todo_put(owner=user, key=f"t{n}", name=f"Step {n} of the plan", description="Some words.",
                              priority=("low", "medium", "high")[n % 3], tags=["bench"])
        for n in range(options.claimed):
            leases.todo_claim(owner=user, key=f"t{n * (options.todos // options.claimed)}", by=f"other-{n}")
        services.todo_put(owner=user, key="mine", name="Mine", description="", tags=["bench"])
        caller = Caller(user=user, transport="stdio", client_name="bench-agent")

        def tool(tool_name: str, /, **arguments: Any) -> Callable[[], Any]:
            def call() -> None:
                reply = run_tool(TOOLSET, TOOLSET.by_name[tool_name], caller, arguments)
                if reply.is_error:
                    raise SystemExit(f"{tool_name}: {reply.text}")

            return call

        flip = iter(range(10**9))
        rows = {
            "get_todo": median_ms(tool("get_todo", id="mine"), options.repeat),
            "claim_todo (renew)": median_ms(tool("claim_todo", id="mine"), options.repeat),
            "put_todo (all fields)": median_ms(
                lambda: tool("put_todo", id="mine", name="Mine", description=f"v{next(flip)}", tags=["bench"])(),
                options.repeat,
            ),
            "update_todo (one field)": median_ms(
                lambda: tool("update_todo", id="mine", description=f"v{next(flip)}")(), options.repeat
            ),
            "next_todos (skips claims)": median_ms(tool("next_todos", limit=10), options.repeat),
            "next_todos (includeClaimed)": median_ms(tool("next_todos", limit=10, includeClaimed=True), options.repeat),
        }
        for name, value in rows.items():
            print(f"{name:30} {value:8.3f} ms")
        print(f"claim_todo / get_todo:                 {rows['claim_todo (renew)'] / rows['get_todo']:.2f}")
        patch, put = rows["update_todo (one field)"], rows["put_todo (all fields)"]
        print(f"update_todo / put_todo:                {patch / put:.2f}")
        print(f"next_todos skipping / includeClaimed:  "
              f"{rows['next_todos (skips claims)'] / rows['next_todos (includeClaimed)']:.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What claims and partial updates cost, through the Todos tool handlers on the embedded SQLite database; and, with
--database-url, claim_next raced by several agents through two app servers on PostgreSQL + Redis.

    .venv/bin/python bench/todos_claims.py [--todos 1200] [--claimed 100] [--repeat 200]
    .venv/bin/python bench/todos_claims.py --database-url postgres://postgres@127.0.0.1:5432/test \
        [--redis-url redis://127.0.0.1:6379/4] [--agents 8] [--claims 50]

A user with --todos todos (a tenth of them claimed by other agents) calls, --repeat times each, in one process:
claim_todo (a renewal by the same claimer: one conditional UPDATE and one read), get_todo (the anchor: one read),
update_todo of one field against put_todo of the same todo with every field, and next_todos, which leaves out the
others' claims, against next_todos with includeClaimed (no claim condition). Medians, reported as ratios of two
calls measured in the same run (the machine is shared and noisy; absolute times are not comparable across runs).
claim_next (which claims a new todo each time) is measured against next_todos the same way.

With --database-url: a scratch database beside the one named (dropped afterwards), two gunicorn servers (two
workers of four threads each) sharing it and one Redis, as tests/shared starts them. --agents agents of one user,
half through each server, call next_todos then claim_next --claims times each, at once, keeping every claim. It
checks that no todo went to two agents and none was passed over while free (the todos taken are exactly the first
agents x claims in next_todos' order, and each is held by the agent it was answered to), and reports the p50 and
p90 of both calls and their ratio (goal: p50 claim_next at most 2x p50 next_todos).
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import REPO, setup_django

NO_FREE_TODO = "No free todo."
GOAL_RATIO = 2.0


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


def single_process(options: argparse.Namespace) -> None:
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
            "claim_next": median_ms(tool("claim_next"), options.repeat),
        }
        for name, value in rows.items():
            print(f"{name:30} {value:8.3f} ms")
        print(f"claim_todo / get_todo:                 {rows['claim_todo (renew)'] / rows['get_todo']:.2f}")
        patch, put = rows["update_todo (one field)"], rows["put_todo (all fields)"]
        print(f"update_todo / put_todo:                {patch / put:.2f}")
        print(f"next_todos skipping / includeClaimed:  "
              f"{rows['next_todos (skips claims)'] / rows['next_todos (includeClaimed)']:.2f}")
        print(f"claim_next / next_todos:               {rows['claim_next'] / rows['next_todos (skips claims)']:.2f}")


def _servers(home: Path) -> Any:
    """The two-server helpers of tests/shared (the same servers the tests race), with Django set up as they expect
    (on a scratch data directory ``home``, no database opened); imported by name, so the type check of the
    benchmarks does not take in the tests."""
    import os

    sys.path.insert(0, str(REPO))
    os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", PILLBOX_HOME=str(home))
    os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    return importlib.import_module("tests.shared.servers")


def _agent(tool_call: Any, url: str, key: str, by: str, claims: int, start: threading.Barrier) -> dict[str, Any]:
    import httpx2

    taken, next_times, claim_times = [], [], []
    with httpx2.Client(timeout=120) as http:
        start.wait()
        for _ in range(claims):
            began = time.perf_counter()
            failed, text = tool_call(http, url, "/mcp", key, "next_todos", {"by": by, "under": "bench-root"})
            next_times.append(time.perf_counter() - began)
            if failed:
                raise SystemExit(f"next_todos: {text}")
            began = time.perf_counter()
            failed, text = tool_call(http, url, "/mcp", key, "claim_next", {"by": by, "under": "bench-root"})
            claim_times.append(time.perf_counter() - began)
            if failed:
                raise SystemExit(f"claim_next: {text}")
            taken.append(text if text == NO_FREE_TODO else json.loads(text)["id"])
    return {"taken": taken, "next": next_times, "claim": claim_times}


def two_servers(options: argparse.Namespace) -> None:
    """The race of --agents agents through two servers on PostgreSQL + Redis (see the module's docstring)."""
    import httpx2
    import psycopg

    count = options.agents * options.claims
    with tempfile.TemporaryDirectory(prefix="bench-claim-next-") as scratch:
        helpers = _servers(Path(scratch) / "bench")
        app_servers, call, shared_database = helpers.app_servers, helpers.call, helpers.shared_database
        with shared_database(options.database_url, Path(scratch) / "migrate", ["bench"]) as database, app_servers(
            Path(scratch) / "servers", database, REDIS_URL=options.redis_url,
            CACHE_KEY_PREFIX=f"bench-claims-{time.time_ns()}",
        ) as servers:
            key = database.accounts["bench"]["key"]
            with httpx2.Client(timeout=60) as http:
                call(http, servers[0], "/mcp", key, "put_todo", {"id": "bench-root", "name": "Root", "description": ""})
                for n in range(count + options.spare):
                    call(http, servers[n % 2], "/mcp", key, "put_todo",
                         {"id": f"b{n:04d}", "name": f"Step {n}", "description": "", "links": ["bench-root"],
                          "priority": ("low", "medium", "high")[n % 3]})
                order = [todo["id"] for todo in json.loads(call(
                    http, servers[0], "/mcp", key, "next_todos", {"under": "bench-root", "limit": 200}))]
            start = threading.Barrier(options.agents)
            with ThreadPoolExecutor(options.agents) as pool:
                futures = {
                    f"agent-{i}": pool.submit(
                        _agent, helpers.tool_call, servers[i % 2], key, f"agent-{i}", options.claims, start
                    )
                    for i in range(options.agents)
                }
                runs = {by: future.result() for by, future in futures.items()}
            with psycopg.connect(database.url) as db:
                rows = db.execute("SELECT key, claimed_by, claimed_until > now() FROM todos_todo WHERE key LIKE 'b0%%'")
                holders = {todo: (by, live) for todo, by, live in rows.fetchall()}
    taken = [todo for run in runs.values() for todo in run["taken"]]
    refused = taken.count(NO_FREE_TODO)
    twice = len(taken) - refused - len(set(taken) - {NO_FREE_TODO})
    wrong_holder = sum(holders.get(todo) != (by, True) for by, run in runs.items() for todo in run["taken"])
    # next_todos' order here: priority (high first), then age; it answers at most 200, which must agree with it.
    rank = {"high": 0, "medium": 1, "low": 2}
    expected = sorted((f"b{n:04d}" for n in range(count + options.spare)),
                      key=lambda todo: (rank[("low", "medium", "high")[int(todo[1:]) % 3]], todo))
    assert order == expected[: len(order)], "next_todos' order is not the one expected"
    passed_over = len(set(expected[:count]) - set(taken))
    next_times = [t for run in runs.values() for t in run["next"]]
    claim_times = [t for run in runs.values() for t in run["claim"]]
    print(f"{options.agents} agents x {options.claims} claim_next through two servers (PostgreSQL + Redis), "
          f"{count + options.spare} free todos")
    print(f"todos taken: {len(taken) - refused} of {count} calls; held by two agents: {twice}; answered to one agent "
          f"but held by another: {wrong_holder}; 'No free todo.' while free: {refused}; passed over: {passed_over}")
    p50_next, p50_claim = percentile(next_times, 0.5), percentile(claim_times, 0.5)
    print(f"next_todos  p50 {p50_next:8.2f} ms  p90 {percentile(next_times, 0.9):8.2f} ms")
    print(f"claim_next  p50 {p50_claim:8.2f} ms  p90 {percentile(claim_times, 0.9):8.2f} ms")
    ratio = p50_claim / p50_next
    print(f"claim_next / next_todos (p50): {ratio:.2f} (goal <= {GOAL_RATIO})")
    if twice or wrong_holder or refused or passed_over or ratio > GOAL_RATIO:
        raise SystemExit("FAILED")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--todos", type=int, default=1200)
    parser.add_argument("--claimed", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--database-url", help="PostgreSQL: race claim_next through two servers instead")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/4")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--claims", type=int, default=50)
    parser.add_argument("--spare", type=int, default=20, help="free todos left once every agent is done")
    options = parser.parse_args()
    if options.database_url:
        two_servers(options)
    else:
        single_process(options)


if __name__ == "__main__":
    main()

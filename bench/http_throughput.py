#!/usr/bin/env python3
"""P3: `tools/call` throughput and latency at /mcp under the documented production server, beside the SDK's own
MCPServer (stateless, JSON responses) serving the same tool under uvicorn, on the same machine in the same run.

    .venv/bin/python bench/http_throughput.py [--seconds 30] [--repeat 3] [--connections 32] [--workers 2]
        [--stack readme|gunicorn|uvicorn] [--threads N] [--database-url postgres://…]
    .venv/bin/python bench/http_throughput.py --quick   # CI guard, under a minute

Needs `wrk` (Debian: apt-get install wrk). Both servers get the same worker count; wrk runs against each in turn
with the same connections and duration, `--repeat` times (medians reported). Ours is, by default, the server
command of the README's Production section (read from the README, so the bench follows it), with an API key in
the Authorization header and the tool `get_list_usage` (one indexed count); `--stack gunicorn` measures the
former production command (`gunicorn config.wsgi --threads 8`) and `--stack uvicorn` the ASGI application, for
comparison. The SDK's server answers a `get_list_usage` that returns a constant, with no authentication. Ours runs
on a fresh SQLite file unless `--database-url` names a PostgreSQL database (migrated, one user added).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
from common import REPO, server_env

PYTHON = sys.executable
BIN = Path(PYTHON).parent
GOAL_RATIO, GOAL_P99_MS = 2.0, 50.0

SDK_APP = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("baseline")


@server.tool()
def get_list_usage() -> str:
    """How many todos exist."""
    return '{"count":0,"maxTasks":1200,"percentage":0}'


app = server.streamable_http_app(stateless_http=True, json_response=True)
'''

LUA = """
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_list_usage","arguments":{}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-03-26"
%s
"""


def readme_server_command() -> list[str]:
    """The app server line of the README's Production block, as shell words."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"^## Production\n+```sh\n(.*?)\n```", readme, re.S | re.M)
    if block is None:
        raise SystemExit("README has no Production command block")
    for line in block.group(1).replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "granian":
            return words
    raise SystemExit("README's Production block names no granian command")


def our_command(stack: str, workers: int, port: int, threads: int | None = None) -> list[str]:
    if stack == "gunicorn":
        return [str(BIN / "gunicorn"), "config.wsgi", "-w", str(workers), "--threads", str(threads or 8), "-b",
                f"127.0.0.1:{port}"]
    if stack == "uvicorn":
        return [str(BIN / "uvicorn"), "config.asgi:application", "--workers", str(workers), "--port", str(port),
                "--log-level", "warning", "--no-access-log"]
    words = readme_server_command()
    values = {"--workers": str(workers), "--host": "127.0.0.1", "--port": str(port)}
    return [str(BIN / words[0]), *(values.get(words[n - 1], word) for n, word in enumerate(words) if n)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_up(url: str, process: subprocess.Popen[bytes], body: dict[str, Any], headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited: {process.args!r}")
        try:
            if httpx2.post(url, json=body, headers=headers, timeout=2).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server did not come up: {url}")


def run_wrk(url: str, lua: Path, seconds: int, connections: int) -> dict[str, float]:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(lua), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rps is not None, out
    result = {"rps": float(rps.group(1))}
    for pct in ("50", "90", "99"):
        latency = re.search(rf"\s{pct}%\s+([\d.]+)(us|ms|s)", out)
        assert latency is not None, out
        value, unit = latency.groups()
        result[f"p{pct}"] = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non2xx"] = float(errors.group(1)) if errors else 0.0
    return result


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def measure(a: argparse.Namespace) -> tuple[dict[str, float], dict[str, float], float]:
    """Median results of ours and the SDK's over the repeats, and the median of the per-repeat rps ratios."""
    tmp = Path(tempfile.mkdtemp(prefix="throughput_")).resolve()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        # One key drives every connection here: the per-user limits would turn the load into 429s.
        env = server_env(tmp / "home", MCP_USER_RATE_LIMIT="0", MCP_USER_CONCURRENCY="0")
        if a.database_url:
            env["DATABASE_URL"] = a.database_url
        if a.threads:
            env["APP_THREADS"] = str(a.threads)  # the README's server: threads per worker (config.asgi.buffered)
        subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
        made = subprocess.run(
            [PYTHON, "manage.py", "createkey", f"bench-{secrets.token_hex(3)}", "--create"], cwd=REPO, env=env,
            check=True, capture_output=True, text=True,
        ).stdout
        key = made.split("key: ")[1].strip()
        (tmp / "baseline_app.py").write_text(SDK_APP)

        ours_port, sdk_port = free_port(), free_port()
        ours_cmd = our_command(a.stack, a.workers, ours_port, a.threads)
        processes.append(
            subprocess.Popen(ours_cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        processes.append(
            subprocess.Popen(
                [str(BIN / "uvicorn"), "baseline_app:app", "--workers", str(a.workers), "--port", str(sdk_port),
                 "--log-level", "warning", "--no-access-log"],
                cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        )
        call = {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_list_usage", "arguments": {}}
        }
        base_headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-03-26"}
        ours_url, sdk_url = f"http://127.0.0.1:{ours_port}/mcp", f"http://127.0.0.1:{sdk_port}/mcp"
        wait_up(ours_url, processes[0], call, {**base_headers, "Authorization": f"Bearer {key}"})
        wait_up(sdk_url, processes[1], call, base_headers)

        ours_lua, sdk_lua = tmp / "ours.lua", tmp / "sdk.lua"
        ours_lua.write_text(LUA % f'wrk.headers["Authorization"] = "Bearer {key}"')
        sdk_lua.write_text(LUA % "")
        warm = max(2, a.seconds // 10)
        run_wrk(ours_url, ours_lua, warm, a.connections)
        run_wrk(sdk_url, sdk_lua, warm, a.connections)
        ours_runs, sdk_runs = [], []
        for _ in range(a.repeat):
            ours_runs.append(run_wrk(ours_url, ours_lua, a.seconds, a.connections))
            sdk_runs.append(run_wrk(sdk_url, sdk_lua, a.seconds, a.connections))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)
    ratio = statistics.median(ours["rps"] / sdk["rps"] for ours, sdk in zip(ours_runs, sdk_runs, strict=True))
    return median_of(ours_runs), median_of(sdk_runs), ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each server, alternating (medians reported)")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stack", choices=("readme", "gunicorn", "uvicorn"), default="readme")
    ap.add_argument("--threads", type=int, help="threads per worker instead of the command's (readme, gunicorn)")
    ap.add_argument("--database-url", help="run ours on this PostgreSQL database instead of a fresh SQLite file")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"CI guard: 2 runs of 5 s; exit 1 below 1x the SDK's requests/s or over {2 * GOAL_P99_MS:g} ms p99 "
        "(twice the goals)",
    )
    a = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk: apt-get install wrk")
    if a.quick:
        a.seconds, a.repeat = 5, 2
    load = os.getloadavg()
    ours, sdk, ratio = measure(a)

    readme = our_command("readme", a.workers, 8000, a.threads)
    name = {"readme": shlex.join([Path(readme[0]).name, *readme[1:]]),
            "gunicorn": f"gunicorn config.wsgi --threads {a.threads or 8}",
            "uvicorn": "uvicorn config.asgi:application"}[a.stack]
    print(f"{a.connections} connections, {a.seconds} s x {a.repeat}, {a.workers} workers each; wrk on the same "
          f"machine; load average before the run {load[0]:.1f}\n")
    print("| server | requests/s | p50 ms | p90 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|")
    for label, r in ((f"ours: {name}", ours), ("SDK MCPServer under uvicorn", sdk)):
        print(f"| {label} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p90']:.1f} | {r['p99']:.1f} | {r['non2xx']:.0f} |")
    print(f"| ratio ours/SDK | {ratio:.2f} | {ours['p50'] / sdk['p50']:.2f} | | {ours['p99'] / sdk['p99']:.2f} | |")
    if a.quick:
        ok = ratio >= GOAL_RATIO / 2 and ours["p99"] <= 2 * GOAL_P99_MS and not ours["non2xx"]
        print(f"\nguard (twice the goals: >= {GOAL_RATIO / 2:g}x the SDK's requests/s, p99 <= {2 * GOAL_P99_MS:g} ms, "
              f"no errors): {'ok' if ok else 'FAILED'}")
        return 0 if ok else 1
    ok_rps, ok_p99 = ratio >= GOAL_RATIO, ours["p99"] <= GOAL_P99_MS
    print(
        f"\ngoals: requests/s >= {GOAL_RATIO:g}x the SDK's: {'ok' if ok_rps else 'MISSED'}, p99 <= {GOAL_P99_MS:g} ms: "
        f"{'ok' if ok_p99 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""P3: `tools/call` throughput and latency at /mcp under the documented production server, beside the SDK's own
MCPServer (stateless, JSON responses) serving the same tool under uvicorn, on the same machine in the same run.

    .venv/bin/python bench/http_throughput.py [--seconds 60] [--connections 32] [--workers 2]

Needs `wrk` (Debian: apt-get install wrk). Both servers get the same worker count; wrk runs one after the other
against each with the same connections and duration. Ours is `gunicorn config.wsgi -w W --threads 8` (the README's
production command) with an API key in the Authorization header and the tool `get_list_usage` (one indexed
count query); the SDK's server answers a `get_list_usage` that returns a constant, with no authentication.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BIN = Path(PYTHON).parent

SDK_APP = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("baseline")


@server.tool()
def get_list_usage() -> str:
    """How many todos exist."""
    return '{"count":0,"maxTasks":1200,"percentage":0}'


app = server.streamable_http_app(stateless_http=True, json_response=True)
'''

STACKS = {
    "gunicorn": "gunicorn config.wsgi -w {workers} --threads 8 -b 127.0.0.1:{port}",
    "gunicorn2": "gunicorn config.wsgi -w {workers} --threads 2 -b 127.0.0.1:{port}",
    "gunicorn4": "gunicorn config.wsgi -w {workers} --threads 4 -b 127.0.0.1:{port}",
    "granian": "granian config.wsgi:application --interface wsgi --workers {workers} --port {port} --no-ws",
    "granian1": "granian config.wsgi:application --interface wsgi --workers {workers} --blocking-threads 1 --port {port} --no-ws",
    "granian2": "granian config.wsgi:application --interface wsgi --workers {workers} --blocking-threads 2 --port {port} --no-ws",
    "uvicorn": "uvicorn config.asgi:application --workers {workers} --port {port} --log-level warning --no-access-log",
}

LUA = """
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_list_usage","arguments":{}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-03-26"
%s
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_up(url: str, process: subprocess.Popen, body: dict, headers: dict) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited: {process.args}")
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
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}
    for pct in ("50", "90", "99"):
        value, unit = re.search(rf"\s{pct}%\s+([\d.]+)(us|ms|s)", out).groups()
        result[f"p{pct}"] = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non2xx"] = float(errors.group(1)) if errors else 0.0
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stack", choices=sorted(STACKS), default="gunicorn")
    a = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk: apt-get install wrk")

    tmp = Path(tempfile.mkdtemp(prefix="throughput_")).resolve()
    processes: list[subprocess.Popen] = []
    try:
        env = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PILLBOX_ROOT", "DJANGO_SETTINGS_MODULE")
        }
        env.update(
            PILLBOX_HOME=str(tmp / "home"),
            DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
            DJANGO_DEBUG="false",
            ALLOWED_HOSTS="127.0.0.1",
            SITE_URL="http://127.0.0.1",
            # One key drives every connection here: the per-user limits would turn the load into 429s.
            MCP_USER_RATE_LIMIT="0",
            MCP_USER_CONCURRENCY="0",
        )
        subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
        made = subprocess.run(
            [PYTHON, "manage.py", "createkey", "bench", "--create"], cwd=REPO, env=env, check=True,
            capture_output=True, text=True,
        ).stdout
        key = made.split("key: ")[1].strip()
        (tmp / "baseline_app.py").write_text(SDK_APP)

        ours_port, sdk_port = free_port(), free_port()
        processes.append(
            subprocess.Popen(
                [str(BIN / word) if i == 0 else word.format(workers=a.workers, port=ours_port)
                 for i, word in enumerate(STACKS[a.stack].split())],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        processes.append(
            subprocess.Popen(
                [
                    str(BIN / "uvicorn"),
                    "baseline_app:app",
                    "--workers",
                    str(a.workers),
                    "--port",
                    str(sdk_port),
                    "--log-level",
                    "warning",
                    "--no-access-log",
                ],
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_list_usage", "arguments": {}},
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
        ours = run_wrk(ours_url, ours_lua, a.seconds, a.connections)
        sdk = run_wrk(sdk_url, sdk_lua, a.seconds, a.connections)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{a.connections} connections, {a.seconds} s, {a.workers} workers each; wrk on the same machine\n")
    print("| server | requests/s | p50 ms | p90 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|")
    for name, r in (("ours: gunicorn config.wsgi (API key, DB count)", ours), ("SDK MCPServer under uvicorn", sdk)):
        print(f"| {name} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p90']:.1f} | {r['p99']:.1f} | {r['non2xx']:.0f} |")
    print(
        f"| ratio ours/SDK | {ours['rps'] / sdk['rps']:.2f} | {ours['p50'] / sdk['p50']:.2f} | | "
        f"{ours['p99'] / sdk['p99']:.2f} | |"
    )
    ok_rps, ok_p99 = ours["rps"] >= 2 * sdk["rps"], ours["p99"] <= 50
    print(
        f"\ngoals: requests/s >= 2x the SDK's: {'ok' if ok_rps else 'MISSED'}, p99 <= 50 ms: "
        f"{'ok' if ok_p99 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

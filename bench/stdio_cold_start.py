#!/usr/bin/env python3
"""Cold start of the stdio server: spawn to the first ``tools/list`` answer, ours against the MCP SDK's minimum.

    .venv/bin/python bench/stdio_cold_start.py [--runs 7]

Ours is ``manage.py mcp pillbox`` run in a temporary project directory with a temporary PILLBOX_HOME (migrated
by a first, untimed run, as on any machine after its first use): it answers the handshake from the servers'
definitions and sets Django up once the tools are listed. The reference is the SDK's own minimal server,
``mcp.server.mcpserver.MCPServer`` with one tool over stdio, written to a temporary file at run time. Both are
driven the same way, by raw JSON-RPC lines over pipes (initialize, notifications/initialized, tools/list sent
at once on spawn), timing spawn -> initialize answer and spawn -> tools/list answer; runs alternate between the
servers and the median of each is reported, with the ratio. Django's own ``mcp`` command (``django-admin mcp
pillbox``: Django set up before the handshake, the way ``manage.py mcp`` started before) runs beside them, and
separate runs that also send a first ``tools/call`` (``bottle_list``) time spawn -> its answer for both of ours.

The breakdown of ours (medians of the same number of runs): the bare interpreter (``python -c pass``), then,
timed inside one process doing what the command does, importing the stdio bridge (the SDK included) and
building the server from the definitions: all that precedes the handshake's answers; then what the first call
waits for: ``django.setup()``, importing the Pillbox tools, ``ensure_global_db()`` and the user lookup; plus
the heaviest imports by ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

SDK_SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("minimal")


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    app.run()
'''

STAGES = """
import json, os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_stdio")
from mcp_bridge import definitions, stdio
from mcp_bridge.server import build_server
t1 = time.perf_counter()
definition = definitions.servers()["pillbox"]
build_server(definitions.deferred_toolset(definition, lambda: None))
t2 = time.perf_counter()
import django
django.setup()
t3 = time.perf_counter()
from django.conf import settings
from django.utils.module_loading import import_string
toolset = import_string(settings.MCP_SERVERS["pillbox"])
t4 = time.perf_counter()
from base.bootstrap import ensure_global_db
ensure_global_db()
t5 = time.perf_counter()
from accounts.services import user_get_or_create
user_get_or_create(username=os.environ["PILLBOX_USER"])
t6 = time.perf_counter()
print(json.dumps({{"import the stdio bridge (SDK included)": t1 - t0,
                  "definitions -> server": t2 - t1, "(after tools/list) django.setup()": t3 - t2,
                  "(after tools/list) Pillbox tools": t4 - t3, "(after tools/list) ensure_global_db()": t5 - t4,
                  "(after tools/list) user lookup": t6 - t5}}))
"""

def protocol_version() -> str:
    try:
        from mcp_types import LATEST_PROTOCOL_VERSION

        return LATEST_PROTOCOL_VERSION
    except ImportError:  # older SDKs
        from mcp.types import LATEST_PROTOCOL_VERSION

        return LATEST_PROTOCOL_VERSION


def messages(*, call: bool = False) -> bytes:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol_version(),
                "capabilities": {},
                "clientInfo": {"name": "cold-start-bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    if call:
        lines.append({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "bottle_list"}})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def answer_times(cmd: list[str], cwd: Path, env: dict[str, str], *, call: bool = False) -> tuple[dict[int, float], int]:
    """(ms from spawn to each answer, by request id; number of tools listed). Waits for the last answer."""
    last = 3 if call else 2
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(messages(call=call))
    proc.stdin.flush()
    times: dict[int, float] = {}
    tools = 0
    try:
        for raw in proc.stdout:
            message = json.loads(raw)
            times[message.get("id")] = (time.perf_counter() - t0) * 1000
            if "error" in message or message.get("result", {}).get("isError"):
                raise SystemExit(f"{cmd}: request {message.get('id')} failed: {message}")
            if message.get("id") == 2:
                tools = len(message["result"]["tools"])
            if message.get("id") == last:
                break
    finally:
        # The input stays open until the last answer: closing it earlier would cancel a call in progress.
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if last not in times:
        raise SystemExit(f"{cmd}: no answer (exit code {proc.returncode})")
    return times, tools


def one_run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(ms to the initialize answer, ms to the tools/list answer, number of tools listed)."""
    times, tools = answer_times(cmd, cwd, env)
    return times[1], times[2], tools


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def heaviest_imports(cmd: list[str], cwd: Path, env: dict[str, str], top: int = 10) -> list[tuple[str, float]]:
    """Packages by the import time of their own modules (python -X importtime self times), one start of ``cmd``
    through its first call (Django's imports included)."""
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]],
        cwd=cwd,
        env=env,
        input=messages(call=True),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    totals: dict[str, float] = {}
    for line in proc.stderr.decode(errors="replace").splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \| \s*(\S+)", line)
        if found:
            name = found.group(2).split(".")[0]
            totals[name] = totals.get(name, 0.0) + int(found.group(1)) / 1000
    return sorted(totals.items(), key=lambda item: -item[1])[:top]


Server = tuple[list[str], dict[str, str]]


@contextmanager
def scratch() -> Iterator[tuple[Path, dict[str, Server]]]:
    """A temporary project and data directory (migrated by an untimed first start, which also warms the OS file
    cache and the .pyc files), and the servers to start in it: ours, Django's own command, the SDK's."""
    tmp = Path(tempfile.mkdtemp(prefix="cold_start_")).resolve()
    try:
        home, project = tmp / "home", tmp / "project"
        home.mkdir()
        project.mkdir()
        sdk_file = tmp / "minimal_server.py"
        sdk_file.write_text(SDK_SERVER)
        dropped = ("DATABASE_URL", "PILLBOX_ROOT", "DJANGO_SETTINGS_MODULE")
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        env.update(PILLBOX_HOME=str(home), PILLBOX_USER="bench", PYTHONDONTWRITEBYTECODE="0")
        servers = {
            "ours": ([PYTHON, str(REPO / "manage.py"), "mcp", "pillbox"], env),
            "django": (
                [PYTHON, "-m", "django", "mcp", "pillbox"],
                {**env, "DJANGO_SETTINGS_MODULE": "config.settings_stdio", "PYTHONPATH": str(REPO)},
            ),
            "sdk": ([PYTHON, str(sdk_file)], env),
        }
        for cmd, server_env in servers.values():
            one_run(cmd, project, server_env)
        yield project, servers
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


GOAL = 1.1
GUARD = 1.2  # twice the goal's 10% over the SDK


def quick(a: argparse.Namespace) -> int:
    with scratch() as (project, servers):
        runs: dict[str, list[float]] = {"ours": [], "sdk": []}
        for _ in range(5):
            for name in runs:
                cmd, env = servers[name]
                runs[name].append(one_run(cmd, project, env)[1])
    ours, sdk = statistics.median(runs["ours"]), statistics.median(runs["sdk"])
    ratio = ours / sdk
    print(
        f"stdio cold start to tools/list: ours {ours:.0f} ms, SDK minimal {sdk:.0f} ms, ratio {ratio:.2f} "
        f"(goal {GOAL}, guard {GUARD}; load average {os.getloadavg()[0]:.1f})"
    )
    return 0 if ratio <= GUARD else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="timed starts of each server (median taken)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"CI guard: 5 alternating runs, no breakdown; exit 1 when ours is over {GUARD}x the SDK's "
        f"(twice the {GOAL}x goal's margin)",
    )
    a = ap.parse_args(argv)
    if a.quick:
        return quick(a)

    count = max(1, a.runs)
    load = [os.getloadavg()[0]]
    with scratch() as (project, servers):
        tools = {name: one_run(cmd, project, env)[2] for name, (cmd, env) in servers.items()}
        runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in servers}
        calls: dict[str, list[float]] = {"ours": [], "django": []}
        for _ in range(count):
            for name, (cmd, env) in servers.items():
                runs[name].append(one_run(cmd, project, env))
            for name in calls:
                cmd, env = servers[name]
                calls[name].append(answer_times(cmd, project, env, call=True)[0][3])
        load.append(os.getloadavg()[0])

        env = servers["ours"][1]
        bare = [timed([PYTHON, "-c", "pass"], project, env) for _ in range(count)]
        sdk_import = [timed([PYTHON, "-c", "import mcp.server.mcpserver"], project, env) for _ in range(count)]
        stage_script = STAGES.format(repo=str(REPO))
        stages = []
        for _ in range(count):
            out = subprocess.run(
                [PYTHON, "-c", stage_script],
                cwd=project,
                env=env,
                check=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            ).stdout
            stages.append(json.loads(out))
        imports = heaviest_imports(servers["ours"][0], project, env)

    med = {
        name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)) for name, rs in runs.items()
    }
    spread = {name: (min(r[1] for r in rs), max(r[1] for r in rs)) for name, rs in runs.items()}
    first_call = {name: statistics.median(times) for name, times in calls.items()}
    labels = {
        "ours": "ours: manage.py mcp pillbox",
        "django": "Django's command: django-admin mcp pillbox",
        "sdk": "SDK: MCPServer, one tool",
    }
    print(
        f"python {sys.version.split()[0]}, {count} alternating runs each, medians; "
        f"load average {load[0]:.1f} -> {load[1]:.1f}\n"
    )
    print("| server | tools | ms to initialize answer | ms to tools/list answer | min-max tools/list | "
          "ms to first tools/call answer |")
    print("|---|---|---|---|---|---|")
    for name, label in labels.items():
        call = f"{first_call[name]:.0f}" if name in first_call else ""
        print(
            f"| {label} | {tools[name]} | {med[name][0]:.0f} | {med[name][1]:.0f} | "
            f"{spread[name][0]:.0f}-{spread[name][1]:.0f} | {call} |"
        )
    sdk = med["sdk"]
    print(f"| ratio ours/SDK | | {med['ours'][0] / sdk[0]:.2f} | {med['ours'][1] / sdk[1]:.2f} | | |")
    print(f"| ratio Django's command/SDK | | {med['django'][0] / sdk[0]:.2f} | {med['django'][1] / sdk[1]:.2f} | | |")

    print("\nbreakdown of ours (ms, medians):\n")
    print("| stage | ms |")
    print("|---|---|")
    interpreter = statistics.median(bare)
    print(f"| interpreter start (python -c pass) | {interpreter:.0f} |")
    accounted = interpreter
    for key in stages[0]:
        value = statistics.median(s[key] for s in stages) * 1000
        if not key.startswith("(after"):
            accounted += value
        print(f"| {key} | {value:.0f} |")
    print(f"| the rest to tools/list: manage.py, stdio loop, the answers | {med['ours'][1] - accounted:.0f} |")
    print(f"| total to tools/list answer | {med['ours'][1]:.0f} |")
    print(
        f"\nfor the SDK server: interpreter {interpreter:.0f} ms, `import mcp.server.mcpserver` "
        f"{statistics.median(sdk_import) - interpreter:.0f} ms more."
    )
    print("\nheaviest packages imported by ours through its first call (python -X importtime, own modules' self "
          "time, ms, one run):\n")
    print(", ".join(f"{name} {ms:.0f}" for name, ms in imports))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""P5: resident memory of a stdio Pillbox server after 1,000 and 2,000 tool calls (goal: <= 150 MB, no growth).

    .venv/bin/python bench/stdio_memory.py [--calls 2000]

Spawns `manage.py mcp pillbox` in a scratch project, speaks newline-delimited JSON-RPC to it directly, and
reads VmRSS from /proc after the initialize, after half the calls and after all of them. The calls cycle
through pill_store, pill_search (strict and misspelled), pill_read, prescription_context and capsule_store.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert found is not None, status
    return int(found.group(1)) / 1024


class Server:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), "mcp", "pillbox"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        while True:
            answer: dict[str, Any] = json.loads(self.process.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")

    def call(self, tool: str, **arguments: object) -> str:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        text: str = answer["result"]["content"][0]["text"]
        return text


def short_id(text: str) -> str:
    found = re.search(r"^id: ([0-9a-f]{12})$", text, re.M)
    assert found is not None, text
    return found.group(1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="stdio_memory_")).resolve()
    try:
        (tmp / "project").mkdir()
        env = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PILLBOX_ROOT", "DJANGO_SETTINGS_MODULE")
        }
        env.update(PILLBOX_HOME=str(tmp / "home"), PILLBOX_USER="bench")
        server = Server(tmp / "project", env)
        server.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        )
        server.notify("notifications/initialized")
        start = rss_mb(server.process.pid)
        bottle = short_id(server.call("bottle_create", name="memory", display_name="Memory"))
        rx = short_id(
            server.call(
                "prescription_open", bottle_id=bottle, title="Load", author_name="B", author_email="b@example.com"
            )
        )
        pills: list[str] = []
        marks = {}
        for i in range(a.calls):
            step = i % 6
            if step == 0 or not pills:
                pills.append(
                    short_id(
                        server.call(
                            "pill_store",
                            prescription_id=rx,
                            title=f"Decision {i} on caching",
                            content=f"We cache entry {i} for {i % 97} seconds; see ticket {i}.",
                            compound="decision",
                            author_name="B",
                            author_email="b@example.com",
                        )
                    )
                )
            elif step == 1:
                server.call("pill_search", query=f"caching ticket {i}")
            elif step == 2:
                server.call("pill_search", query="cachng decisoin")
            elif step == 3:
                server.call("pill_read", id=pills[i % len(pills)])
            elif step == 4:
                server.call("prescription_context", prescription_id=rx, limit=30)
            else:
                server.call("capsule_store", title=f"Convention {i}", content="Use ruff.", compound="convention")
            if i + 1 in (a.calls // 2, a.calls):
                marks[i + 1] = rss_mb(server.process.pid)
        assert server.process.stdin is not None
        server.process.stdin.close()
        server.process.wait(timeout=20)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    half, full = marks[a.calls // 2], marks[a.calls]
    print("| after | RSS MB |\n|---|---|")
    print(f"| initialize | {start:.1f} |\n| {a.calls // 2} calls | {half:.1f} |\n| {a.calls} calls | {full:.1f} |")
    print(
        f"\ngrowth from call {a.calls // 2} to {a.calls}: {full - half:+.1f} MB; goals: <= 150 MB: "
        f"{'ok' if full <= 150 else 'MISSED'}, no growth (< 2 MB): {'ok' if full - half < 2 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

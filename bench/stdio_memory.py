#!/usr/bin/env python3
"""Resident memory of a stdio Pillbox server: an agent's session with meaning on and off, and P5's long run.

    .venv/bin/python bench/stdio_memory.py [--calls 2000] [--quick]

Spawns `manage.py mcp pillbox` in a scratch project, speaks newline-delimited JSON-RPC to it directly, and
reads VmRSS from /proc.

(a) A session (issue 22): a fresh server, 60 pill_store calls, then 40 pill_search calls (look-ups, questions,
    paraphrases, typos), three times: meaning on with the model in the one process every server of the user
    shares (the default), meaning on with the model in the server (`EMBEDDINGS_SHARED=off`), and words only
    (`EMBEDDINGS=off`). Reported: the server's RSS after the handshake and at the end (goals <= 150 MB on, <= 110 MB
    off), the shared model process's RSS, what five such servers would hold (five servers and one model
    process; the estimate assumes what one session measured), the slowest and the
    median store (goal: slowest <= 300 ms: a store never waits for the model, which loads in the background
    from the handshake on), the search p50, and the first call of another fresh server on the same data being
    a search by meaning (goal <= 1 s, model included). The int8 model file is made once beforehand, untimed
    (as on any machine after its first server). The fresh server's first call is bottle_list (it waits for Django's
    setup, during which the model starts loading), its second the first search.
(b) P5 (skipped by --quick), with meaning on: after the initialize, after half of --calls calls and after all of
    them (goal <= 150 MB, no growth). The calls cycle through pill_store, pill_search (strict and misspelled),
    pill_read, prescription_context and capsule_store.

--quick is the CI guard: part (a) only; exits 1 when the server's RSS is over 130 MB with meaning on (the model in
its shared process) or words only, the shared model process over 130 MB, or a server with the model inside over
200 MB (the goals with headroom: resident memory does not move with the machine's load the way time does).
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOAL_ON_MB, GOAL_OFF_MB = 150.0, 110.0
QUICK_ON_MB, QUICK_OFF_MB, QUICK_MODEL_MB, QUICK_IN_PROCESS_MB = 130.0, 130.0, 130.0, 200.0
TOPICS = [
    ("Nightly database dumps", "pg_dump runs at 2am and the archive is copied to object storage for 30 days."),
    ("Authentication middleware order", "SessionMiddleware must come before AuthenticationMiddleware, or "
     "request.user is anonymous in every view."),
    ("Running the tests", "Use pytest -x from the repository root; the browser tests need chromium installed."),
    ("Release checklist", "Bump the version, tag the commit, build the wheel and publish it to the index."),
    ("Cache invalidation", "Entries are keyed by the user and the query; a write bumps the user's version."),
    ("Rate limits", "Each API key gets 60 requests a minute; a burst of 10 is allowed before 429 answers."),
]
SEARCHES = ["database dumps", "where are backups of postgres kept", "middlware order", "how do I run the tests",
            "publish a new version", "cache keyed by user", "too many requests answer", "release checklist"]


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


def base_env(home: Path, user: str = "bench", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PILLBOX_ROOT", "DJANGO_SETTINGS_MODULE")}
    env.update(PILLBOX_HOME=str(home), PILLBOX_USER=user, **extra)
    return env


def started(cwd: Path, env: dict[str, str]) -> Server:
    server = Server(cwd, env)
    server.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
    )
    server.notify("notifications/initialized")
    server.request("tools/list")
    return server


def stop(server: Server) -> None:
    assert server.process.stdin is not None
    server.process.stdin.close()
    server.process.wait(timeout=30)


def timed_call(server: Server, tool: str, **arguments: object) -> tuple[float, str]:
    t0 = time.perf_counter()
    text = server.call(tool, **arguments)
    return (time.perf_counter() - t0) * 1000, text


def make_model_file(cache: Path) -> None:
    """The int8 model file, made once before the timed servers start (what a machine's first server does)."""
    code = ("import django; django.setup(); from pillbox.embeddings import loader; "
            "import sys; sys.exit(0 if loader.embedder() is not None else loader.failure())")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                   env={**base_env(cache.parent / "prepare"), "EMBEDDINGS": "on", "EMBEDDINGS_SHARED": "off",
                        "EMBEDDINGS_CACHE": str(cache), "DJANGO_SETTINGS_MODULE": "config.settings"})


MODES = {"shared": ("on", "on"), "in-process": ("on", "off"), "off": ("off", "off")}


def model_process_rss(run_dir: Path) -> float:
    """The RSS of the shared model process serving a socket in ``run_dir`` (0 when there is none)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"pillbox.embeddings.shared" in argv and any(arg.startswith(os.fsencode(run_dir)) for arg in argv):
            return rss_mb(int(entry.name))
    return 0.0


def session(tmp: Path, cache: Path, *, mode: str) -> dict[str, float]:
    """A fresh server: 60 stores, 40 searches; then the first call of another fresh server is a search.

    ``shared``: meaning on, the model in the one process all servers share (its RSS reported apart; it leaves
    with its last server here, so the second server starts it again); ``in-process``: meaning on, the model in the
    server (``EMBEDDINGS_SHARED=off``); ``off``: words only."""
    meaning, shared = MODES[mode]
    project = tmp / f"project-{mode}"
    project.mkdir()
    run_dir = tmp / f"run-{mode}"
    env = base_env(tmp / f"home-{mode}", EMBEDDINGS=meaning, EMBEDDINGS_CACHE=str(cache), EMBEDDINGS_SHARED=shared,
                   EMBEDDINGS_SOCKET_DIR=str(run_dir), EMBEDDINGS_SHARED_IDLE="0")
    server = started(project, env)
    start = rss_mb(server.process.pid)
    bottle = short_id(server.call("bottle_create", name=f"memory-{mode}", display_name="Memory"))
    rx = short_id(server.call("prescription_open", bottle_id=bottle, title="Session", author_name="B",
                              author_email="b@example.com"))
    stores = []
    for i in range(60):
        title, content = TOPICS[i % len(TOPICS)]
        ms, _ = timed_call(server, "pill_store", prescription_id=rx, title=f"{title} ({i})",
                           content=f"{content} Noted in step {i} of the session; see ticket {1000 + i}.",
                           compound="decision", author_name="B", author_email="b@example.com")
        stores.append(ms)
    searches = [timed_call(server, "pill_search", query=SEARCHES[i % len(SEARCHES)])[0] for i in range(40)]
    end = rss_mb(server.process.pid)
    model = model_process_rss(run_dir)
    stop(server)
    server = started(project, env)
    setup, _ = timed_call(server, "bottle_list")  # the first call waits for Django's setup, not for the model
    first, text = timed_call(server, "pill_search", query="where are backups of postgres kept")
    stop(server)
    return {"start": start, "end": end, "model": model, "store_max": max(stores),
            "store_p50": statistics.median(stores),
            "search_p50": statistics.median(searches), "setup": setup, "first": first,
            "first_semantic": float("used_semantic: true" in text)}


def run_sessions(tmp: Path) -> dict[str, dict[str, float]]:
    cache = tmp / "models"
    make_model_file(cache)
    rows = {mode: session(tmp, cache, mode=mode) for mode in MODES}
    print("| session (60 stores, 40 searches) | RSS after handshake | RSS at the end | shared model process | "
          "five servers (estimate) | slowest store | store p50 | search p50 | a fresh server: first call (setup), "
          "then first search |\n|---|---|---|---|---|---|---|---|---|")
    labels = {"shared": "meaning on (one model process)", "in-process": "meaning on (model in the server)",
              "off": "words only"}
    for mode, row in rows.items():
        note = " (by meaning)" if row["first_semantic"] else " (by words)"
        model = f"{row['model']:.1f} MB" if row["model"] else "-"
        print(f"| {labels[mode]} | {row['start']:.1f} MB | {row['end']:.1f} MB | {model} | "
              f"{5 * row['end'] + row['model']:.0f} MB | {row['store_max']:.0f} ms | {row['store_p50']:.1f} ms | "
              f"{row['search_p50']:.1f} ms | {row['setup']:.0f} ms, then {row['first']:.0f} ms{note} |")
    on, off = rows["shared"], rows["off"]
    print(f"\ngoals: server RSS on <= {GOAL_ON_MB:.0f} MB: {'ok' if on['end'] <= GOAL_ON_MB else 'MISSED'}, off <= "
          f"{GOAL_OFF_MB:.0f} MB: {'ok' if off['end'] <= GOAL_OFF_MB else 'MISSED'}, slowest store <= 300 ms: "
          f"{'ok' if on['store_max'] <= 300 else 'MISSED'}, first search by meaning <= 1 s: "
          f"{'ok' if on['first'] <= 1000 and on['first_semantic'] else 'MISSED'}\n", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="the session part only; exit 1 over the guard")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="stdio_memory_")).resolve()
    try:
        rows = run_sessions(tmp)
        if a.quick:
            guards = (("meaning on, one model process", rows["shared"]["end"], QUICK_ON_MB),
                      ("its model process", rows["shared"]["model"], QUICK_MODEL_MB),
                      ("meaning on, model in the server", rows["in-process"]["end"], QUICK_IN_PROCESS_MB),
                      ("words only", rows["off"]["end"], QUICK_OFF_MB))
            failures = [f"{label} {value:.1f} MB > {line:.0f} MB" for label, value, line in guards if value > line]
            if failures:
                print("QUICK CHECK FAILED: session RSS " + "; ".join(failures), file=sys.stderr)
                return 1
            print("quick check passed")
            return 0
        (tmp / "project").mkdir()
        server = started(tmp / "project", base_env(tmp / "home", EMBEDDINGS_CACHE=str(tmp / "models"),
                                                   EMBEDDINGS_SOCKET_DIR=str(tmp / "run"), EMBEDDINGS_SHARED_IDLE="0"))
        start = rss_mb(server.process.pid)
        bottle = short_id(server.call("bottle_create", name="memory", display_name="Memory"))
        rx = short_id(
            server.call(
                "prescription_open", bottle_id=bottle, title="Load", author_name="B", author_email="b@example.com"
            )
        )
        pills: list[str] = []
        marks, models = {}, {}
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
                models[i + 1] = model_process_rss(tmp / "run")
        stop(server)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    half, full = marks[a.calls // 2], marks[a.calls]
    print("| after | server RSS MB | shared model process RSS MB |\n|---|---|---|")
    print(f"| initialize | {start:.1f} | - |\n| {a.calls // 2} calls | {half:.1f} | {models[a.calls // 2]:.1f} |\n"
          f"| {a.calls} calls | {full:.1f} | {models[a.calls]:.1f} |")
    print(
        f"\ngrowth from call {a.calls // 2} to {a.calls}: {full - half:+.1f} MB; goals: <= 150 MB: "
        f"{'ok' if full <= 150 else 'MISSED'}, no growth (< 2 MB): {'ok' if full - half < 2 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

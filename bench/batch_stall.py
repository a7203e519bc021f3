#!/usr/bin/env python3
"""How long one user's trivial call waits while another user floods the Pillbox endpoint with batches.

    .venv/bin/python bench/batch_stall.py [--seconds 15] [--pills 3000] [--threads 2] [--user-concurrency N]

The attack from the security review: `gunicorn -w1 --threads 2`, an attacker sending JSON-RPC batches of fuzzy
`pill_search` calls from two connections, a victim calling `bottle_list`. The anchor is the victim's latency on
the same server in the same run with nobody else on it; the script prints the victim's median and p95 under
each attack as a ratio against it, and how each attack request was answered (the 200-message batch is refused;
batches at the cap run within the request budget, and the attacker's per-user rate and in-flight limits apply).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, server_env  # noqa: E402

PYTHON = sys.executable
BIN = Path(PYTHON).parent
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-03-26"}

POPULATE = """
import sys
import django
django.setup()
from accounts.services import user_get_or_create
from mcp_bridge.tools import Caller
from pillbox import services
from pillbox.access import reach_for

user = user_get_or_create(username="attacker")
reach = reach_for(Caller(user=user, transport="http"))
bottle = services.bottle_create(reach=reach, name="flood", display_name="Flood", scope="global")
reach = reach_for(Caller(user=user, transport="http"))
rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="x", author_name="A", author_email="a@a")
words = "authentication authorization caching database migration deployment monitoring configuration".split()
for n in range(int(sys.argv[1])):
    text = " ".join(words[(n + k) % len(words)] + str(n % 97) for k in range(12))
    services.pill_store(reach=reach, prescription_id=rx.id.hex, title=f"note {n} " + words[n % len(words)],
                        content=text, compound="fact", author_name="A", author_email="a@a")
"""


def search_batch(size: int) -> list[dict[str, Any]]:
    query = "authentcation databse migraton deploymnt monitorng"  # typos: the fuzzy pass runs
    return [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
             "params": {"name": "pill_search", "arguments": {"query": query, "fuzzy": True, "limit": 100}}}
            for n in range(size)]


def victim_latencies(url: str, key: str, seconds: float) -> list[float]:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "bottle_list", "arguments": {}}}
    found: list[float] = []
    deadline = time.monotonic() + seconds
    with httpx2.Client(headers={**HEADERS, "Authorization": f"Bearer {key}"}, timeout=120) as http:
        while time.monotonic() < deadline:
            start = time.perf_counter()
            response = http.post(url, json=call)
            found.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, response.text
            time.sleep(0.05)
    return found


def attack(url: str, key: str, size: int, stop: threading.Event, statuses: Counter[int]) -> None:
    with httpx2.Client(headers={**HEADERS, "Authorization": f"Bearer {key}"}, timeout=120) as http:
        while not stop.is_set():
            response = http.post(url, json=search_batch(size))
            statuses[response.status_code] += 1
            if response.status_code == 429:
                stop.wait(min(float(response.headers.get("Retry-After", "1")), 1.0))


def measure(
    url: str, victim: str, attacker: str, size: int | None, seconds: float, threads: int
) -> tuple[list[float], Counter[int]]:
    stop, statuses = threading.Event(), Counter[int]()
    workers = [threading.Thread(target=attack, args=(url, attacker, size, stop, statuses)) for _ in range(threads)
               ] if size else []
    for worker in workers:
        worker.start()
    time.sleep(0.5 if workers else 0)
    try:
        found = victim_latencies(url, victim, seconds)
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    return found, statuses


def summary(found: list[float]) -> tuple[float, float]:
    ordered = sorted(found)
    return statistics.median(ordered), ordered[max(int(len(ordered) * 0.95) - 1, 0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--pills", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--user-concurrency", default="", help="MCP_USER_CONCURRENCY for the server (default: "
                        "the site's default)")
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = server_env(tmp / "home")
        if a.user_concurrency:
            env["MCP_USER_CONCURRENCY"] = a.user_concurrency
        subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
        subprocess.run([PYTHON, "-c", POPULATE, str(a.pills)], cwd=REPO, env=env, check=True)
        keys = {}
        for name in ("attacker", "victim"):
            made = subprocess.run([PYTHON, "manage.py", "createkey", name, "--create"], cwd=REPO, env=env, check=True,
                                  capture_output=True, text=True).stdout
            keys[name] = made.split("key: ")[1].strip()
        port = 18000 + secrets.randbelow(2000)
        server = subprocess.Popen([str(BIN / "gunicorn"), "config.wsgi", "-w", "1", "--threads", "2", "-b",
                                   f"127.0.0.1:{port}", "--timeout", "300"], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/pillbox/mcp"
        try:
            for _ in range(300):
                try:
                    if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                        break
                except httpx2.HTTPError:
                    time.sleep(0.1)
            one = time.perf_counter()
            attacker = {**HEADERS, "Authorization": f"Bearer {keys['attacker']}"}
            httpx2.post(url, json=search_batch(1)[0], headers=attacker, timeout=120)
            print(f"one fuzzy pill_search over {a.pills} pills: {(time.perf_counter() - one) * 1000:.0f} ms")
            anchor, _ = measure(url, keys["victim"], keys["attacker"], None, a.seconds, a.threads)
            base_median, base_p95 = summary(anchor)
            print(f"anchor (no attack): victim bottle_list median {base_median:.1f} ms, p95 {base_p95:.1f} ms")
            for size in (200, 20):
                found, statuses = measure(url, keys["victim"], keys["attacker"], size, a.seconds, a.threads)
                median, p95 = summary(found)
                print(f"attack: {a.threads} connections of {size}-message batches: victim median {median:.1f} ms "
                      f"({median / base_median:.1f}x anchor), p95 {p95:.1f} ms ({p95 / base_p95:.1f}x anchor); "
                      f"attack answered {dict(sorted(statuses.items()))}")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()

"""Several app servers on one PostgreSQL (and one Redis): a scratch database of their own, gunicorn processes with
separate data directories, as separate machines would be, and the JSON-RPC calls the tests make to them."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import pytest

from tests.clients import ROOT
from tests.oauth.flow import PASSWORD
from tests.reliability.helpers import free_port, reply_of, server_env

# A Redis database of the tests' own, flushed before and after: other users of the same Redis keep theirs.
REDIS_URL = os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/3"
STARTUP_SECONDS = 60


def postgres_url_or_skip() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if urlsplit(url).scheme not in {"postgres", "postgresql", "pgsql"}:
        pytest.skip("several app servers need one PostgreSQL: runs in the PostgreSQL pass (DATABASE_URL=postgres://…)")
    import psycopg

    try:
        psycopg.connect(_with_database(url, "postgres"), connect_timeout=3, autocommit=True).close()
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL is not reachable at DATABASE_URL")
    return url


def redis_or_skip() -> Any:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip(f"Redis is not reachable at {REDIS_URL} (set TEST_REDIS_URL)")
    return client


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


@dataclass
class SharedDatabase:
    url: str
    accounts: dict[str, dict[str, Any]]  # username -> {"uid", "key", "key_id"}


USERS_SCRIPT = """
import json
from django.core.management import call_command
from accounts.services import account_for, apikey_create, user_get_or_create
call_command("migrate", verbosity=0)
made = {}
for name in NAMES:
    user = user_get_or_create(username=name)
    user.set_password(PASSWORD)
    user.save()
    key, raw = apikey_create(user=user, name="tests")
    made[name] = {"uid": account_for(user).uid, "key": raw, "key_id": key.pk}
print(json.dumps(made))
"""


@contextmanager
def shared_database(base_url: str, home: Path, usernames: list[str]) -> Iterator[SharedDatabase]:
    """A fresh PostgreSQL database beside the test run's own, migrated once (as a deployment does before starting
    its servers), with users who have a password and one API key each; dropped afterwards."""
    import psycopg

    name = f"pillbox_servers_{os.getpid()}_{secrets.token_hex(3)}"
    admin = _with_database(base_url, "postgres")
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    url = _with_database(base_url, name)
    try:
        env = server_env(home, DATABASE_URL=url)
        script = USERS_SCRIPT.replace("NAMES", json.dumps(usernames)).replace("PASSWORD", json.dumps(PASSWORD))
        done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "shell", "-c", script], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
        yield SharedDatabase(url=url, accounts=json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def app_servers(
    tmp_path: Path, database: SharedDatabase, *, count: int = 2, workers: int = 2, **env: str
) -> Iterator[list[str]]:
    """``count`` gunicorn servers (``workers`` processes x 4 threads each) on different loopback ports, each with its
    own data directory; all share the database, the secret key and the public address (``SITE_URL``, the first
    server's, standing for the proxy in front of them). Yields their base URLs once every ``/readyz`` is 200."""
    ports = [free_port() for _ in range(count)]
    common = {
        "DATABASE_URL": database.url,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SITE_URL": f"http://127.0.0.1:{ports[0]}",
        "DATABASE_POOL_MIN_SIZE": "1",
        "DATABASE_POOL_MAX_SIZE": "4",
        # One user writes from many threads on purpose here; the per-user rate and in-flight limits have their own
        # proof (tests/reliability/test_limits.py).
        "MCP_USER_CONCURRENCY": "0",
        "MCP_USER_RATE_LIMIT": "0",
        **env,
    }
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    servers: list[tuple[subprocess.Popen, Path]] = []
    try:
        for n, port in enumerate(ports):
            home, log = tmp_path / f"server{n}", tmp_path / f"server{n}.log"
            home.mkdir(parents=True, exist_ok=True)
            command = [gunicorn, "config.wsgi", "-w", str(workers), "--threads", "4", "-b", f"127.0.0.1:{port}"]
            with log.open("w") as errors:
                process = subprocess.Popen(command, cwd=ROOT, env=server_env(home, **common), stdout=errors,
                                           stderr=errors)
            servers.append((process, log))
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        deadline = time.monotonic() + STARTUP_SECONDS
        for url, (process, log) in zip(urls, servers, strict=True):
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    if httpx2.get(url + "/readyz", timeout=2).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                assert time.monotonic() < deadline, f"{url} did not become ready:\n{log.read_text()}"
                time.sleep(0.05)
        yield urls
        for _, log in servers:
            assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        for process, _ in servers:
            # SIGINT is gunicorn's quick shutdown: SIGTERM would wait out the graceful timeout for idle keep-alives.
            process.send_signal(signal.SIGINT)
        for process, _ in servers:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


MCP_ACCEPT = "application/json, text/event-stream"


def rpc_status(url: str, path: str, *, bearer: str, method: str = "tools/list", **headers: str) -> int:
    response = httpx2.post(
        url + path,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {}},
        headers={"Authorization": f"Bearer {bearer}", "Accept": MCP_ACCEPT, **headers},
        timeout=30,
    )
    return response.status_code


def tool_call(
    http: httpx2.Client, url: str, path: str, key: str, tool: str, arguments: dict[str, Any]
) -> tuple[bool, str]:
    """One tools/call: whether the tool failed, and its text."""
    response = http.post(
        url + path,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        headers={"Authorization": f"Bearer {key}", "Accept": MCP_ACCEPT},
    )
    assert response.status_code == 200, response.text
    reply = reply_of(response.json())
    return reply.is_error, reply.text


def call(http: httpx2.Client, url: str, path: str, key: str, tool: str, arguments: dict[str, Any]) -> str:
    """One tools/call; the reply's text, asserting it is not an error."""
    failed, text = tool_call(http, url, path, key, tool, arguments)
    assert not failed, text
    return text


SHORT_ID = re.compile(r"^id: ([0-9a-f]{12})$", re.M)


def short_id(text: str) -> str:
    match = SHORT_ID.search(text)
    assert match, text
    return match.group(1)

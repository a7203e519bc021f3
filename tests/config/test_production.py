"""The documented production setup: deploy checks, the health endpoint, and the README's server (and gunicorn)
serving MCP."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tests.clients import ROOT, http_client, run

PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "ALLOWED_HOSTS": "pillbox.example.com,127.0.0.1",
    "SITE_URL": "https://pillbox.example.com",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "TRUST_PROXY_HEADERS": "true",
}


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "PILLBOX_ROOT"}}
    return {**env, "PILLBOX_HOME": str(home), "DJANGO_SECRET_KEY": secrets.token_urlsafe(64), **extra}


def test_check_deploy_is_clean_with_the_documented_production_variables(tmp_path):
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                          env=_env(tmp_path, **PRODUCTION), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_healthz_answers_without_credentials(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(url: str, process: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else "server exited"
        try:
            if httpx2.get(url, timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            time.sleep(0.1)
    pytest.fail("the production server did not come up")


def test_gunicorn_serves_the_mcp_endpoints(tmp_path):
    env = _env(tmp_path, DJANGO_DEBUG="false", ALLOWED_HOSTS="127.0.0.1", SITE_URL="http://127.0.0.1")
    made = subprocess.run([sys.executable, "manage.py", "createkey", "prod", "--create"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout
    key = made.split("key: ")[1].strip()
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi", "-w", "2", "--threads", "4",
         "-b", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/healthz", server, time.monotonic() + 30)

        async def scenario():
            async with http_client(f"http://127.0.0.1:{port}/pillbox/mcp", key=key) as client:
                made = await client.call_tool("bottle_create", {"name": "prod", "display_name": "Prod",
                                                                "scope": "global"})
                listed = await client.call_tool("bottle_list", {})
                return made, listed

        made_result, listed = run(scenario())
        assert not made_result.is_error
        assert "● Prod [global]" in listed.content[0].text
        static = httpx2.get(f"http://127.0.0.1:{port}/static/admin/css/base.css", timeout=5)
        assert static.status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=10)


def _readme_server_command() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^## Production\n+```sh\n(.*?)\n```", readme, re.S | re.M)
    assert block, "README has no Production command block"
    (words,) = [words for line in block.group(1).replace("\\\n", " ").splitlines()
                if (words := shlex.split(line, comments=True)) and words[0] == "granian"]
    return words


def start_readme_server(env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    """The README's production server on a free loopback port, once it answers."""
    port = _free_port()
    words = _readme_server_command()
    values = {"--host": "127.0.0.1", "--port": str(port)}
    command = [str(Path(sys.executable).parent / words[0]),
               *(values.get(words[n - 1], word) for n, word in enumerate(words) if n)]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/healthz", server, time.monotonic() + 30)
    except BaseException:
        server.terminate()
        raise
    return server, port


def test_the_readmes_production_server_serves_the_mcp_endpoints(tmp_path):
    env = _env(tmp_path, DJANGO_DEBUG="false", ALLOWED_HOSTS="127.0.0.1", SITE_URL="http://127.0.0.1")
    made = subprocess.run([sys.executable, "manage.py", "createkey", "prod", "--create"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout
    key = made.split("key: ")[1].strip()
    server, port = start_readme_server(env)
    try:
        async def scenario():
            async with http_client(f"http://127.0.0.1:{port}/pillbox/mcp", key=key) as client:
                made = await client.call_tool("bottle_create", {"name": "prod", "display_name": "Prod",
                                                                "scope": "global"})
                listed = await client.call_tool("bottle_list", {})
            async with http_client(f"http://127.0.0.1:{port}/mcp", key=key) as client:
                usage = await client.call_tool("get_list_usage", {})
            return made, listed, usage

        made_result, listed, usage = run(scenario())
        assert not made_result.is_error
        assert "● Prod [global]" in listed.content[0].text
        assert usage.structured_content == {"count": 0, "maxTasks": 1200, "percentage": 0}
        static = httpx2.get(f"http://127.0.0.1:{port}/static/admin/css/base.css", timeout=5)
        assert static.status_code == 200 and b"body" in static.content
        # The body arrives whole through the server's input stream, and the cap still holds.
        padded = {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": {"pad": "x" * 900_000}}}
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
        pong = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=padded, headers=headers, timeout=10)
        assert pong.status_code == 200 and pong.json()["id"] == 7
        padded["params"]["_meta"]["pad"] = "x" * 1_100_000
        too_big = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=padded, headers=headers, timeout=10)
        assert too_big.status_code == 413
    finally:
        server.terminate()
        server.wait(timeout=10)

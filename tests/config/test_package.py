"""The project installs like an MCP server: its sdist, and the wheel built from that sdist, installed into a fresh
virtualenv outside the repository give a `pillbox-todos` command that, from another directory, lists its
subcommands, serves the site (pages and CSS) and both stdio servers, and connects an agent with a command that
exists.

One build and one install for the module (about a minute: the dependencies come from the machine's package
index); every test then runs the installed command only, never this checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import httpx2
import pytest
from mcp import StdioServerParameters
from mcp.client import Client

from tests.clients import ROOT, json_of, run, text_of

SUBCOMMANDS = ("up", "mcp", "connect", "recall", "adduser", "createkey", "revokekeys", "backup", "restore", "export",
               "import", "import_original", "launcher", "migrate", "changepassword")


def _tracked(root: Path) -> list[str]:
    """The files a clone has: tracked, and new ones not ignored (so a file not yet committed is tried too)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return [name for name in listed if name and (root / name).is_file()]


def _site_files() -> set[str]:
    return {name for name in _tracked(ROOT) if name.startswith(("templates/", "static/"))}


class Installed:
    def __init__(self, work: Path, venv: Path, sdist: Path, wheel: Path) -> None:
        self.work, self.venv, self.sdist, self.wheel = work, venv, sdist, wheel
        self.command = venv / "bin" / "pillbox-todos"
        self.home = work / "home"
        self.project = work / "project"

    def env(self, **extra: str) -> dict[str, str]:
        """A person's shell with only the installed copy on PATH; no variable of this test run leaks in."""
        return {"HOME": str(self.home), "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin", "LANG": "C.UTF-8",
                "PILLBOX_HOME": str(self.home / ".pillbox"), "PILLBOX_USER": "alice", "EMBEDDINGS": "off",
                "EMBEDDINGS_SHARED_IDLE": "0", "PYTHONUNBUFFERED": "1", **extra}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.command), *args], cwd=self.project, env=self.env(), capture_output=True,
                              text=True, timeout=120)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("package")
    source, dist = work / "source", work / "dist"
    for name in _tracked(ROOT):  # a copy: the build writes nothing into the checkout
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    dist.mkdir()
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
    environment = {key: value for key, value in os.environ.items() if key not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    # The sdist by the build backend pyproject.toml names (what `python -m build --sdist` runs).
    subprocess.run([*pip, "install", "setuptools>=68"], cwd=work, env=environment, check=True)
    subprocess.run([python, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})"],
                   cwd=source, env=environment, check=True, capture_output=True)
    (sdist,) = dist.glob("*.tar.gz")
    # The wheel is built from the sdist, so both are shown complete by what the installed copy then does.
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dist), str(sdist)], cwd=work, env=environment, check=True)
    (wheel,) = dist.glob("*.whl")
    subprocess.run([*pip, "install", str(wheel)], cwd=work, env=environment, check=True)
    found = Installed(work, venv, sdist, wheel)
    found.home.mkdir()
    found.project.mkdir()
    return found


def test_the_sdist_and_the_wheel_carry_every_template_static_file_and_the_tool_definitions(installed):
    with tarfile.open(installed.sdist) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    with zipfile.ZipFile(installed.wheel) as wheel:
        in_wheel = set(wheel.namelist())
    site = _site_files()
    assert site and site <= in_sdist
    assert {f"config/{name}" for name in site} <= in_wheel, "a new folder of templates/ or static/: list it in " \
        "pyproject.toml's [tool.setuptools] packages"
    assert "mcp_bridge/definitions.json" in in_wheel and "pillbox/migrations/0001_initial.py" in in_wheel
    assert "config/cli.py" in in_wheel and "manage.py" not in in_wheel


def test_help_lists_the_subcommands(installed):
    done = installed.run("--help")
    assert done.returncode == 0, done.stderr
    assert "Type 'pillbox-todos help <subcommand>'" in done.stdout
    listed = {line.strip() for line in done.stdout.splitlines()}
    assert set(SUBCOMMANDS) <= listed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_up_serves_the_pages_and_the_stylesheet(installed):
    port = _free_port()
    server = subprocess.Popen([str(installed.command), "up", str(port)], cwd=installed.project, env=installed.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed = []
        assert server.stdout is not None
        for line in server.stdout:  # the banner, then runserver's own lines once it listens
            printed.append(line)
            if "Quit the server with" in line:
                break
        site = f"http://127.0.0.1:{port}"
        assert f"Pillbox & Todos on {site}" in printed[0], "".join(printed)
        deadline = time.monotonic() + 30
        while True:  # runserver says it listens just before it binds
            try:
                login = httpx2.get(f"{site}/accounts/login/", timeout=5)
                break
            except httpx2.ConnectError:
                assert time.monotonic() < deadline and server.poll() is None, "".join(printed)
                time.sleep(0.05)
        assert login.status_code == 200 and 'name="password"' in login.text
        assert httpx2.get(f"{site}/static/webui/site.css", timeout=5).status_code == 200
        assert httpx2.get(f"{site}/static/admin/css/base.css", timeout=5).status_code == 200
        assert httpx2.get(f"{site}/", timeout=5).status_code == 200
        text = "".join(printed)
        assert f"{installed.command} connect claude-code --write --hooks" in text
        assert "server for one machine" in text and "Production" in text
        assert f"open only while this site runs at {site}" in text
    finally:
        server.terminate()
        server.wait(timeout=20)


def _tools(command: str, args: list[str], env: dict[str, str], cwd: Path) -> tuple[list[str], str, str]:
    async def session() -> tuple[list[str], str, str]:
        params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env=env)
        async with Client(params, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            if args[-1] == "pillbox":
                made = await client.call_tool("bottle_create", {"name": "pkg", "display_name": "Pkg",
                                                                "scope": "global"})
                listed = await client.call_tool("bottle_list", {})
                return names, text_of(made), text_of(listed)
            put = await client.call_tool("put_todo", {"id": "ship", "name": "Ship the package", "description": ""})
            listed = await client.call_tool("list_todos", {})
            return names, text_of(put), json.dumps(json_of(listed))

    return run(session())


def test_both_stdio_servers_list_and_call_their_tools(installed):
    names, made, listed = _tools(str(installed.command), ["mcp", "pillbox"], installed.env(), installed.project)
    assert {"pill_store", "pill_search", "bottle_create"} <= set(names)
    assert "error" not in made and "Pkg [global]" in listed
    names, put, listed = _tools(str(installed.command), ["mcp", "todos"], installed.env(), installed.project)
    assert {"put_todo", "list_todos", "get_list_url"} <= set(names)
    assert '"ship"' in put and "Ship the package" in listed


def test_connect_prints_a_command_that_exists_and_starts_both_servers(installed):
    done = installed.run("connect", "claude-code")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout.split("\n", 1)[1].split("# or run:")[0])
    entries = document["projects"][str(installed.project)]["mcpServers"]
    for server in ("pillbox", "todos"):
        assert entries[server]["command"] == str(installed.command) and Path(entries[server]["command"]).is_file()
        assert entries[server]["args"] == ["mcp", server]
        assert f"pillbox -- {installed.command} mcp pillbox" in done.stdout
    env = {**installed.env(), **entries["todos"].get("env", {})}
    names, _, _ = _tools(entries["todos"]["command"], entries["todos"]["args"], env, installed.project)
    assert "next_todos" in names
    shared = installed.run("connect", "claude-code", "--scope", "project")
    assert '"command": "pillbox-todos"' in shared.stdout
    assert "pillbox-todos on your PATH is this copy's own command" in shared.stdout
    assert f"pipx install {installed.wheel}" in shared.stdout

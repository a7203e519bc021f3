"""A stdio client that declares MCP roots puts Pillbox in its first file:// root."""

from __future__ import annotations

import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import stdio_client

from tests.clients import run, stdio_params, text_of


def test_the_first_file_root_is_the_working_directory(tmp_path):
    home, launched_in, project = tmp_path / "home", tmp_path / "elsewhere", tmp_path / "project"
    for folder in (home, launched_in, project):
        folder.mkdir()

    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=(tmp_path / "gone").as_uri()),
                                            types.Root(uri=project.as_uri())])

    async def scenario() -> str:
        params = stdio_params("pillbox", home=home, cwd=launched_in)
        async with Client(params, mode="legacy", list_roots_callback=roots) as client:
            return text_of(await client.call_tool("bottle_create", {"name": "rooted", "display_name": "Rooted"}))

    text = run(scenario())
    assert f"directory: {project}" in text
    assert (project / ".pillbox" / "pillbox.db").is_file()
    assert not (launched_in / ".pillbox").exists()


def test_the_roots_deprecation_warning_never_reaches_the_clients_stderr(tmp_path):
    """The SDK deprecates roots for its newest protocol; a client's log must not fill with that warning."""
    home, project = tmp_path / "home", tmp_path / "project"
    for folder in (home, project):
        folder.mkdir()
    errlog_path = tmp_path / "stderr.txt"

    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri())])

    async def scenario() -> str:
        params = stdio_params("pillbox", home=home, cwd=tmp_path, PYTHONWARNINGS="default")
        with errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", list_roots_callback=roots) as client:
                return text_of(await client.call_tool("bottle_list", {}))

    assert run(scenario()) == "No bottles registered."
    stderr = errlog_path.read_text()
    assert "deprecated" not in stderr.lower() and "Warning" not in stderr, stderr

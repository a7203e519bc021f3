"""docs/ belongs to the repository: the generated reference is current, regeneration is one command, and nothing
in the project points at files outside it."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from config import docs
from pillbox.tools import TOOLSET as PILLBOX
from tests.clients import ROOT
from todos.tools import TOOLSET as TODOS

TEXT_SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".json", ".js", ".css", ""}


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return docs.render_all()  # one scripted session in a scratch process (a few seconds)


def test_the_generated_reference_is_current(rendered):
    assert docs.stale(rendered) == [], "docs/ is stale: run `manage.py docs --write` and commit the result"


def test_every_tool_is_documented_with_a_real_example(rendered):
    text = rendered["tools.md"]
    for tool in (*PILLBOX.tools, *TODOS.tools):
        section = text.split(f"\n### {tool.name}\n", 1)[1].split("\n### ", 1)[0]
        assert tool.description in section and "Errors: " in section, tool.name
        assert "Example:" in section, f"{tool.name} has no example: add a step to SESSION in config/docs.py"
        for name in tool.input_schema.get("properties", {}):
            assert f"| `{name}` |" in section, (tool.name, name)
    # Real answers, made stable: no scratch paths, no live ids or times.
    assert "/tmp/" not in text and "pillbox-docs-" not in text
    assert "error:" not in text.split("## todos")[0].split("Example:")[1].split("Errors:")[0]
    assert "`/api/pillbox/search/`" in rendered["rest-api.md"] and "`/api/todos/`" in rendered["rest-api.md"]


def test_check_fails_on_a_stale_page_and_write_fixes_it(rendered, tmp_path, monkeypatch):
    for name, text in rendered.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "tools.md").write_text(rendered["tools.md"].replace("Store a memory entry", "Store a memo"))
    monkeypatch.setattr(docs, "DOCS", tmp_path)
    monkeypatch.setattr(docs, "render_all", lambda: rendered)
    with pytest.raises(CommandError, match=r"docs/tools.md out of date: run `\.venv/bin/python manage\.py docs"):
        call_command("docs", "--check")
    call_command("docs", "--write")
    assert (tmp_path / "tools.md").read_text() == rendered["tools.md"]
    call_command("docs", "--check")


def test_the_inspector_page_pins_the_version_the_tests_run():
    lock = json.loads((ROOT / ".ci" / "mcp-clients" / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/@modelcontextprotocol/inspector"]["version"]
    page = (ROOT / "docs" / "inspector.md").read_text()
    pinned = set(re.findall(r"@modelcontextprotocol/inspector@([\d.]+)", page))
    assert pinned == {version}
    assert re.search(r"npx [^\n]*@modelcontextprotocol/inspector(?!@)\s", page) is None or "unpinned" in page


def test_nothing_refers_to_files_outside_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offenders = []
    for name in files:
        # The benchmarks compare against public datasets kept outside the repository (bench/README.md).
        if name.startswith("bench/") or name == "tests/config/test_docs.py":
            continue
        path = ROOT / name
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if "../shared" in text or re.search(r"SPEC §|SPEC\.md|the SPEC\b", text):
            offenders.append(name)
    assert offenders == []
    for name in ("README.md", "tools.md", "errors.md", "connect.md", "rest-api.md", "inspector.md"):
        assert (ROOT / "docs" / name).is_file(), name

"""Every command the README and docs/ show works when copied: no placeholder path of someone's checkout, no
`python manage.py` run by a Python that is not the checkout's own, and every `pillbox-todos SUB …` or
`manage.py SUB …` names a real subcommand with options its parser takes."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import pytest
from django.core.management import get_commands, load_command_class
from django.core.management.base import CommandError

from tests.clients import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
# A bare `python manage.py` works where that python is the environment the same block installed into
# (`pip install -e .` on a server), or inside the image compose.yaml runs.
BARE_PYTHON = re.compile(r"(?<![\w/.])python3? manage\.py\b")
INVOCATION = re.compile(r"(?:^|[\s/])(?<!runpip )(?:pillbox-todos|manage\.py)\s+([a-z_]+)((?:\s+[^\s&;|#`]+)*)")
PLACEHOLDER = re.compile(r"[\[\]<>…|{}$]")


def _snippets() -> Iterator[tuple[str, str, str]]:
    """(page, kind, text): each shell block of a page, and each inline code span outside blocks."""
    for page in PAGES:
        text = page.read_text()
        name = str(page.relative_to(ROOT))
        for match in FENCE.finditer(text):
            if match.group(1) in ("sh", "bash"):
                yield name, "block", match.group(2).replace("\\\n", " ")
        for span in SPAN.findall(FENCE.sub("", text)):
            yield name, "span", span


def test_no_page_shows_a_placeholder_checkout_path():
    offenders = [str(page.relative_to(ROOT)) for page in PAGES if "/path/to/" in page.read_text()]
    assert offenders == []


def test_no_command_runs_manage_py_with_some_other_python():
    offenders = []
    for page, _, text in _snippets():
        if not BARE_PYTHON.search(text) or "pip install -e ." in text or "pip install ." in text:
            continue
        for line in text.splitlines():
            if BARE_PYTHON.search(line) and "docker compose" not in line and page != "docs/deploy.md":
                offenders.append((page, line.strip()))
    assert offenders == [], "write `pillbox-todos …` or `.venv/bin/python manage.py …`"


def _invocations() -> Iterator[tuple[str, str, str | None]]:
    for page, kind, text in _snippets():
        for line in text.splitlines():
            if "inspector" in line:  # the Inspector takes the options after the server's command
                continue
            line = line.split(" # ")[0].split("   (")[0]
            for match in INVOCATION.finditer(line):
                rest = match.group(2).strip()
                if kind == "span" and not rest:  # a subcommand named in a sentence, not a command to run
                    yield page, match.group(1), None
                else:
                    yield page, match.group(1), None if PLACEHOLDER.search(rest) else rest


def test_every_subcommand_shown_exists_and_takes_the_options_shown():
    known = get_commands()
    checked, offenders = 0, []
    for page, name, rest in _invocations():
        if name not in known:
            offenders.append((page, name, "no such subcommand"))
            continue
        if rest is None:  # placeholders such as [--staff] or <key>: the name alone is checked
            continue
        parser = load_command_class(known[name], name).create_parser("pillbox-todos", name)
        try:
            parser.parse_args(shlex.split(rest))
        except CommandError as exc:
            if not re.search(r"invalid choice: '[A-Z_]+'", str(exc)):  # CLIENT, a word for one of the choices
                offenders.append((page, f"{name} {rest}", str(exc)))
        checked += 1
    assert offenders == []
    assert checked >= 20, checked  # the pages show many; a broken pattern would check none


@pytest.mark.parametrize("command", ["up", "connect", "mcp", "recall", "adduser", "createkey", "backup"])
def test_the_readme_shows_the_subcommand(command):
    readme = (ROOT / "README.md").read_text()
    assert re.search(rf"(pillbox-todos|manage\.py) {command}\b", readme), command


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_and_anchor_resolves():
    """The README links to the pages the design record moved to; a page moved again must not leave it dangling."""
    offenders = []
    for page in PAGES:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                offenders.append((str(page.relative_to(ROOT)), target))
            elif anchor and linked.suffix == ".md":
                headings = {_slug(line.lstrip("#")) for line in linked.read_text().splitlines() if line.startswith("#")}
                if anchor not in headings:
                    offenders.append((str(page.relative_to(ROOT)), target))
    assert offenders == []

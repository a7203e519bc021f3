"""Every import points down: a module imports its own package or the floors below it (docs/layout.md).

The floors, top to bottom. The wiring may import anything; every other module imports only its own package and
the floors below, never a neighbour on its own floor (pillbox and todos know nothing of each other). A module
belongs to the floor of its longest listed prefix: one top-level package, one floor. A new top-level package must
be given a floor here before it can pass.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.clients import ROOT

Floors = Sequence[tuple[str, tuple[str, ...]]]

FLOORS: Floors = (
    (
        "wiring",
        ("config", "manage", "bench"),
    ),
    ("interfaces", ("webui", "ops")),
    ("core", ("pillbox", "todos")),
    ("bridges", ("api", "mcp_bridge")),
    ("accounts", ("accounts",)),
    ("base", ("base",)),
)


def _place(module: str, floors: Floors) -> tuple[int, str] | None:
    """The floor (its index, 0 on top) and the listed prefix a module falls under; None for other code."""
    found = [
        (len(prefix), level, prefix)
        for level, (_, prefixes) in enumerate(floors)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    if not found:
        return None
    _, level, prefix = max(found)
    return level, prefix


def _modules(root: Path) -> Iterator[tuple[str, Path]]:
    """Every source module under ``root``: the top-level packages (and bench/'s scripts), and the scripts beside
    them; not the tests, nor what a build or a tool left in a directory that is no package."""
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        top = relative.parts[0]
        source = len(relative.parts) == 1 or top == "bench" or (root / top / "__init__.py").is_file()
        if top == "tests" or not source or any(part.startswith(".") for part in relative.parts):
            continue
        yield ".".join(relative.with_suffix("").parts).removesuffix(".__init__"), path


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """What a module imports, as dotted names (``from a import b`` names ``a.b``: b may be a module), anywhere."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def upward_imports(root: Path, floors: Floors = FLOORS) -> list[str]:
    """Each import under ``root`` that points up or sideways, and each module on no floor, as one line."""
    problems = []
    for module, path in _modules(root):
        here = _place(module, floors)
        where = path.relative_to(root)
        if here is None:
            problems.append(f"{where}: {module} is on no floor")
            continue
        for target, line in _imports(module, path):
            there = _place(target, floors)
            if there is None or here[0] == 0 or there[1] == here[1] or there[0] > here[0]:
                continue
            problems.append(
                f"{where}:{line}: {module} ({floors[here[0]][0]}) imports {target} ({floors[there[0]][0]})"
            )
    return problems


def test_every_import_points_down():
    assert upward_imports(ROOT) == []


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the project's source, to add an import to."""
    for _, path in _modules(ROOT):
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    return tmp_path


@pytest.mark.parametrize(
    "file, statement, reported",
    [
        # The three kinds that ran upward before the layers were drawn: accounts reaching for the MCP bridge,
        # and the base (below every app) reading the apps' models or the accounts' credentials.
        ("accounts/auth.py", "from mcp_bridge.tools import Caller", "(accounts) imports mcp_bridge.tools.Caller"),
        ("base/bootstrap.py", "from todos.models import Todo", "(base) imports todos.models.Todo (core)"),
        ("base/jsonbody.py", "from accounts.auth import mcp_caller", "(base) imports accounts.auth.mcp_caller"),
        ("api/base.py", "from webui import views", "(bridges) imports webui.views (interfaces)"),
        # Sideways: two apps on one floor, and the two bridges.
        ("pillbox/services.py", "import todos.models", "(core) imports todos.models (core)"),
        ("mcp_bridge/server.py", "from api import base", "(bridges) imports api.base (bridges)"),
        # Hidden in a function, and aliased.
        ("todos/services.py", "def later():\n    from ops.backups import backup", "(core) imports ops.backups.backup"),
        ("base/lru.py", "import mcp_bridge.tools as tools", "(base) imports mcp_bridge.tools (bridges)"),
    ],
)
def test_an_upward_import_is_reported(tree, file, statement, reported):
    with (tree / file).open("a") as source:
        source.write(f"\n{statement}\n")

    problems = upward_imports(tree)

    assert len(problems) == 1 and problems[0].startswith(f"{file}:") and reported in problems[0], problems


def test_a_package_without_a_floor_is_reported(tree):
    (tree / "billing").mkdir()
    (tree / "billing" / "__init__.py").write_text("")

    assert upward_imports(tree) == ["billing/__init__.py: billing is on no floor"]

"""The suite stands alone: the guard of tests/outside.py catches a read beside the repository, and no test module
climbs out of the repository from its own path."""

from __future__ import annotations

import ast
import sqlite3
import tempfile
from pathlib import Path

import pytest

from tests import outside

REPO = outside.REPO
ROOT_NAMES = {"ROOT", "_ROOT", "REPO"}  # the repository's root, as the test helpers name it


@pytest.mark.skipif(
    REPO.parent.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()),
    reason="a clone inside the temporary directory: beside the repository is where every test's scratch files go, "
    "so the guard lets it be (clone outside the temporary directory to run this check)")
def test_a_read_beside_the_repository_is_caught_however_it_is_made(tmp_path):
    sibling = REPO.parent / "no-such-folder-beside-the-repository"
    with pytest.raises(OSError):
        (sibling / "data.json").read_text()
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(f"{(sibling / 'x.db').as_uri()}?mode=ro", uri=True)
    caught, outside.read_outside[:] = list(outside.read_outside), []
    assert caught == [f"open: {sibling / 'data.json'}", f"sqlite3.connect: {sibling / 'x.db'}"]
    # The repository, the temporary directory and the interpreter's own files are not beside it.
    (tmp_path / "f").write_text("x")
    (REPO / "README.md").read_text()
    assert outside.read_outside == []
    assert outside.outside(REPO / "README.md") is None and outside.outside(sibling) == str(sibling)


def _level(node: ast.AST, depth: int) -> int | None:
    """How many folders up from a test file a path expression is (the repository is depth + 1), when known."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve",
                                                                                                  "absolute"):
        return _level(node.func.value, depth)
    if isinstance(node, ast.Call) and any(isinstance(arg, ast.Name) and arg.id == "__file__" for arg in node.args):
        return 0
    if isinstance(node, ast.Name):
        return depth + 1 if node.id in ROOT_NAMES else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        below = _level(node.value, depth)
        return None if below is None else below + 1
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        below = _level(node.value.value, depth)
        return None if below is None else below + node.slice.value + 1
    return None


def test_no_test_module_climbs_out_of_the_repository():
    """The audit hook sees what is read; this sees what a skip would hide (a path out of the repository tested
    for existence only)."""
    climbing = []
    guard = {REPO / "tests" / "outside.py", Path(__file__).resolve()}  # they name the repository's parent on purpose
    for path in sorted(set((REPO / "tests").rglob("*.py")) - guard):
        depth = len(path.relative_to(REPO).parts) - 1
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            level = _level(node, depth)
            if level is not None and level > depth + 1:
                climbing.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert climbing == []

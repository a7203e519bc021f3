"""Keeping a file of a project out of its commits: an entry in the work tree's ``.git/info/exclude`` (never
``.gitignore``, which is the project's own and is committed)."""

from __future__ import annotations

from pathlib import Path

from base.files import UnsafeFile, checked_target, read_regular, write_atomically


def linked_git_dir(dot_git: Path) -> Path | None:
    """The git directory a ``.git`` file (``gitdir: …``) names, when it is this work tree's own: a worktree's
    (its ``gitdir`` file points back here; git reads ``info/exclude`` from the common directory) or a
    submodule's (inside the ``.git/modules`` of a repository above). Any other target is someone else's
    directory, and nothing is written there."""
    text = dot_git.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    target = (dot_git.parent / text.removeprefix("gitdir:").strip()).resolve()
    if not (target / "HEAD").is_file():
        return None
    back_link = target / "gitdir"
    if back_link.is_file():
        if Path(back_link.read_text(errors="replace").strip()).resolve() != dot_git.resolve():
            return None
        common = target / "commondir"
        return (target / common.read_text().strip()).resolve() if common.is_file() else target
    for above in dot_git.parent.parents:
        if (above / ".git").is_dir() and target.is_relative_to((above / ".git" / "modules").resolve()):
            return target
    return None


def exclude_from_git(directory: Path, target: str, *, also: str | None = None) -> None:
    """Keep ``target`` (a name relative to ``directory``, ending in ``/`` for a directory; it may hold ``*``) out
    of commits when ``directory`` is in a git work tree, by a line in that repository's ``info/exclude``.
    ``also``: a line that already covers it."""
    for parent in (directory, *directory.parents):
        dot_git = parent / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            found = linked_git_dir(dot_git)
            if found is None:
                return
            git_dir = found
        else:
            continue
        try:  # a directory that did not come from `git init` or `git clone` may hold a planted link here
            exclude = checked_target(git_dir / "info" / "exclude", root=git_dir)
            content = read_regular(exclude)
        except UnsafeFile:
            return
        lines = content.decode(errors="replace").splitlines() if content is not None else []
        entry = "/" + str(directory.relative_to(parent) / target) + ("/" if target.endswith("/") else "")
        if entry not in lines and (also is None or also not in lines):
            write_atomically(exclude, "".join(line + "\n" for line in lines) + entry + "\n")
        return

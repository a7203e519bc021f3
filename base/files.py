"""Writing files where someone else may have planted something first: a cloned repository, a home directory.

A repository can commit symbolic links and odd files under any name, such as ``.codex/config.toml.tmp`` pointing
at ``.git/hooks/post-commit``. A plain ``open(path, "w")`` follows such a link and writes wherever it points, with
the mode of whatever was there. So every file we write is first made under a fresh random name in the target's
own directory (``O_CREAT | O_EXCL``: never an existing name, never through a link), given its mode there, and
then renamed over the target (a reader never sees half a file). A target that is a link, or that sits under a
link inside the directory that must contain it, is refused before anything is read or written.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

DEFAULT_MODE = 0o644
# Configuration and data files: read and write bits only, whatever the file we replace had.
NO_EXECUTE = 0o666


class UnsafeFile(Exception):
    """A path we will not read or write: the message says which part of it and why."""


def _is_within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def checked_target(path: Path, *, root: Path) -> Path:
    """``path`` itself, when it lies under ``root`` with no symbolic link on the way (root included: the caller
    hands it resolved) and is a regular file or missing; otherwise ``UnsafeFile``.

    Missing parents are fine (they are made, by us, when the file is written)."""
    path = Path(os.path.abspath(path))
    root = Path(os.path.abspath(root))
    if not _is_within(path, root):
        raise UnsafeFile(f"{path} is outside {root}; nothing was written.")
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        try:
            info = current.lstat()
        except FileNotFoundError:
            return path
        if stat.S_ISLNK(info.st_mode):
            raise UnsafeFile(f"{current} is a symbolic link (to {os.readlink(current)}); a file reached through a "
                             f"link could be anywhere, so nothing was read or written. Remove the link and run "
                             "this again.")
        if current != path and not stat.S_ISDIR(info.st_mode):
            raise UnsafeFile(f"{current} is not a directory; nothing was written.")
    if not stat.S_ISREG(path.lstat().st_mode):
        raise UnsafeFile(f"{path} is not a regular file; nothing was read or written.")
    return path


def followed_into(path: Path, *, root: Path) -> tuple[Path, str]:
    """For a person's own files: the real place of ``path`` when links on the way lead somewhere under ``root``
    (dotfiles kept in a repository of one's own and linked into the home directory are common), with a sentence
    saying so; ``UnsafeFile`` when they lead out of it. No link: ``path`` and ''."""
    path = Path(os.path.abspath(path))
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real == path:
        return checked_target(path, root=Path(os.path.abspath(root))), ""
    if not _is_within(real, real_root):
        raise UnsafeFile(f"{path} leads through a symbolic link to {real}, outside {real_root}; nothing was read or "
                         "written.")
    return checked_target(real, root=real_root), f"{path} is a link: followed it to {real}."


def write_atomically(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step. ``mode``: the new file's, else the old file's read and write bits
    (never its execute bits), else 0644. The caller has checked the path (``checked_target``); a link found at
    the target now is still refused, never followed."""
    path = Path(os.path.abspath(path))
    try:
        info: os.stat_result | None = path.lstat()
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{path} is not a regular file (a link or something else); nothing was written.")
    if mode is None:
        mode = stat.S_IMODE(info.st_mode) & NO_EXECUTE if info is not None else DEFAULT_MODE
    _make_parents(path.parent)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file, None when it is missing; never through a link, never from a FIFO or device
    (which could block a reader forever)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnsafeFile(f"{path} cannot be read safely ({exc.strerror}); nothing was changed.") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnsafeFile(f"{path} is not a regular file; nothing was read.")
        return handle.read()


def _make_parents(directory: Path) -> None:
    """Make missing directories one at a time (the path was checked: no link of someone else's is on the way)."""
    missing = []
    current = directory
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for part in reversed(missing):
        part.mkdir()

"""An approximate index of a database's vectors (usearch HNSW, float16), for scopes too large to scan.

The index is a file beside the database (``<its folder>/vectors/``; PILLBOX_VECTOR_INDEX_DIR when set, and for
PostgreSQL), holding every live row's vector of one model, keyed by the row's seq, as of a place in the change
log. Each process maps the file (``Index.restore(view=True)``): the pages are the operating system's, shared by
every process on the machine, not a copy per process.

A search never waits for the file. It uses the generation the pointer file (``<name>.json``) names, as long as
the change log still reaches back to that generation's place: the rows written since are read from the database
and scanned exactly beside the index (``meaning``), and every candidate the index gives is scored again
exactly with the stored vector (the index's float16 row is the row as stored). A missing, truncated, stale or
other-model file is built again in a thread of its own (``schedule``) while the search stays exact. Once many
rows were written since, a process brings the file up to date the same way: a copy updated with those rows, saved
under a new name, then the pointer replaced in one step (readers notice by its stat, and keep the old generation
mapped until they switch).

``Part`` is one scope's view of the index: its rows (seqs, compounds), which of them the index still speaks for,
and the sums of their vectors and of their outer products, from which the mean and the spread of the query's
cosine over the whole scope come without scanning it (``moments``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections

from base.bootstrap import file_lock
from base.files import UnsafeFile, checked_target, write_atomically
from pillbox.embeddings import storage
from pillbox.search import changes
from pillbox.search.targets import Target
from pillbox.search.when import micros

if TYPE_CHECKING:
    import numpy as np
    from usearch.index import Index

logger = logging.getLogger("pillbox")

OVERSAMPLE = 8  # candidates asked of the index per row wanted, all scored again exactly
# How far the graph is searched (usearch's ef), at most: on 200,000 text vectors recall@30 is 0.95 at 256 and 0.99 at
# 1,024, for 0.8 and 2.8 ms a query (bench/vector_index.py); a fiftieth of the rows below that.
EXPANSION = 1_024
EXACT_ROWS = 5_000  # a compound's rows in scope up to which they are scored one by one rather than searched (20 ms)
UPDATE_AFTER = 1_000  # rows written since the file's generation beyond which a process brings it up to date
BLOCK = 8_192
CONNECTIVITY = 16


def threshold() -> int:
    """The rows of vectors in one scope from which the index is used (0: never)."""
    return int(getattr(settings, "PILLBOX_VECTOR_INDEX_ROWS", 50_000))


def folder(alias: str) -> Path | None:
    """Where a database's index files live; None for a database in memory with no folder set."""
    database = settings.DATABASES[alias]
    name = str(database["NAME"])
    configured = getattr(settings, "PILLBOX_VECTOR_INDEX_DIR", None)
    if configured:
        where = f"{database.get('HOST', '')}:{database.get('PORT', '')}:{name}"
        return Path(configured) / hashlib.sha1(where.encode()).hexdigest()[:16]
    if connections[alias].vendor != "sqlite":
        return Path(settings.PILLBOX_HOME) / "vectors" / hashlib.sha1(
            f"{database.get('HOST', '')}:{database.get('PORT', '')}:{name}".encode()).hexdigest()[:16]
    if name.startswith("file:") or name == ":memory:":
        return None
    return Path(name).parent / "vectors"


def _stem(kind: str, model_key: str, dimensions: int) -> str:
    return f"{kind}-{hashlib.sha1(f'{model_key}:{dimensions}'.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class Opened:
    """One generation of the index, mapped: its place in the change log and the pointer's stat when read."""

    index: Index
    position: changes.Position
    signature: tuple[int, ...]
    model: str
    dimensions: int
    # The sums of every row's vector and of their outer products (``Part``), written beside the generation.
    total: np.ndarray
    outer: np.ndarray

    @property
    def size(self) -> int:
        return int(self.index.size)


def _signature(pointer: Path) -> tuple[int, ...] | None:
    """The pointer's stat and its generation file's: another generation, or a file changed in place (which a
    mapped copy must stop reading at once), differ."""
    try:
        info = pointer.stat()
        file = pointer.parent / str(json.loads(pointer.read_text())["file"])
        data = file.stat()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size, data.st_ino, data.st_mtime_ns, data.st_size


def _position_of(data: dict[str, Any]) -> changes.Position:
    last = data.get("last")
    return changes.Position(after=int(data["after"]), horizon=data.get("horizon"),
                            applied=frozenset(data.get("applied") or ()),
                            last=None if last is None else (str(last[0]), last[1]), writer=None)


_opened: dict[Path, Opened] = {}
_stale: dict[Path, tuple[int, ...]] = {}  # a generation the log no longer reaches: not used again
_opened_lock = threading.Lock()


def pointer_of(alias: str, kind: str, model_key: str, dimensions: int) -> Path | None:
    where = folder(alias)
    return None if where is None else where / f"{_stem(kind, model_key, dimensions)}.json"


def current(alias: str, kind: str, model_key: str, dimensions: int, *, build: bool = True) -> Opened | None:
    """The index generation the pointer names, mapped (once per generation); None when there is none that can be
    used: missing, unreadable, truncated, of another model or size (a build is scheduled then, with ``build``:
    the caller's scope is a large one)."""
    pointer = pointer_of(alias, kind, model_key, dimensions)
    if pointer is None:
        return None
    signature = _signature(pointer)
    with _opened_lock:
        known = _opened.get(pointer)
        if known is not None and known.signature == signature:
            return known
    if signature is None or _stale.get(pointer) == signature:
        if build:
            schedule(alias, kind, model_key, dimensions, fresh=signature is not None)
        return None
    try:
        data = _pointed(pointer)
        file = pointer.parent / str(data["file"])
        if data["model"] != model_key or int(data["dimensions"]) != dimensions or data["kind"] != kind:
            raise ValueError("an index of another model")
        from usearch.index import Index  # here: a server whose scopes are small never loads the library

        index = Index.restore(str(file), view=True)
        if index is None or index.ndim != dimensions or index.size != int(data["rows"]):
            raise ValueError("an index of another size")
        # A small index would be walked nearly whole at the full expansion, for nothing.
        index.expansion_search = max(64, min(EXPANSION, index.size // 50))  # type: ignore[misc]  # it has a setter
        total, outer = _sums_of(pointer.parent / str(data["sums"]), dimensions)
        opened = Opened(index, _position_of(data["position"]), signature, model_key, dimensions, total, outer)
    except (OSError, ValueError, KeyError, TypeError, EOFError, UnsafeFile) as exc:
        if build:
            logger.info("The vector index %s cannot be used (%s): built again meanwhile.", pointer, exc)
            schedule(alias, kind, model_key, dimensions, fresh=True)
        return None
    with _opened_lock:
        _opened[pointer] = opened
    return opened


def _mark(pointer: Path, data: dict[str, Any]) -> str:
    """This installation's signature of a pointer at this place: a folder that came with a clone or a copy of a
    project (its files made elsewhere, by anyone) is never mapped, only built again."""
    import hmac

    message = f"{pointer.resolve()}\n{json.dumps(data, sort_keys=True)}".encode()
    return hmac.new(str(settings.SECRET_KEY).encode(), message, hashlib.sha256).hexdigest()


def _pointed(pointer: Path) -> dict[str, Any]:
    """The pointer's content, once its mark and the files it names are found to be ours (no link, no path)."""
    import hmac

    data = json.loads(checked_target(pointer, root=pointer.parent).read_text())
    if not isinstance(data, dict) or not hmac.compare_digest(str(data.pop("mark", "")), _mark(pointer, data)):
        raise ValueError("a pointer this installation did not write")
    for name in (data["file"], data["sums"]):
        if Path(str(name)).name != name:
            raise ValueError("a file outside the index's folder")
        checked_target(pointer.parent / str(name), root=pointer.parent)
    return data


def _sums_of(file: Path, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    with np.load(file) as sums:
        total, outer = sums["total"], sums["outer"]
    if total.shape != (dimensions,) or outer.shape != (dimensions, dimensions):
        raise ValueError("sums of another size")
    return total, outer


def forget(alias: str, kind: str, model_key: str, dimensions: int) -> None:
    """The generation found stale (the log no longer reaches it): built again from the database."""
    pointer = pointer_of(alias, kind, model_key, dimensions)
    if pointer is not None:
        with _opened_lock:
            known = _opened.pop(pointer, None)
            if known is not None:
                _stale[pointer] = known.signature
        schedule(alias, kind, model_key, dimensions, fresh=True)


# ---------------------------------------------------------------- building and updating the file


def build(alias: str, kind: str, model_key: str, dimensions: int, *, fresh: bool = False, threads: int = 1) -> bool:
    """Brings the index file up to the change log's end: the rows written since its generation, or every row
    (``fresh``, or when the log no longer reaches back). One process at a time (a lock file); False when there
    was nothing to do or no folder."""
    pointer = pointer_of(alias, kind, model_key, dimensions)
    if pointer is None:
        return False
    pointer.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(pointer.with_suffix(".lock")):
        previous = None if fresh else _readable(pointer, model_key, dimensions)
        with changes.snapshot(alias):
            index = None
            if previous is not None:
                index, at, sums = previous
                found = changes.since(alias, at)
                if found is None:
                    index = None
                elif not found[0]:
                    return False
            if index is None:
                index, position, sums = _whole(alias, kind, model_key, dimensions, threads)
            else:
                entries, position = found  # type: ignore[misc]
                _update(index, sums, alias, kind, model_key, dimensions, entries, threads)
        _save(pointer, index, sums, position, model_key, dimensions, kind)
    return True


def _readable(pointer: Path, model_key: str, dimensions: int) -> tuple[Index, changes.Position, Sums] | None:
    """The generation the pointer names, loaded as a copy to be updated; None when there is none to build on."""
    from usearch.index import Index

    try:
        data = _pointed(pointer)
        if data["model"] != model_key or int(data["dimensions"]) != dimensions:
            return None
        index = Index.restore(str(pointer.parent / str(data["file"])))
        if index is None or index.size != int(data["rows"]):
            return None
        total, outer = _sums_of(pointer.parent / str(data["sums"]), dimensions)
        return index, _position_of(data["position"]), Sums(total.copy(), outer.copy())
    except (OSError, ValueError, KeyError, TypeError, EOFError, UnsafeFile):
        return None


@dataclass
class Sums:
    """The sums of an index's vectors and of their outer products, kept in step as rows come and go."""

    total: np.ndarray
    outer: np.ndarray

    @classmethod
    def empty(cls, dimensions: int) -> Sums:
        import numpy as np

        return cls(np.zeros(dimensions), np.zeros((dimensions, dimensions)))

    def add(self, matrix: np.ndarray, sign: float = 1.0) -> None:
        import numpy as np

        matrix = matrix.astype(np.float32)
        self.total += sign * matrix.sum(axis=0, dtype=np.float64)
        self.outer += sign * (matrix.T @ matrix).astype(np.float64)


def _new_index(dimensions: int) -> Index:
    from usearch.index import Index

    return Index(ndim=dimensions, metric="ip", dtype="f16", connectivity=CONNECTIVITY)


def _rows(alias: str, kind_name: str, model_key: str, seqs: list[int] | None = None) -> Any:
    """Live rows with a vector of this model (``seqs`` only, when given): (seq, vector bytes) in blocks."""
    kind = storage.KINDS[kind_name]
    sql = (f"SELECT m.seq, v.vector FROM {kind.table} m JOIN {kind.vectors} v ON v.{kind.key} = m.id "
           "AND v.model = %s WHERE m.deleted_at IS NULL")
    params: list[Any] = [model_key]
    if seqs is not None:
        sql += f" AND m.seq IN ({', '.join(['%s'] * len(seqs))})"
        params += seqs
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        while block := cursor.fetchmany(BLOCK):
            yield block


def _add(index: Index, sums: Sums, block: list[tuple[int, bytes]], dimensions: int, threads: int) -> None:
    import numpy as np

    block = [row for row in block if row[1] is not None and len(row[1]) == dimensions * 2]
    if not block:
        return
    keys = np.array([row[0] for row in block], dtype=np.uint64)
    matrix = np.frombuffer(b"".join(bytes(row[1]) for row in block), dtype=np.float16).reshape(-1, dimensions)
    index.add(keys, matrix, threads=threads)
    sums.add(matrix)


def _whole(alias: str, kind: str, model_key: str, dimensions: int,
           threads: int) -> tuple[Index, changes.Position, Sums]:
    position = changes.position(alias)
    index, sums = _new_index(dimensions), Sums.empty(dimensions)
    for block in _rows(alias, kind, model_key):
        _add(index, sums, block, dimensions, threads)
    return index, position, sums


def _update(index: Index, sums: Sums, alias: str, kind: str, model_key: str, dimensions: int,
            entries: list[changes.Change], threads: int) -> None:
    import numpy as np

    kinds = {kind, f"{kind}_vector"}
    seqs = sorted({entry.seq for entry in entries if entry.kind in kinds and entry.seq is not None})
    if seqs:
        keys = np.array(seqs, dtype=np.uint64)
        present = keys[np.asarray(index.contains(keys), dtype=bool)]
        if len(present):
            sums.add(_vectors_of(index, present), -1.0)
            index.remove(present)
        for block in _rows(alias, kind, model_key, seqs):
            _add(index, sums, block, dimensions, threads)


def _vectors_of(index: Index, keys: np.ndarray) -> np.ndarray:
    """The stored vectors of rows in the index, as float32."""
    import numpy as np

    if not len(keys):
        return np.zeros((0, int(index.ndim)), dtype=np.float32)
    found = index.get(np.asarray(keys, dtype=np.uint64))
    rows = [found] if isinstance(found, np.ndarray) else [row for row in found or () if row is not None]
    return np.vstack(rows).astype(np.float32)


def _save(pointer: Path, index: Index, sums: Sums, position: changes.Position, model_key: str, dimensions: int,
          kind: str) -> None:
    """A new generation under a name of its own, then the pointer to it replaced in one step; the generation it
    replaces is removed (a process that still maps it keeps its pages until it lets go)."""
    import numpy as np

    generation = f"{pointer.stem}-{uuid.uuid4().hex[:12]}"
    name = f"{generation}.usearch"
    file = checked_target(pointer.parent / name, root=pointer.parent)
    index.save(str(file))
    with open(checked_target(pointer.parent / f"{generation}.npz", root=pointer.parent), "xb") as handle:
        np.savez(handle, total=sums.total, outer=sums.outer)
    old = None
    try:
        old = json.loads(pointer.read_text()).get("file")
    except (OSError, ValueError):
        pass
    where = asdict(position)
    where["applied"] = sorted(position.applied)
    data: dict[str, Any] = {"model": model_key, "dimensions": dimensions, "kind": kind, "rows": int(index.size),
                            "file": name, "sums": f"{generation}.npz", "position": where}
    data["mark"] = _mark(pointer, data)
    write_atomically(checked_target(pointer, root=pointer.parent), json.dumps(data), mode=0o600)
    for stale in pointer.parent.glob(f"{pointer.stem}-*"):
        if stale.stem != generation and (old is None or stale.stem == Path(str(old)).stem):
            stale.unlink(missing_ok=True)


_builds: dict[Path, threading.Thread] = {}
_builds_lock = threading.Lock()


def schedule(alias: str, kind: str, model_key: str, dimensions: int, *, fresh: bool = False) -> None:
    """Build or update the index in a thread of its own, unless one is already at it in this process."""
    pointer = pointer_of(alias, kind, model_key, dimensions)
    if pointer is None:
        return
    with _builds_lock:
        running = _builds.get(pointer)
        if running is not None and running.is_alive():
            return
        thread = threading.Thread(target=_build_thread, args=(alias, kind, model_key, dimensions, fresh),
                                  daemon=True, name=f"pillbox-vector-index-{kind}")
        _builds[pointer] = thread
        thread.start()


def _build_thread(alias: str, kind: str, model_key: str, dimensions: int, fresh: bool) -> None:
    try:
        build(alias, kind, model_key, dimensions, fresh=fresh)
    except Exception as exc:  # a busy or closed database: a later search schedules it again
        logger.warning("The vector index of %s in %s was not built: %s", kind, alias, exc)
    finally:
        connections[alias].close()


def wait_for_builds(timeout: float = 600.0) -> None:
    """Join every running build (tests and benchmarks)."""
    for thread in list(_builds.values()):
        thread.join(timeout)


# ---------------------------------------------------------------- one scope's view of the index


@dataclass(eq=False)
class Part:
    """The rows of one scope the index speaks for: those in scope with a vector in the index, unchanged since
    its generation (``alive``); the rows written since are the caller's to scan (``meaning.Vectors``)."""

    opened: Opened
    seqs: np.ndarray  # int64, sorted: the scope's rows in the index
    alive: np.ndarray  # bool, along ``seqs``
    codes: np.ndarray  # int32, along ``seqs``: the row's compound, in ``names``
    names: list[str]
    created: np.ndarray  # int64, along ``seqs``: the row's creation, microseconds since the epoch
    total: np.ndarray = field(repr=False)  # float64 [d]: the sum of the alive rows' vectors
    outer: np.ndarray = field(repr=False)  # float64 [d, d]: the sum of their outer products
    count: int = 0

    @property
    def nbytes(self) -> int:
        return int(self.seqs.nbytes + self.alive.nbytes + self.codes.nbytes + self.created.nbytes
                   + self.total.nbytes + self.outer.nbytes)

    def vectors(self, seqs: np.ndarray) -> np.ndarray:
        """The stored vectors of rows in the index, as float32."""
        return _vectors_of(self.opened.index, seqs)

    def start(self) -> None:
        """The sums over the scope's rows: the index's own less the rows outside the scope when those are fewer
        (a project's file: none), else over the scope's rows."""
        import numpy as np

        if 2 * len(self.seqs) < self.opened.size:
            self._sum(self.seqs, 1.0)
            return
        self.total, self.outer, self.count = self.opened.total.copy(), self.opened.outer.copy(), self.opened.size
        everything = np.asarray(self.opened.index.keys, dtype=np.int64)
        self._sum(np.setdiff1d(everything, self.seqs, assume_unique=True), -1.0)

    def _at(self, seqs: np.ndarray) -> np.ndarray:
        """Where each of ``seqs`` is in ``self.seqs``, or -1."""
        import numpy as np

        seqs = np.asarray(seqs, dtype=np.int64)
        if not len(self.seqs):
            return np.full(len(seqs), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.seqs, seqs), len(self.seqs) - 1)
        return np.where(self.seqs[at] == seqs, at, -1)

    def drop(self, seqs: list[int]) -> None:
        """Rows written since the index's generation: no longer the index's to speak for."""
        import numpy as np

        at = self._at(np.array(seqs, dtype=np.int64))
        at = at[at >= 0]
        at = at[self.alive[at]]
        if not len(at):
            return
        self.alive[at] = False
        self._sum(self.seqs[at], -1.0)

    def _sum(self, seqs: np.ndarray, sign: float) -> None:
        import numpy as np

        for start in range(0, len(seqs), BLOCK):
            matrix = self.vectors(seqs[start:start + BLOCK])
            self.total += sign * matrix.sum(axis=0, dtype=np.float64)
            self.outer += sign * (matrix.T @ matrix).astype(np.float64)
            self.count += int(sign) * len(matrix)

    def moments(self, query: np.ndarray) -> tuple[float, float, int]:
        """The sum of the query's cosine over the alive rows, the sum of its squares, and their count."""
        import numpy as np

        q = query.astype(np.float64)
        return float(self.total @ q), float(q @ self.outer @ q), self.count

    def similarity(self, query: np.ndarray, seqs: list[int]) -> dict[int, float]:
        """The cosine of the alive rows among ``seqs`` (the words' candidates), from their stored vectors."""
        import numpy as np

        asked = np.array(seqs, dtype=np.int64)
        at = self._at(asked)
        keep = at >= 0
        keep[keep] = self.alive[at[keep]]
        found = asked[keep]
        return dict(zip(found.tolist(), (self.vectors(found) @ query).tolist(), strict=True))

    def within(self, start: int | None, end: int | None) -> np.ndarray:
        """The alive rows created from ``start`` to before ``end`` (microseconds; None: unbounded)."""
        mask = self.alive.copy()
        if start is not None:
            mask &= self.created >= start
        if end is not None:
            mask &= self.created < end
        return mask

    def closest(self, query: np.ndarray, compound: str | None, wanted: int,
                within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """The alive rows closest to the query (of ``compound`` when given; among ``within`` only, a time
        window's rows, when given), scored exactly: their seqs and cosines, and the best cosine over every such
        row (compound or not)."""
        import numpy as np

        base = self.alive if within is None else within
        alive = int(base.sum())
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not alive:
            return *empty, -1.0
        seqs, similarity = self._search(query, base, alive, wanted)
        best = float(similarity.max()) if len(similarity) else -1.0
        if compound is None:
            return seqs, similarity, best
        mask = base & (self.codes == (self.names.index(compound) if compound in self.names else -1))
        rows = int(mask.sum())
        if not rows:
            return *empty, best
        seqs, similarity = self._search(query, mask, rows, wanted)
        return seqs, similarity, best

    def _search(self, query: np.ndarray, mask: np.ndarray, rows: int,
                wanted: int) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        size = self.opened.size
        count = min(size, -(-wanted * OVERSAMPLE * size // rows))
        if rows <= EXACT_ROWS and count > rows:  # asking the index would scan more than the rows themselves
            seqs = self.seqs[mask]
        else:
            while True:
                found = self.opened.index.search(query, count, threads=1).keys.astype(np.int64)
                at = self._at(found)
                keep = at >= 0
                keep[keep] = mask[at[keep]]
                seqs = found[keep]
                if len(seqs) >= min(wanted * OVERSAMPLE, rows) or count >= size:
                    break
                count = min(size, count * 4)
        similarity = np.zeros(0, dtype=np.float32)
        for start in range(0, len(seqs), BLOCK):
            similarity = np.concatenate([similarity, self.vectors(seqs[start:start + BLOCK]) @ query])
        return seqs, similarity


def part_of(target: Target, opened: Opened) -> tuple[Part, set[int], set[int]]:
    """The scope's rows in the index, read in the caller's snapshot (seqs and compounds, no vectors); also the
    scope's rows without a vector of this model, and those with one the index lacks (to be read and scanned)."""
    import numpy as np

    kind = storage.KINDS[target.kind]
    # Every row the caller may be answered (superseded ones only when asked), whatever the time: a window is a
    # mask over ``created`` at each search, not another part.
    joins, where, params = target.shown_sql(windowed=False)
    with connections[target.alias].cursor() as cursor:
        cursor.execute(f"SELECT m.seq, m.compound, v.{kind.key} IS NOT NULL, m.created_at "
                       f"FROM {target.table} m {joins} LEFT JOIN {kind.vectors} v ON v.{kind.key} = m.id "
                       f"AND v.model = %s WHERE {where} ORDER BY m.seq", [opened.model, *params])
        rows = cursor.fetchall()
    missing = {int(row[0]) for row in rows if not row[2]}
    vectored = np.array([row[0] for row in rows if row[2]], dtype=np.int64)
    compounds = [row[1] for row in rows if row[2]]
    inside = np.asarray(opened.index.contains(vectored.astype(np.uint64)), dtype=bool) if len(vectored) else (
        np.zeros(0, dtype=bool))
    names = sorted(set(compounds))
    lookup = {name: code for code, name in enumerate(names)}
    codes = np.array([lookup[name] for name, keep in zip(compounds, inside, strict=True) if keep], dtype=np.int32)
    created = np.array([micros(row[3]) for row in rows if row[2]], dtype=np.int64)[inside] if len(vectored) else (
        np.zeros(0, dtype=np.int64))
    dimensions = opened.dimensions
    part = Part(opened, vectored[inside], np.ones(int(inside.sum()), dtype=bool), codes, names, created,
                np.zeros(dimensions), np.zeros((dimensions, dimensions)))
    part.start()
    return part, missing, {int(seq) for seq in vectored[~inside]}

"""The pass by meaning over one database: the caller's rows' vectors (cached), compared with the query's
embedding (``pillbox.embeddings``): the words' candidates get their cosine, and rows close enough join them."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connections

from base.lru import BoundedLru
from pillbox.databases import change_marker
from pillbox.embeddings import backfill, storage
from pillbox.search import ann, changes, pgvector
from pillbox.search.lexical import Candidate
from pillbox.search.targets import Target, marks
from pillbox.search.when import Window, micros

if TYPE_CHECKING:
    import numpy as np

    from pillbox.embeddings.embedders import Embedder

SEMANTIC_CANDIDATES = 30  # rows found by meaning alone that may join the words' candidates, per database


@dataclass(eq=False)
class Vectors:
    """A scope's vectors, kept in step with the database: the rows a write touched are re-read (``refresh``),
    never the whole scope again unless the change log no longer reaches back to this copy."""

    dimensions: int
    at: changes.Position
    marker: tuple[object, ...] | None = None  # SQLite's change marker when the log was last asked
    count: int = 0
    _seqs: np.ndarray | None = None  # int64 [capacity]; rows past ``count`` are unused
    _matrix: np.ndarray | None = None  # float32 [capacity, dimensions], unit rows
    _created: np.ndarray | None = None  # int64 [capacity]: each row's creation, microseconds since the epoch
    compounds: list[str] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)
    missing_seqs: set[int] = field(default_factory=set)  # the scope's live rows without a vector of this model
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A large scope: the rows the index file speaks for (``ann``); the matrix then holds the rows written since.
    part: ann.Part | None = None

    @property
    def seqs(self) -> np.ndarray:
        assert self._seqs is not None
        return self._seqs[:self.count]

    @property
    def matrix(self) -> np.ndarray:
        assert self._matrix is not None
        return self._matrix[:self.count]

    @property
    def created(self) -> np.ndarray:
        assert self._created is not None
        return self._created[:self.count]

    @property
    def missing(self) -> int:
        return len(self.missing_seqs)

    @property
    def nbytes(self) -> int:
        assert self._matrix is not None and self._seqs is not None
        held = 0 if self.part is None else self.part.nbytes
        return int(self._matrix.nbytes + 2 * self._seqs.nbytes) + 100 * self.count + held

    def take(self, rows: list[tuple[int, str, bytes | None, object]], replacing: list[int]) -> None:
        """Rows of the scope as read (seq, compound, vector or None, creation time), in place of what was kept
        of the rows ``replacing`` names (those no longer in the scope are not among the rows read)."""
        import numpy as np

        for seq in replacing:
            self._drop(seq)
        kept = [row for row in rows if row[2] is not None and len(row[2]) == self.dimensions * 2]
        # A vector of another length (a damaged row) is left out rather than breaking the search.
        self.missing_seqs.update(int(row[0]) for row in rows if row[2] is None)
        needed = self.count + len(kept)
        if self._matrix is None or self._seqs is None or needed > len(self._seqs):
            self.resize(max(needed + needed // 2, 64))
        if not kept or self._matrix is None or self._seqs is None or self._created is None:
            return
        end = self.count + len(kept)
        block = np.frombuffer(b"".join(bytes(row[2]) for row in kept if row[2] is not None),
                              dtype=storage.VECTOR_DTYPE)
        self._matrix[self.count:end] = block.reshape(len(kept), self.dimensions)
        self._seqs[self.count:end] = [row[0] for row in kept]
        self._created[self.count:end] = [micros(row[3]) for row in kept]
        for at, row in enumerate(kept, start=self.count):
            self.position[int(row[0])] = at
            self.compounds.append(row[1])
        self.count = end

    def resize(self, capacity: int) -> None:
        """Room for ``capacity`` rows: grown by half again as rows come (a write adds one row, not a copy of the
        matrix), trimmed after a full read."""
        import numpy as np

        matrix = np.zeros((capacity, self.dimensions), dtype=np.float32)
        seqs = np.zeros(capacity, dtype=np.int64)
        created = np.zeros(capacity, dtype=np.int64)
        if self._matrix is not None and self._seqs is not None and self._created is not None:
            matrix[:self.count] = self._matrix[:self.count]
            seqs[:self.count] = self._seqs[:self.count]
            created[:self.count] = self._created[:self.count]
        self._matrix, self._seqs, self._created = matrix, seqs, created

    def _drop(self, seq: int) -> None:
        self.missing_seqs.discard(seq)
        at = self.position.pop(seq, None)
        if at is None or self._matrix is None or self._seqs is None or self._created is None:
            return
        last = self.count - 1
        if at != last:  # the last row takes the dropped row's place
            self._matrix[at] = self._matrix[last]
            self._created[at] = self._created[last]
            moved = int(self._seqs[last])
            self._seqs[at] = moved
            self.compounds[at] = self.compounds[last]
            self.position[moved] = at
        self.compounds.pop()
        self.count = last


VECTOR_CACHE_ENTRIES = 64
# One scope of 200,000 rows is 307 MB of float32: a bound below that would read it whole for every search.
VECTOR_CACHE_BYTES = 512 * 1024 * 1024
_vectors: BoundedLru[tuple[Any, ...], Vectors] = BoundedLru(
    max_items=VECTOR_CACHE_ENTRIES, max_bytes=VECTOR_CACHE_BYTES
)
READ_BLOCK = 10_000
rows_read = 0  # rows of vectors read from the databases by this process (tests count them)


def _read(target: Target, model_key: str, vectors: Vectors, seqs: list[int] | None = None) -> None:
    """The scope's rows (``seqs`` only, when given) with their vectors of this model, into ``vectors``."""
    global rows_read
    kind = storage.KINDS[target.kind]
    joins, where, params = target.shown_sql(windowed=False)  # a time window is applied to the kept creation times
    sql = (f"SELECT m.seq, m.compound, v.vector, m.created_at FROM {target.table} m {joins} "
           f"LEFT JOIN {kind.vectors} v ON v.{kind.key} = m.id AND v.model = %s WHERE {where}")
    with connections[target.alias].cursor() as cursor:
        if seqs is None:
            # In a stable order, so that rows of equal cosine rank alike whenever the vectors were written.
            cursor.execute(f"{sql} ORDER BY m.seq", [model_key, *params])
        else:
            cursor.execute(f"{sql} AND m.seq IN ({marks(len(seqs))})", [model_key, *params, *seqs])
        vectors.take([], seqs or [])
        # In blocks: the whole scope's rows at once would hold every vector twice more (bytes, then tuples).
        while rows := cursor.fetchmany(READ_BLOCK):
            rows_read += len(rows)
            vectors.take(rows, [])


def _load(target: Target, model_key: str, dimensions: int) -> Vectors:
    opened = _index_for(target, model_key, dimensions, build=False)  # a scope's size is known once read
    with changes.snapshot(target.alias):
        vectors = Vectors(dimensions=dimensions, at=changes.position(target.alias))
        if opened is not None and _load_part(target, model_key, vectors, opened):
            return vectors
        _read(target, model_key, vectors)
    vectors.resize(vectors.count + vectors.count // 16 + 64)
    if opened is None and vectors.count >= ann.threshold() > 0:
        ann.current(target.alias, target.kind, model_key, dimensions)  # a large scope: its index is built
    return vectors


def _index_for(target: Target, model_key: str, dimensions: int, *, build: bool = True) -> ann.Opened | None:
    """The database's index file, when one that can be used holds at least a large scope's rows (``build``: the
    scope is one, and a missing or damaged file is built)."""
    if ann.threshold() <= 0:
        return None
    opened = ann.current(target.alias, target.kind, model_key, dimensions, build=build)
    return opened if opened is not None and opened.size >= ann.threshold() else None


def _load_part(target: Target, model_key: str, vectors: Vectors, opened: ann.Opened) -> bool:
    """A large scope through the index: its rows' seqs, and the vectors of the rows written since the index's
    generation only. False for a scope below the threshold, or an index the log no longer reaches."""
    found = changes.since(target.alias, opened.position)
    if found is None:
        ann.forget(target.alias, target.kind, model_key, vectors.dimensions)
        return False
    part, missing, absent = ann.part_of(target, opened)
    if len(part.seqs) + len(absent) < ann.threshold():
        return False
    kinds = {target.kind, f"{target.kind}_vector"}
    changed = {entry.seq for entry in found[0] if entry.kind in kinds and entry.seq is not None}
    part.drop(sorted(changed))
    vectors.part, vectors.missing_seqs = part, missing - changed
    vectors.resize(64)
    if changed or absent:
        _read(target, model_key, vectors, sorted(changed | absent))
    return True


def _refresh(target: Target, model_key: str, vectors: Vectors) -> bool:
    """Re-reads the scope's rows written since ``vectors`` was last brought up to date; False when that cannot
    be done row by row (the log was pruned past it, or a prescription changed whose pills are in scope)."""
    marker = change_marker(target.alias)
    if marker is not None and marker == vectors.marker:
        return True  # nothing in the file changed since: the cheap check, before the log's query
    found = changes.rows_since(target.alias, vectors.at, target.kind)
    if found is None:
        return False
    seqs, at = found
    if seqs:
        if vectors.part is not None:
            vectors.part.drop(seqs)
        _read(target, model_key, vectors, seqs)
    vectors.at, vectors.marker = at, marker
    return True


def _current(target: Target, model_key: str, vectors: Vectors) -> bool:
    """Whether ``vectors`` is read the way its scope should be: through the index's generation now in the file
    when it has one, and through an index (once built) when the scope has grown large; the rows written since
    the generation are handed to a build once they are many."""
    if ann.threshold() <= 0:
        return vectors.part is None
    if vectors.part is not None:
        part = vectors.part
        if len(part.seqs) - part.count + vectors.count > ann.UPDATE_AFTER:
            ann.schedule(target.alias, target.kind, model_key, vectors.dimensions)
        return ann.current(target.alias, target.kind, model_key, vectors.dimensions) is part.opened
    return vectors.count < ann.threshold() or _index_for(target, model_key, vectors.dimensions) is None


def vectors_of(target: Target, model_key: str, dimensions: int) -> Vectors:
    """The caller's rows' vectors in one database, read once and then kept in step with the writes."""
    key = ("vectors", target.alias, target.kind, target.owner_id, target.bottles, target.include_superseded,
           model_key, dimensions)
    vectors = _vectors.get(key)
    if vectors is not None:
        with vectors.lock:
            if _refresh(target, model_key, vectors) and _current(target, model_key, vectors):
                return vectors
    vectors = _load(target, model_key, dimensions)
    _vectors.put(key, vectors, vectors.nbytes)
    return vectors


MEASURABLE = 3  # vectors in a scope from which the cosine's spread means something (z of 2 rows is always 1)


@dataclass(frozen=True)
class Spread:
    """How the query's cosine is spread over the scope: its best, and how far that stands above the rest
    (``z``: standard deviations above the mean). A model with something to say about a query puts one row far
    above the others; one that has nothing finds every row about as close."""

    best: float = 0.0
    z: float = 0.0
    rows: int = 0

    def stands_out(self, margin: float) -> bool:
        """Whether the best row stands further above the rest than chance would put the best of this many
        (the expected largest of n normal draws is about sqrt(2 ln n) deviations above their mean), by
        ``margin``: a scope of 12 rows needs z 2.2, of 1,442 rows 3.8, of 20,000 rows 4.5."""
        import math

        if self.rows < MEASURABLE:  # one or two vectors (a new memory, or one whose vectors are being written)
            return self.rows > 0  # say nothing of a spread, and the model decides as it always did
        return self.z >= math.sqrt(2 * math.log(self.rows)) + margin


def semantic_pass(target: Target, model: Embedder, query_vector: np.ndarray, compound: str | None,
                  lexical: list[Candidate], floor: float) -> tuple[list[Candidate], Spread]:
    """Gives the lexical candidates their similarity; returns the rows found by meaning alone (above the floor)
    and the cosine's spread over the scope."""
    if pgvector.serves(target, model.key, query_vector.shape[0]):  # the database searches its own vectors
        found, (best, z, rows) = pgvector.closest(target, model.key, query_vector, compound, lexical, floor,
                                                  SEMANTIC_CANDIDATES)
        return found, Spread(best, z, rows)
    vectors = vectors_of(target, model.key, query_vector.shape[0])
    if 0 < vectors.missing <= backfill.BATCH:
        # Rows stored a moment ago whose backfill has not run yet: one model run (a few ms) makes them findable.
        if backfill.catch_up(target.alias, target.kind, sorted(vectors.missing_seqs)):
            vectors = vectors_of(target, model.key, query_vector.shape[0])
    if vectors.missing:
        backfill.schedule_backfill(target.alias, target.kind)
    with vectors.lock:  # another thread's refresh may move rows of the matrix
        return _closest(vectors, query_vector, compound, lexical, floor, target.window)


def _inside(vectors: Vectors, window: Window | None) -> np.ndarray | None:
    """Which rows were created in the window (None: all of them), as the SQL of the words' pass reads it."""
    if window is None:
        return None
    import numpy as np

    created = vectors.created
    inside = np.ones(len(created), dtype=bool)
    if window.start is not None:
        inside &= created >= micros(window.start)
    if window.end is not None:
        inside &= created < micros(window.end)
    return inside


def _closest(vectors: Vectors, query_vector: np.ndarray, compound: str | None, lexical: list[Candidate],
             floor: float, window: Window | None = None) -> tuple[list[Candidate], Spread]:
    import numpy as np

    if vectors.dimensions != query_vector.shape[0]:
        return [], Spread()
    if vectors.part is not None:
        return _closest_indexed(vectors, vectors.part, query_vector, compound, lexical, floor, window)
    if not vectors.count:
        return [], Spread()
    similarity = vectors.matrix @ query_vector
    inside = _inside(vectors, window)
    # Rows outside the window are never ranked: they leave the spread, and cannot be found by meaning.
    measured = similarity if inside is None else similarity[inside]
    if not len(measured):
        return [], Spread()
    deviation = float(measured.std())
    best = float(measured.max())
    spread = Spread(best, (best - float(measured.mean())) / deviation if deviation > 1e-9 else 0.0, len(measured))
    if inside is not None:
        similarity = np.where(inside, similarity, -np.inf)
    for candidate in lexical:
        at = vectors.position.get(candidate.seq)
        if at is not None:
            candidate.similarity = float(similarity[at])
    if compound is not None:
        similarity = np.where(np.array([c == compound for c in vectors.compounds]), similarity, -1.0)
    return _pick(vectors.seqs, similarity, lexical, floor), spread


def _closest_indexed(vectors: Vectors, part: ann.Part, query_vector: np.ndarray, compound: str | None,
                     lexical: list[Candidate], floor: float,
                     window: Window | None = None) -> tuple[list[Candidate], Spread]:
    """As ``_closest``, for a scope the index speaks for: the index's candidates and the rows written since
    (``vectors.matrix``), all scored exactly; the cosine's mean and spread over the whole scope from the sums the
    part keeps, which come to what a scan of every row would give. With a time window, only its rows are
    candidates (a mask of the index's search) and its best row is the spread's best; the mean and deviation stay
    the scope's (what the sums know)."""
    import math

    import numpy as np

    written = vectors.matrix @ query_vector
    total, squares, rows = part.moments(query_vector)
    rows += len(written)
    if not rows:
        return [], Spread()
    mean = (total + float(written.sum(dtype=np.float64))) / rows
    deviation = math.sqrt(max((squares + float((written.astype(np.float64) ** 2).sum())) / rows - mean * mean, 0.0))
    within = None
    inside = _inside(vectors, window)
    if window is not None and inside is not None:
        within = part.within(None if window.start is None else micros(window.start),
                             None if window.end is None else micros(window.end))
        written = np.where(inside, written, -np.inf)
        if not within.any() and not inside.any():
            return [], Spread()
    seqs, similarity, best = part.closest(query_vector, compound, SEMANTIC_CANDIDATES + len(lexical), within)
    if len(written) and np.isfinite(written).any():
        best = max(best, float(written.max()))
    spread = Spread(best, (best - mean) / deviation if deviation > 1e-9 else 0.0, rows)
    indexed = part.similarity(query_vector, [c.seq for c in lexical if c.seq not in vectors.position])
    for candidate in lexical:
        at = vectors.position.get(candidate.seq)
        value = float(written[at]) if at is not None else indexed.get(candidate.seq)
        if value is not None:
            candidate.similarity = value
    if compound is not None:
        written = np.where(np.array([c == compound for c in vectors.compounds], dtype=bool), written, -1.0)
    return _pick(np.concatenate([seqs, vectors.seqs]), np.concatenate([similarity, written]), lexical,
                 floor), spread


def _pick(seqs: np.ndarray, similarity: np.ndarray, lexical: list[Candidate], floor: float) -> list[Candidate]:
    """The rows closest in meaning (above ``floor``) that the words did not find already."""
    import numpy as np

    seen = {candidate.seq for candidate in lexical}
    count = min(SEMANTIC_CANDIDATES + len(seen), len(similarity))
    if not count:
        return []
    top = np.argpartition(-similarity, count - 1)[:count]
    top = top[np.lexsort((-seqs[top], -similarity[top]))]  # ties: the newest first, as the words' order
    out: list[Candidate] = []
    for at in top:
        value = float(similarity[at])
        if value < floor or len(out) >= SEMANTIC_CANDIDATES:
            break
        seq = int(seqs[at])
        if seq not in seen:
            out.append(Candidate(seq, 0.0, 0.0, False, value))
    return out

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
from pillbox.search import changes, pgvector
from pillbox.search.lexical import Candidate
from pillbox.search.targets import Target, marks

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
    compounds: list[str] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)
    missing_seqs: set[int] = field(default_factory=set)  # the scope's live rows without a vector of this model
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def seqs(self) -> np.ndarray:
        assert self._seqs is not None
        return self._seqs[:self.count]

    @property
    def matrix(self) -> np.ndarray:
        assert self._matrix is not None
        return self._matrix[:self.count]

    @property
    def missing(self) -> int:
        return len(self.missing_seqs)

    @property
    def nbytes(self) -> int:
        assert self._matrix is not None and self._seqs is not None
        return int(self._matrix.nbytes + self._seqs.nbytes) + 100 * self.count

    def take(self, rows: list[tuple[int, str, bytes | None]], replacing: list[int]) -> None:
        """Rows of the scope as read (seq, compound, vector or None), in place of what was kept of the rows
        ``replacing`` names (those no longer in the scope are not among the rows read)."""
        import numpy as np

        for seq in replacing:
            self._drop(seq)
        kept = [row for row in rows if row[2] is not None and len(row[2]) == self.dimensions * 2]
        # A vector of another length (a damaged row) is left out rather than breaking the search.
        self.missing_seqs.update(int(row[0]) for row in rows if row[2] is None)
        needed = self.count + len(kept)
        if self._matrix is None or self._seqs is None or needed > len(self._seqs):
            self.resize(max(needed + needed // 2, 64))
        if not kept or self._matrix is None or self._seqs is None:
            return
        end = self.count + len(kept)
        block = np.frombuffer(b"".join(bytes(row[2]) for row in kept if row[2] is not None),
                              dtype=storage.VECTOR_DTYPE)
        self._matrix[self.count:end] = block.reshape(len(kept), self.dimensions)
        self._seqs[self.count:end] = [row[0] for row in kept]
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
        if self._matrix is not None and self._seqs is not None:
            matrix[:self.count] = self._matrix[:self.count]
            seqs[:self.count] = self._seqs[:self.count]
        self._matrix, self._seqs = matrix, seqs

    def _drop(self, seq: int) -> None:
        self.missing_seqs.discard(seq)
        at = self.position.pop(seq, None)
        if at is None or self._matrix is None or self._seqs is None:
            return
        last = self.count - 1
        if at != last:  # the last row takes the dropped row's place
            self._matrix[at] = self._matrix[last]
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
    joins, where, params = target.scope_sql()
    sql = (f"SELECT m.seq, m.compound, v.vector FROM {target.table} m {joins} LEFT JOIN {kind.vectors} v "
           f"ON v.{kind.key} = m.id AND v.model = %s WHERE {where}")
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
    with changes.snapshot(target.alias):
        vectors = Vectors(dimensions=dimensions, at=changes.position(target.alias))
        _read(target, model_key, vectors)
    vectors.resize(vectors.count + vectors.count // 16 + 64)
    return vectors


def _refresh(target: Target, model_key: str, vectors: Vectors) -> bool:
    """Re-reads the scope's rows written since ``vectors`` was last brought up to date; False when that cannot
    be done row by row (the log was pruned past it, or a prescription changed whose pills are in scope)."""
    marker = change_marker(target.alias)
    if marker is not None and marker == vectors.marker:
        return True  # nothing in the file changed since: the cheap check, before the log's query
    found = changes.since(target.alias, vectors.at)
    if found is None:
        return False
    entries, at = found
    if target.kind == "pill" and any(entry.kind == "prescription" for entry in entries):
        return False
    kinds = {target.kind, f"{target.kind}_vector"}
    seqs = sorted({entry.seq for entry in entries if entry.kind in kinds and entry.seq is not None})
    if seqs:
        _read(target, model_key, vectors, seqs)
    vectors.at, vectors.marker = at, marker
    return True


def vectors_of(target: Target, model_key: str, dimensions: int) -> Vectors:
    """The caller's rows' vectors in one database, read once and then kept in step with the writes."""
    key = ("vectors", target.alias, target.kind, target.owner_id, target.bottles, model_key, dimensions)
    vectors = _vectors.get(key)
    if vectors is not None:
        with vectors.lock:
            if _refresh(target, model_key, vectors):
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
        return _closest(vectors, query_vector, compound, lexical, floor)


def _closest(vectors: Vectors, query_vector: np.ndarray, compound: str | None, lexical: list[Candidate],
             floor: float) -> tuple[list[Candidate], Spread]:
    import numpy as np

    if not vectors.count or vectors.dimensions != query_vector.shape[0]:
        return [], Spread()
    similarity = vectors.matrix @ query_vector
    deviation = float(similarity.std())
    best = float(similarity.max())
    spread = Spread(best, (best - float(similarity.mean())) / deviation if deviation > 1e-9 else 0.0,
                    len(similarity))
    for candidate in lexical:
        at = vectors.position.get(candidate.seq)
        if at is not None:
            candidate.similarity = float(similarity[at])
    if compound is not None:
        similarity = np.where(np.array([c == compound for c in vectors.compounds]), similarity, -1.0)
    seen = {candidate.seq for candidate in lexical}
    count = min(SEMANTIC_CANDIDATES + len(seen), len(similarity))
    top = np.argpartition(-similarity, count - 1)[:count]
    top = top[np.lexsort((-vectors.seqs[top], -similarity[top]))]  # ties: the newest first, as the words' order
    out: list[Candidate] = []
    for at in top:
        value = float(similarity[at])
        if value < floor or len(out) >= SEMANTIC_CANDIDATES:
            break
        seq = int(vectors.seqs[at])
        if seq not in seen:
            out.append(Candidate(seq, 0.0, 0.0, False, value))
    return out, spread

"""The pass by meaning over one database: the caller's rows' vectors (cached), compared with the query's
embedding (``pillbox.embeddings``): the words' candidates get their cosine, and rows close enough join them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connections

from base.lru import BoundedLru
from pillbox.databases import change_marker
from pillbox.embeddings import backfill, storage
from pillbox.search.lexical import Candidate
from pillbox.search.targets import Target

if TYPE_CHECKING:
    import numpy as np

    from pillbox.embeddings.embedders import Embedder

SEMANTIC_CANDIDATES = 30  # rows found by meaning alone that may join the words' candidates, per database


@dataclass
class Vectors:
    seqs: np.ndarray  # int64, one per row
    compounds: list[str]
    matrix: np.ndarray  # float32 [rows, dimensions], unit rows
    position: dict[int, int]
    missing: int  # the scope's live rows without a vector of this model


VECTOR_CACHE_ENTRIES = 64
VECTOR_CACHE_BYTES = 256 * 1024 * 1024
_vectors: BoundedLru[tuple[Any, ...], tuple[Any, Vectors]] = BoundedLru(
    max_items=VECTOR_CACHE_ENTRIES, max_bytes=VECTOR_CACHE_BYTES
)


def vectors_of(target: Target, model_key: str, dimensions: int) -> Vectors:
    """The caller's rows' vectors in one database, cached until the rows or their vectors change."""
    import numpy as np  # here, not at import: a stdio server's cold start does not pay for it
    kind = storage.KINDS[target.kind]
    joins, where, params = target.scope_sql()
    body = (f"FROM {target.table} m {joins} LEFT JOIN {kind.vectors} v ON v.{kind.key} = m.id AND v.model = %s "
            f"WHERE {where}")
    params = [model_key, *params]
    key = ("vectors", target.alias, target.kind, target.owner_id, target.bottles, model_key, dimensions)
    connection = connections[target.alias]
    with connection.cursor() as cursor:
        if target.on_postgres:
            cursor.execute(f"SELECT COUNT(*), COUNT(v.{kind.key}), MAX(m.seq), MAX(m.updated_at) {body}", params)
            version: tuple[Any, ...] = tuple(cursor.fetchone())
        else:
            # Nothing in the file changed since the last read (by this connection or another): the cheap check,
            # where counting the scope's rows would cost more than the search at 20,000 pills.
            version = change_marker(target.alias) or ()
        cached = _vectors.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        if not target.on_postgres:
            cursor.execute(f"SELECT COUNT(*) - COUNT(v.{kind.key}) {body}", params)
            missing = cursor.fetchone()[0]
        else:
            missing = version[0] - version[1]
        # In a stable order, so that rows of equal cosine rank alike whenever the vectors were written.
        cursor.execute(f"SELECT m.seq, m.compound, v.vector {body} AND v.{kind.key} IS NOT NULL ORDER BY m.seq",
                       params)
        # A vector of another length (a damaged row) is left out rather than breaking the search.
        fetched = [row for row in cursor.fetchall() if len(row[2]) == dimensions * 2]
    seqs = np.array([row[0] for row in fetched], dtype=np.int64)
    if fetched:
        matrix = np.frombuffer(b"".join(bytes(row[2]) for row in fetched), dtype=storage.VECTOR_DTYPE)
        matrix = matrix.reshape(len(fetched), -1).astype(np.float32)
    else:
        matrix = np.zeros((0, 0), dtype=np.float32)
    found = Vectors(seqs, [row[1] for row in fetched], matrix, {int(seq): i for i, seq in enumerate(seqs)},
                    missing=missing)
    _vectors.put(key, (version, found), matrix.nbytes + seqs.nbytes + 100 * len(fetched))
    return found


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

        return self.rows > 1 and self.z >= math.sqrt(2 * math.log(self.rows)) + margin


def semantic_pass(target: Target, model: Embedder, query_vector: np.ndarray, compound: str | None,
                  lexical: list[Candidate], floor: float) -> tuple[list[Candidate], Spread]:
    """Gives the lexical candidates their similarity; returns the rows found by meaning alone (above the floor)
    and the cosine's spread over the scope."""
    import numpy as np
    vectors = vectors_of(target, model.key, query_vector.shape[0])
    if 0 < vectors.missing <= backfill.BATCH:
        # Rows stored a moment ago whose backfill has not run yet: one model run (a few ms) makes them findable.
        if backfill.catch_up(target.alias, target.kind):
            vectors = vectors_of(target, model.key, query_vector.shape[0])
    if vectors.missing:
        backfill.schedule_backfill(target.alias, target.kind)
    if not len(vectors.seqs) or vectors.matrix.shape[1] != query_vector.shape[0]:
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

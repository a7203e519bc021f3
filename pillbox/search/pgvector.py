"""The pass by meaning in SQL, on a PostgreSQL database with pgvector (``pillbox.embeddings.halfvec``): the
closest rows of the caller's scope come from the HNSW index (or, in a small scope, from an exact scan), their
cosine re-scored exactly in float32 as the in-process pass computes it, under the same scope as the words' search.

What the index cannot give is how the query's cosine is spread over the whole scope (``meaning.Spread``): its
mean and deviation come from the scope's first two moments (of an even sample of 10,000 rows in a larger scope),
read once (``Moments``) and kept while the scope has changed by less than a hundredth since; then read again.
Whether the database has pgvector is asked at run time (``state``), and said by ``/readyz`` and the log; without
it the in-process pass runs, unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connections, transaction

from base.lru import BoundedLru
from pillbox.embeddings import backfill, halfvec, storage
from pillbox.search import changes
from pillbox.search.lexical import Candidate
from pillbox.search.targets import Target, marks

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

EXACT_BELOW = 2_000  # a scope this small is scanned exactly (7 ms), never approximate
STALE_SHARE = 100  # the moments are read again once more than 1/STALE_SHARE of the scope's rows changed
READ_BLOCK = 10_000
SAMPLE = 10_000  # vectors of a scope read for its moments, at most (about)
EF_SEARCH_LEAST, EF_SEARCH_FACTOR, EF_SEARCH_ROWS = 100, 16, 200
RECHECK_SECONDS = 30.0  # how long a database's state is trusted (``manage.py pgvector enable`` while serving)
_states: dict[tuple[str, str], tuple[float, str]] = {}
_announced: set[tuple[str, str]] = set()


def state(alias: str, *, fresh: bool = False) -> str:
    """``on`` (search by meaning runs in this database), ``off`` (the extension is installed, the column not
    made: ``manage.py pgvector enable``), ``available`` (the server has the extension), ``absent``, or
    ``not postgresql``."""
    return _state_of(connections[alias], fresh=fresh)


def _state_of(connection: Any, *, fresh: bool = False) -> str:
    if connection.vendor != "postgresql":
        return "not postgresql"
    alias = connection.alias
    key = (alias, str(connection.settings_dict["NAME"]))
    known = _states.get(key)
    if known is not None and not fresh and time.monotonic() - known[0] < RECHECK_SECONDS:
        return known[1]
    found = halfvec.extension_state(connection)
    if found == "installed":
        found = "on" if halfvec.column_present(connection) else "off"
    _states[key] = (time.monotonic(), found)
    if key not in _announced or (known is not None and known[1] != found):
        _announced.add(key)
        logger.info("pgvector in database %s: %s", alias, DESCRIPTIONS[found])
    return found


DESCRIPTIONS = {
    "on": "on, search by meaning runs in SQL (HNSW index over halfvec)",
    "off": "installed but not enabled (manage.py pgvector enable); search by meaning runs in the process",
    "available": "available on the server, not created (manage.py pgvector enable); search by meaning runs in "
                 "the process",
    "absent": "not on this server; search by meaning runs in the process",
    "not postgresql": "not PostgreSQL; search by meaning runs in the process",
}


def serves(target: Target, model_key: str, dimensions: int) -> bool:
    return dimensions == halfvec.DIMENSIONS and target.on_postgres and state(target.alias) == "on"


@dataclass(eq=False)
class Moments:
    """A scope's row count and the sums of its vectors and of their outer products: for any query, the mean of
    its cosine over the scope is q·total/count and its variance q·second·q/count minus the mean squared."""

    at: changes.Position
    count: int = 0
    total: np.ndarray | None = None  # float64 [dimensions]
    second: np.ndarray | None = None  # float64 [dimensions, dimensions]
    missing_seqs: set[int] = field(default_factory=set)  # live rows of the scope without a vector of this model
    changed: int = 0  # rows written since the read
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, blobs: list[bytes]) -> None:
        import numpy as np

        if not blobs:
            return
        block = np.frombuffer(b"".join(blobs), dtype=storage.VECTOR_DTYPE).reshape(len(blobs), -1)
        block = block.astype(np.float32)
        if self.total is None or self.second is None:
            self.total = np.zeros(block.shape[1])
            self.second = np.zeros((block.shape[1], block.shape[1]))
        self.total += block.sum(axis=0, dtype=np.float64)
        self.second += block.T @ block
        self.count += len(blobs)

    def scale(self, rows: int) -> None:
        """The sums of a sample stand for a scope of ``rows`` vectors."""
        if self.count and self.total is not None and self.second is not None and rows != self.count:
            self.total *= rows / self.count
            self.second *= rows / self.count
            self.count = rows

    def spread(self, query: np.ndarray, best: float) -> tuple[float, float, int]:
        """(best, z, rows) as the in-process pass computes them over the whole scope."""
        if not self.count or self.total is None or self.second is None:
            return 0.0, 0.0, 0
        mean = float(query @ self.total) / self.count
        deviation = max(float(query @ self.second @ query) / self.count - mean * mean, 0.0) ** 0.5
        return best, (best - mean) / deviation if deviation > 1e-9 else 0.0, self.count


_moments: BoundedLru[tuple[Any, ...], Moments] = BoundedLru(max_items=256, max_bytes=512 * 1024 * 1024)


def _scoped(target: Target) -> tuple[str, list[Any]]:
    """FROM and WHERE of the scope's rows (``m``) with their vectors (``v``), and its parameters."""
    kind = storage.KINDS[target.kind]
    joins, where, params = target.shown_sql()  # the rows a search may answer, in its time window
    return (f"FROM {kind.vectors} v JOIN {target.table} m ON m.id = v.{kind.key} {joins} "
            f"WHERE v.model = %s AND {where}"), params


def _read(target: Target, model_key: str) -> Moments:
    """The scope's count and rows without a vector, and the moments of its vectors: of every one in a scope of up
    to ``SAMPLE`` rows, else of an even sample of about that many (rows whose seq is a multiple of a stride): the
    mean and deviation of a cosine over 10,000 rows are within a percent of the whole's, and a scope of 200,000 is
    not sent whole to each process."""
    kind = storage.KINDS[target.kind]
    # Kept per scope, whatever the time: a window's search has the scope's mean and deviation.
    joins, where, params = target.shown_sql(windowed=False)
    length = halfvec.DIMENSIONS * 2
    with changes.snapshot(target.alias), connections[target.alias].cursor() as cursor:
        moments = Moments(at=changes.position(target.alias))
        cursor.execute(f"SELECT m.seq, v.{kind.key} IS NOT NULL FROM {target.table} m {joins} "
                       f"LEFT JOIN {kind.vectors} v ON v.{kind.key} = m.id AND v.model = %s WHERE {where}",
                       [model_key, *params])
        rows = cursor.fetchall()
        moments.missing_seqs = {int(seq) for seq, has_vector in rows if not has_vector}
        stride = max(1, (len(rows) - len(moments.missing_seqs)) // SAMPLE)
        cursor.execute(f"SELECT v.vector FROM {target.table} m {joins} JOIN {kind.vectors} v "
                       f"ON v.{kind.key} = m.id AND v.model = %s WHERE {where} AND m.seq %% %s = 0 "
                       f"AND length(v.vector) = %s", [model_key, *params, stride, length])
        while block := cursor.fetchmany(READ_BLOCK):
            moments.take([bytes(row[0]) for row in block])
        moments.scale(len(rows) - len(moments.missing_seqs))
    return moments


def _refresh(target: Target, model_key: str, moments: Moments) -> bool:
    """Follows the change log: False when the moments should be read again (the log no longer reaches back to
    them, a prescription changed, or too many rows changed since)."""
    found = changes.rows_since(target.alias, moments.at, target.kind)
    if found is None:
        return False
    seqs, at = found
    moments.changed += len(seqs)
    if moments.changed * STALE_SHARE > moments.count:
        return False
    if seqs:
        kind = storage.KINDS[target.kind]
        joins, where, params = target.shown_sql(windowed=False)
        # A row's vector written or dropped is an entry of its own: the rows not named kept what they were.
        with connections[target.alias].cursor() as cursor:
            cursor.execute(f"SELECT m.seq FROM {target.table} m {joins} LEFT JOIN {kind.vectors} v "
                           f"ON v.{kind.key} = m.id AND v.model = %s WHERE {where} AND v.{kind.key} IS NULL "
                           f"AND m.seq IN ({marks(len(seqs))})", [model_key, *params, *seqs])
            moments.missing_seqs.difference_update(seqs)
            moments.missing_seqs.update(int(row[0]) for row in cursor.fetchall())
    moments.at = at
    return True


def moments_of(target: Target, model_key: str) -> Moments:
    key = ("moments", target.alias, target.kind, target.owner_id, target.bottles, target.include_superseded,
           model_key)
    moments = _moments.get(key)
    if moments is not None:
        with moments.lock:
            if _refresh(target, model_key, moments):
                return moments
    moments = _read(target, model_key)
    _moments.put(key, moments, 8 * (halfvec.DIMENSIONS + 1) ** 2 + 16 * len(moments.missing_seqs))
    return moments


def literal(query: np.ndarray) -> str:
    return "[" + ",".join(repr(float(value)) for value in query) + "]"


def closest(target: Target, model_key: str, query: np.ndarray, compound: str | None, lexical: list[Candidate],
            floor: float, wanted: int) -> tuple[list[Candidate], tuple[float, float, int]]:
    """Gives the lexical candidates their similarity; returns up to ``wanted`` rows found by meaning alone (above
    the floor) and the spread (best, z, rows) of the query's cosine over the scope."""
    moments = moments_of(target, model_key)
    if 0 < len(moments.missing_seqs) <= backfill.BATCH:
        # Rows stored a moment ago whose backfill has not run yet: one model run makes them findable.
        if backfill.catch_up(target.alias, target.kind, sorted(moments.missing_seqs)):
            moments = moments_of(target, model_key)
    if moments.missing_seqs:
        backfill.schedule_backfill(target.alias, target.kind)
    vector = literal(query)
    seen = {candidate.seq: candidate for candidate in lexical}
    with transaction.atomic(using=target.alias), connections[target.alias].cursor() as cursor:
        if seen:
            scope, params = _scoped(target)
            cursor.execute(f"SELECT m.seq, -(v.embedding::vector <#> %s::vector) {scope} "
                           f"AND m.seq IN ({marks(len(seen))})", [vector, model_key, *params, *seen])
            for seq, similarity in cursor.fetchall():
                seen[seq].similarity = float(similarity)
        rows = _nearest(cursor, target, model_key, vector, compound, len(seen) + wanted, moments.count)
        best = rows[0][1] if rows and compound is None else max(
            (row[1] for row in _nearest(cursor, target, model_key, vector, None, 1, moments.count)), default=0.0)
    found: list[Candidate] = []
    for seq, similarity in rows:
        if similarity < floor or len(found) >= wanted:
            break
        if seq not in seen:
            found.append(Candidate(seq, 0.0, 0.0, False, similarity))
    return found, moments.spread(query, best)


def search_breadth(count: int, scope_rows: int) -> int:
    """``hnsw.ef_search`` for ``count`` rows wanted: the graph's candidate list, many times what is kept, and
    longer in a larger scope (bench/pgvector.py: recall@30 0.989 at 20,000 rows with 480; at 200,000, 0.80 with
    480 and 0.86 with 1,000, for 4 ms more), within pgvector's bound of 1,000."""
    return min(1000, max(EF_SEARCH_LEAST, EF_SEARCH_FACTOR * count, scope_rows // EF_SEARCH_ROWS))


def _nearest(cursor: Any, target: Target, model_key: str, vector: str, compound: str | None, count: int,
             scope_rows: int) -> list[tuple[int, float]]:
    """The ``count`` rows of the scope closest to the query, best first (ties: the newest first, as the words'
    order): from the HNSW index in a large scope, re-scored exactly; by an exact scan in a small one, or when
    the index's scan ends before it found ``count`` rows of the scope."""
    scope, params = _scoped(target)
    if compound is not None:
        scope, params = f"{scope} AND m.compound = %s", [*params, compound]
    select = f"SELECT m.seq, -(v.embedding::vector <#> %s::vector) AS similarity {scope}"
    rows: list[tuple[int, float]] = []
    if scope_rows >= EXACT_BELOW:
        # Filtered by scope, the index is walked on until enough rows pass (iterative scans, pgvector 0.8), in a
        # nearly sorted order that the exact score puts right.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                       "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                       [str(search_breadth(count, scope_rows))])
        cursor.execute(f"{select} ORDER BY v.embedding <=> %s::halfvec LIMIT %s",
                       [vector, model_key, *params, vector, count])
        rows = [(int(seq), float(similarity)) for seq, similarity in cursor.fetchall()]
    if len(rows) < min(count, scope_rows):
        cursor.execute(f"{select} ORDER BY similarity DESC, m.seq DESC LIMIT %s",
                       [vector, model_key, *params, count])
        rows = [(int(seq), float(similarity)) for seq, similarity in cursor.fetchall()]
    return sorted(rows, key=lambda row: (-row[1], -row[0]))


def announce(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Says once per process, when the first connection to a PostgreSQL database opens, whether search by meaning
    runs in it (``connection_created``)."""
    if connection.vendor == "postgresql" and (connection.alias, str(connection.settings_dict["NAME"])) \
            not in _announced:
        try:
            _state_of(connection)
        except Exception as exc:  # never stands in the way of a connection
            logger.warning("pgvector: could not tell whether database %s has it (%s)", connection.alias, exc)


def report() -> str | None:
    """What ``/readyz`` says of the global database: nothing on SQLite."""
    return None if connections["default"].vendor != "postgresql" else state("default")

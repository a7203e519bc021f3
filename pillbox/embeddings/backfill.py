"""Vectors kept up to date: a store or revise drops the row's old vector (``row_changed``) and the background
backfill writes the missing ones (``backfill``, ``schedule_backfill``), so no agent's call waits for the model."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence

from django.db import connections, transaction

from base.memory import release_memory
from pillbox.embeddings.loader import embedder, enabled
from pillbox.embeddings.storage import KINDS, db_id, missing, write

logger = logging.getLogger(__name__)

CHUNK = 256  # rows read (and written, in one transaction) per backfill step
BATCH = 16  # rows per model run: a chunk sorted by length, so little of each batch is padding


def document(title: str, content: str) -> str:
    return f"{title}\n{content}"


def row_changed(alias: str, kind_name: str, row_id: uuid.UUID | str, *, stored: bool = False) -> None:
    """After a store or revise: the row's old vector goes (a revise) and the background backfill writes the new
    one once the row is committed, so the caller never waits for the model. Never fails the caller's write."""
    if not enabled():
        return
    kind = KINDS[kind_name]
    try:
        if not stored:
            with connections[alias].cursor() as cursor:
                cursor.execute(f"DELETE FROM {kind.vectors} WHERE {kind.key} = %s", [db_id(alias, row_id)])
    except Exception as exc:  # the row is written; a stale vector is replaced by the backfill
        logger.warning("Dropping a %s's old vector failed (%s); the backfill will replace it", kind_name, exc)
    transaction.on_commit(lambda: _after_write(alias, kind_name, row_id), using=alias)


def _after_write(alias: str, kind_name: str, row_id: uuid.UUID | str) -> None:
    from django.db.backends.sqlite3.base import DatabaseWrapper as SQLite

    connection = connections[alias]
    if isinstance(connection, SQLite) and connection.is_in_memory_db():
        # An in-memory database (the test suite's) lives in SQLite's shared cache, where a second connection's
        # write is refused at once (SQLITE_LOCKED, no busy wait): a backfill thread would make the next store
        # fail. There the writer's own thread embeds the row; files and PostgreSQL use the background backfill.
        _backfill_once(alias, kind_name, [row_id])
    else:
        # The row written, not the table: finding the rows without a vector costs a scan of every row.
        schedule_backfill(alias, kind_name, [row_id])


def backfill(alias: str, kind_name: str, *, limit: int | None = None,
             rows: Sequence[uuid.UUID | str | int] | None = None) -> int:
    """Embed live rows that have no vector of the current model, newest first (among ``rows``, ids or seqs,
    when given); returns how many."""
    model = embedder()
    if model is None:
        return 0
    kind = KINDS[kind_name]
    done = 0
    import numpy as np

    while limit is None or done < limit:
        step = CHUNK if limit is None else min(CHUNK, limit - done)
        found = missing(alias, kind_name, model.key, step, rows=rows)
        if not found:
            break
        # Similar lengths together: padding to the longest text of a batch is wasted work.
        found.sort(key=lambda row: len(row[1]) + len(row[2]))
        texts = [document(title, content) for _, title, content in found]
        vectors = np.concatenate([model.embed(texts[at:at + BATCH]) for at in range(0, len(texts), BATCH)])
        write(alias, kind, model.key, [row_id for row_id, _, _ in found], vectors)
        done += len(found)
        if rows is not None and len(found) < step:
            break  # every one of the rows named was embedded
    if done:
        release_memory()  # a batch's activations are tens of MB: the heap would keep them
    return done


def catch_up(alias: str, kind_name: str, seqs: Sequence[int]) -> int:
    """A search's own small backfill (at most one batch: rows stored a moment ago, by their ``seqs``), so that a
    store followed at once by a search finds its row by meaning; a failure leaves them to the background
    backfill."""
    try:
        return backfill(alias, kind_name, limit=BATCH, rows=list(seqs)[:BATCH])
    except Exception as exc:  # e.g. a busy database: this answer goes without those rows
        logger.warning("Embedding new %ss during a search failed (%s); the backfill will retry", kind_name, exc)
        return 0


_backfills: dict[tuple[str, str], threading.Thread] = {}
# What a running backfill does next: the rows named (their ids), or every row without a vector (None).
_wanted: dict[tuple[str, str], set[uuid.UUID | str] | None] = {}
_backfills_lock = threading.Lock()


BACKFILL_ATTEMPTS = 3


def _backfill_once(alias: str, kind_name: str, rows: Sequence[uuid.UUID | str] | None = None) -> None:
    for attempt in range(1, BACKFILL_ATTEMPTS + 1):
        try:
            backfill(alias, kind_name, rows=rows)
            return
        except Exception as exc:  # e.g. a busy database: try again shortly, then leave it to a later search
            if attempt == BACKFILL_ATTEMPTS:
                logger.warning("Backfill of %s vectors in %s stopped: %s", kind_name, alias, exc)
            else:
                time.sleep(0.2 * attempt)


def _backfill_thread(alias: str, kind_name: str) -> None:
    key = (alias, kind_name)
    try:
        while True:
            with _backfills_lock:
                # Taken and forgotten under one lock: a row stored from here on is wanted anew, and once nothing
                # is wanted the thread is gone, so the next store starts another.
                if key not in _wanted:
                    del _backfills[key]
                    return
                wanted = _wanted.pop(key)
            _backfill_once(alias, kind_name, None if wanted is None else sorted(wanted, key=str))
    finally:
        with _backfills_lock:
            if _backfills.get(key) is threading.current_thread():
                del _backfills[key]  # only if the loop above broke off
        connections[alias].close()


def schedule_backfill(alias: str, kind_name: str,
                      rows: Sequence[uuid.UUID | str] | None = None) -> threading.Thread | None:
    """Start the background backfill of one database: of the ``rows`` named (ids), or of every row without a
    vector; one already running goes round once more for them."""
    if not enabled():
        return None
    key = (alias, kind_name)
    with _backfills_lock:
        if rows is None:
            _wanted[key] = None
        else:
            wanted = _wanted.setdefault(key, set())
            if wanted is not None:
                wanted.update(rows)
        running = _backfills.get(key)
        if running is not None:
            return running
        thread = threading.Thread(target=_backfill_thread, args=key, daemon=True,
                                  name=f"pillbox-backfill-{kind_name}")
        _backfills[key] = thread
        thread.start()
        return thread


def wait_for_backfills(timeout: float = 60.0) -> None:
    """Join every running backfill (tests and benchmarks)."""
    for thread in list(_backfills.values()):
        thread.join(timeout)

"""Where the vectors are kept: one float16 row per pill or capsule, in the row's own database (``KINDS``), written
(``write``) and found missing (``missing``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connections, transaction

if TYPE_CHECKING:
    import numpy as np

VECTOR_DTYPE = "float16"


@dataclass(frozen=True)
class Kind:
    table: str
    vectors: str
    key: str  # the vector table's column naming the row


KINDS = {
    "pill": Kind("pillbox_pill", "pillbox_pill_vector", "pill_id"),
    "capsule": Kind("pillbox_capsule", "pillbox_capsule_vector", "capsule_id"),
}


def db_id(alias: str, value: uuid.UUID | str) -> uuid.UUID | str:
    """SQLite keeps UUIDs as 32 hex digits; PostgreSQL has a uuid type."""
    if connections[alias].vendor == "postgresql":
        return value
    return value.hex if isinstance(value, uuid.UUID) else value


def write(alias: str, kind: Kind, model_key: str, ids: Sequence[uuid.UUID | str], vectors: np.ndarray) -> None:
    blobs = [vector.astype(VECTOR_DTYPE).tobytes() for vector in vectors]
    db_ids = [db_id(alias, row_id) for row_id in ids]
    # An upsert (SQLite and PostgreSQL alike): a search's catch-up and the background backfill may embed the same
    # new row at once, and on PostgreSQL a delete-then-insert of both would collide on the key.
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {kind.vectors} ({kind.key}, model, vector) VALUES (%s, %s, %s) "
            f"ON CONFLICT ({kind.key}) DO UPDATE SET model = excluded.model, vector = excluded.vector",
            [(row_id, model_key, blob) for row_id, blob in zip(db_ids, blobs, strict=True)],
        )


def missing(alias: str, kind_name: str, model_key: str, limit: int, *,
            rows: Sequence[uuid.UUID | str | int] | None = None) -> list[tuple[uuid.UUID | str, str, str]]:
    """Live rows without a vector of this model, newest first: among ``rows`` (their ids, or their seqs as
    ints) when given, a look-up of those few; otherwise a scan of the table, which costs a second at 200,000
    rows when fewer than ``limit`` are missing."""
    kind = KINDS[kind_name]
    among, params = "", []
    if rows is not None:
        column = "m.seq" if rows and isinstance(rows[0], int) else "m.id"
        among = f"AND {column} IN ({', '.join(['%s'] * len(rows))}) "
        params = [row if isinstance(row, int) else db_id(alias, row) for row in rows]
        if not rows:
            return []
    with connections[alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.title, m.content FROM {kind.table} m LEFT JOIN {kind.vectors} v "
            f"ON v.{kind.key} = m.id AND v.model = %s WHERE v.{kind.key} IS NULL AND m.deleted_at IS NULL "
            f"{among}ORDER BY m.seq DESC LIMIT %s",
            [model_key, *params, limit],
        )
        found: list[tuple[uuid.UUID | str, str, str]] = cursor.fetchall()
        return found

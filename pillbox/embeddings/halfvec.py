"""The vectors as PostgreSQL keeps them for pgvector: an ``embedding halfvec(384)`` column beside each float16
``vector`` (``pillbox_pill_vector``, ``pillbox_capsule_vector``) with an HNSW index, so that a search by meaning
runs in SQL (``pillbox.search.pgvector``).

The column is filled by a trigger from the row's own ``vector``, whatever writes it (a store's backfill, a
revise's, an import, a restore of a dump): it is never out of step with the bytes the in-process search reads.
A discard, restore or purge needs nothing of its own: the search joins the row and keeps to live rows in scope,
and a purge deletes the vector row with its pill. Rows of another length (another model) get no embedding.

``enable`` and ``disable`` are what migration 0013 and ``manage.py pgvector`` run. Without the extension on the
server nothing here is done, and search by meaning stays in the process.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

DIMENSIONS = 384  # the bundled model's; vectors of another length are searched in the process
EXTENSION = "vector"
# Twice pgvector's defaults (16, 64): at 200,000 rows recall@30 0.94 against 0.86, for a build 1.4x as long
# (bench/pgvector.py --index-options).
HNSW_OPTIONS = "m = 32, ef_construction = 128"
# (vector table, its index)
TABLES = (("pillbox_pill_vector", "pillbox_pill_vector_hnsw"),
          ("pillbox_capsule_vector", "pillbox_capsule_vector_hnsw"))

# float16 little-endian bytes (numpy's, as storage.write keeps them) to a halfvec: pgvector has no cast from
# bytea. Sign, exponent and mantissa of each half, in float8 (numeric powers cost twice as much).
CONVERT = f"""
CREATE OR REPLACE FUNCTION pillbox_halfvec(b bytea) RETURNS halfvec LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT array_agg(CASE WHEN h & 31744 = 0 THEN (h & 1023) * 5.960464477539063e-08::float8
                        ELSE ((h & 1023) + 1024) * power(2::float8, ((h >> 10) & 31) - 25) END
                   * CASE WHEN h >= 32768 THEN -1 ELSE 1 END ORDER BY i)::real[]::halfvec
  FROM (SELECT i, get_byte(b, 2 * i) + 256 * get_byte(b, 2 * i + 1) AS h
        FROM generate_series(0, length(b) / 2 - 1) AS i) AS halves
$$;
CREATE OR REPLACE FUNCTION pillbox_embedding() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.embedding := CASE WHEN length(NEW.vector) = {DIMENSIONS * 2} THEN pillbox_halfvec(NEW.vector) END;
  RETURN NEW;
END $$;
"""


def extension_state(connection: Any) -> str:
    """``installed``, ``available`` (the server has it; not created in this database) or ``absent``."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT installed_version IS NOT NULL FROM pg_available_extensions WHERE name = %s",
                       [EXTENSION])
        row = cursor.fetchone()
    return "absent" if row is None else "installed" if row[0] else "available"


def column_present(connection: Any) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
                       "AND table_name = %s AND column_name = 'embedding'", [TABLES[0][0]])
        row = cursor.fetchone()
    return bool(row and row[0])


def enable(connection: Any) -> str:
    """Creates the extension (when the server has it and this role may), the columns, their trigger and index,
    and fills the columns from the vectors already stored. Returns what was done, for the caller to say."""
    if connection.vendor != "postgresql":
        return "not PostgreSQL: search by meaning stays in the process"
    state = extension_state(connection)
    if state == "absent":
        return "the server has no pgvector extension: search by meaning stays in the process"
    if state == "available":
        try:
            with connection.cursor() as cursor:
                cursor.execute("SAVEPOINT pillbox_pgvector")
                cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
                cursor.execute("RELEASE SAVEPOINT pillbox_pgvector")
        except Exception as exc:  # e.g. a role that may not create extensions: a database owner must
            with connection.cursor() as cursor:
                cursor.execute("ROLLBACK TO SAVEPOINT pillbox_pgvector")
            return f"CREATE EXTENSION vector was refused ({exc}); search by meaning stays in the process"
    with connection.cursor() as cursor:
        cursor.execute(CONVERT)
        for table, index in TABLES:
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS embedding halfvec({DIMENSIONS})")
            # Filled before the index is built: one build is faster than an insert per row into the graph.
            cursor.execute(f"UPDATE {table} SET embedding = pillbox_halfvec(vector) "
                           f"WHERE embedding IS NULL AND length(vector) = {DIMENSIONS * 2}")
            cursor.execute(f"CREATE OR REPLACE TRIGGER {table}_embedding BEFORE INSERT OR UPDATE OF vector "
                           f"ON {table} FOR EACH ROW EXECUTE FUNCTION pillbox_embedding()")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {index} ON {table} "
                           f"USING hnsw (embedding halfvec_cosine_ops) WITH ({HNSW_OPTIONS})")
    return "pgvector on: search by meaning runs in the database"


def disable(connection: Any) -> str:
    """Drops the columns, their trigger and index, and the functions; the extension stays (other databases or
    applications of the server may use it: ``DROP EXTENSION vector`` is the owner's choice)."""
    if connection.vendor != "postgresql" or extension_state(connection) != "installed":
        return "nothing to undo: search by meaning runs in the process"
    with connection.cursor() as cursor:
        for table, _ in TABLES:
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_embedding ON {table}")
            cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS embedding")  # its index goes with it
        cursor.execute("DROP FUNCTION IF EXISTS pillbox_embedding()")
        cursor.execute("DROP FUNCTION IF EXISTS pillbox_halfvec(bytea)")
    return "pgvector off: search by meaning runs in the process"

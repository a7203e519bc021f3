"""A log of the writes a search's caches must follow (``pillbox.search.changes``).

The vectors and the vocabulary of a scope are kept in memory between searches. Before this log, any write to
the database threw them away, and the next search read the whole scope again (a second at 200,000 pills). Now
triggers note each write to a pill, a capsule, their vectors and the prescriptions that scope pills: the row's
``seq``, and for a revise, discard or purge the row's scope and text before the write (the words that may leave
the vocabulary). A cache reads the entries after the last one it applied and re-reads those rows only, in this
process or any other writing the same file or server.

The log keeps its last 10,000 entries; a cache further behind reads its scope whole, as before. On PostgreSQL,
whose entries may commit out of their ids' order, each entry also carries its transaction's id (``xact``): a
reader resumes from the oldest transaction still running when it last read.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

KEEP = 10_000  # entries kept: a cache further behind than this reads its scope whole
PRUNE_EVERY = 1_000

# (table, kind, the column that scopes a row)
ROWS = (("pillbox_pill", "pill", "prescription_id"), ("pillbox_capsule", "capsule", "owner_id"))
# (vector table, kind, its rows' table, the column naming the row)
VECTORS = (("pillbox_pill_vector", "pill_vector", "pillbox_pill", "pill_id"),
           ("pillbox_capsule_vector", "capsule_vector", "pillbox_capsule", "capsule_id"))
WATCHED = "title, content, compound, deleted_at"
# What a project's own file holds (no capsules): its triggers are the ones pillbox.judge lets a file have.
LOCAL_TABLES = frozenset({"pillbox_pill", "pillbox_pill_vector", "pillbox_prescription"})


def _old_entry(kind: str, scope: str) -> str:
    # The text is kept only for a row that was live: a discarded row's words are no longer in the vocabulary.
    return (f"INSERT INTO pillbox_change(kind, seq, scope, words) VALUES ('{kind}', old.seq, old.{scope}, "
            f"CASE WHEN old.deleted_at IS NULL THEN old.title || ' ' || old.content || ' ' || old.compound END);")


def sqlite_statements(tables: set[str], *, watched: str = WATCHED) -> list[str]:
    statements = [
        "CREATE TABLE IF NOT EXISTS pillbox_change (id INTEGER PRIMARY KEY AUTOINCREMENT, kind varchar(16) NOT NULL, "
        "seq bigint NULL, scope text NULL, words text NULL)",
        f"CREATE TRIGGER IF NOT EXISTS pillbox_change_prune AFTER INSERT ON pillbox_change "
        f"WHEN new.id % {PRUNE_EVERY} = 0 BEGIN DELETE FROM pillbox_change WHERE id <= new.id - {KEEP}; END",
        "CREATE TRIGGER IF NOT EXISTS pillbox_prescription_change_au AFTER UPDATE OF deleted_at, bottle_id "
        "ON pillbox_prescription BEGIN INSERT INTO pillbox_change(kind) VALUES ('prescription'); END",
        "CREATE TRIGGER IF NOT EXISTS pillbox_prescription_change_ad AFTER DELETE ON pillbox_prescription "
        "BEGIN INSERT INTO pillbox_change(kind) VALUES ('prescription'); END",
    ]
    for table, kind, scope in ROWS:
        if table not in tables:  # a project's file has no capsules
            continue
        statements += [
            f"CREATE TRIGGER IF NOT EXISTS {table}_change_ai AFTER INSERT ON {table} "
            f"BEGIN INSERT INTO pillbox_change(kind, seq) VALUES ('{kind}', new.seq); END",
            f"CREATE TRIGGER IF NOT EXISTS {table}_change_au AFTER UPDATE OF {watched}, {scope} ON {table} "
            f"BEGIN {_old_entry(kind, scope)} END",
            f"CREATE TRIGGER IF NOT EXISTS {table}_change_ad AFTER DELETE ON {table} "
            f"BEGIN {_old_entry(kind, scope)} END",
        ]
    for table, kind, rows, key in VECTORS:
        if table not in tables:
            continue
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")):
            statements.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_change_{event[0].lower()} AFTER {event} ON {table} BEGIN "
                f"INSERT INTO pillbox_change(kind, seq) SELECT '{kind}', seq FROM {rows} WHERE id = {row}.{key}; END")
    return statements


POSTGRES_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION pillbox_change_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO pillbox_change(kind, seq) VALUES (TG_ARGV[0], NEW.seq);
  ELSE
    INSERT INTO pillbox_change(kind, seq, scope, words) VALUES (TG_ARGV[0], OLD.seq, to_jsonb(OLD) ->> TG_ARGV[1],
      CASE WHEN OLD.deleted_at IS NULL THEN OLD.title || ' ' || OLD.content || ' ' || OLD.compound END);
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION pillbox_change_vector() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  row_id text := CASE WHEN TG_OP = 'DELETE' THEN to_jsonb(OLD) ->> TG_ARGV[2] ELSE to_jsonb(NEW) ->> TG_ARGV[2] END;
BEGIN
  EXECUTE format('INSERT INTO pillbox_change(kind, seq) SELECT %L, seq FROM %I WHERE id = $1::uuid',
                 TG_ARGV[0], TG_ARGV[1]) USING row_id;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION pillbox_change_scope() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO pillbox_change(kind) VALUES ('prescription');
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION pillbox_change_prune() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM pillbox_change WHERE id <= NEW.id - {KEEP};
  RETURN NULL;
END $$;
"""


def postgres_statements(tables: set[str], *, watched: str = WATCHED) -> list[str]:
    statements = [
        "CREATE TABLE IF NOT EXISTS pillbox_change (id bigserial PRIMARY KEY, "
        "xact xid8 NOT NULL DEFAULT pg_current_xact_id(), kind varchar(16) NOT NULL, seq bigint NULL, "
        "scope text NULL, words text NULL)",
        "CREATE INDEX IF NOT EXISTS pillbox_change_xact ON pillbox_change (xact)",
        POSTGRES_FUNCTIONS,
        f"CREATE OR REPLACE TRIGGER pillbox_change_prune AFTER INSERT ON pillbox_change FOR EACH ROW "
        f"WHEN (NEW.id % {PRUNE_EVERY} = 0) EXECUTE FUNCTION pillbox_change_prune()",
        "CREATE OR REPLACE TRIGGER pillbox_prescription_change AFTER UPDATE OF deleted_at, bottle_id OR DELETE "
        "ON pillbox_prescription FOR EACH ROW EXECUTE FUNCTION pillbox_change_scope()",
    ]
    for table, kind, scope in ROWS:
        if table not in tables:
            continue
        statements.append(
            f"CREATE OR REPLACE TRIGGER {table}_change AFTER INSERT OR UPDATE OF {watched}, {scope} OR DELETE "
            f"ON {table} FOR EACH ROW EXECUTE FUNCTION pillbox_change_row('{kind}', '{scope}')")
    for table, kind, rows, key in VECTORS:
        if table not in tables:
            continue
        statements.append(
            f"CREATE OR REPLACE TRIGGER {table}_change AFTER INSERT OR UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION pillbox_change_vector('{kind}', '{rows}', '{key}')")
    return statements


def _triggers_sqlite() -> list[str]:
    names = ["pillbox_change_prune", "pillbox_prescription_change_au", "pillbox_prescription_change_ad"]
    names += [f"{table}_change_{suffix}" for table, _, _ in ROWS for suffix in ("ai", "au", "ad")]
    names += [f"{table}_change_{suffix}" for table, _, _, _ in VECTORS for suffix in ("i", "u", "d")]
    return [f"DROP TRIGGER IF EXISTS {name}" for name in names] + ["DROP TABLE IF EXISTS pillbox_change"]


def _undo_postgres() -> list[str]:
    tables = ["pillbox_prescription", *(table for table, _, _ in ROWS), *(table for table, _, _, _ in VECTORS)]
    return [*(f"DROP TRIGGER IF EXISTS {table}_change ON {table}" for table in tables),
            "DROP TABLE IF EXISTS pillbox_change",
            *(f"DROP FUNCTION IF EXISTS pillbox_change_{name}()" for name in ("row", "vector", "scope", "prune"))]


def forwards(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    tables = set(connection.introspection.table_names())
    make = postgres_statements if connection.vendor == "postgresql" else sqlite_statements
    statements = make(tables)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def backwards(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    statements = _undo_postgres() if connection.vendor == "postgresql" else _triggers_sqlite()
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0010_postgres_words_and_lengths")]

    operations = [migrations.RunPython(forwards, backwards, hints={"model_name": "pill"})]

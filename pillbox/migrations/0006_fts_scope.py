"""Search cost that follows the caller's own rows in a database shared by many users.

SQLite: the global database's full-text indexes get a ``scope`` column holding whose row it is (a pill's bottle
id, a capsule's owner id), so a search ANDs the caller's scope with the query inside FTS5 and never ranks or
joins anyone else's matches. A project's own file leaves ``scope`` empty: everything in it is the caller's, and
an empty column adds no token to any row, so its ranking is exactly as before. The column is searched only by
name (``scope : …``); the query's words are kept to the other three columns.

PostgreSQL: a ``search_scope`` column (the same value, as text) beside ``search_vector``, kept by the same
trigger, and a GIN index over both (``btree_gin``) so the planner intersects the caller's scope with the words
inside the index. Without the extension, the scope column gets a btree index of its own.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.db import migrations

from pillbox.routers import is_local_alias

fulltext = import_module("pillbox.migrations.0002_fulltext")
postgres_search = import_module("pillbox.migrations.0003_postgres_search")

# What each row's scope is, as an SQL expression over the NEW (or OLD) row of its table.
PILL_SCOPE = "(SELECT bottle_id FROM pillbox_prescription WHERE id = {row}.prescription_id)"
CAPSULE_SCOPE = "{row}.owner_id"
SCOPES = {"pillbox_pill": PILL_SCOPE, "pillbox_capsule": CAPSULE_SCOPE}
# An update of one of these columns changes what the index holds for the row (SQLite's index also leaves out
# discarded rows).
INDEXED = {"pillbox_pill": "title, content, compound, prescription_id",
           "pillbox_capsule": "title, content, compound, owner_id"}
# A prescription moved to another bottle (nothing does this today) takes its pills' scope along.
MOVED = "UPDATE pillbox_pill SET prescription_id = prescription_id WHERE prescription_id = {row}.id;"


def sqlite_statements(table: str, *, scoped: bool) -> list[str]:
    fts = f"{table}_fts"
    scope = SCOPES[table].format(row="new") if scoped else "NULL"
    insert = (f"INSERT INTO {fts}(rowid, title, content, compound, scope) "
              f"SELECT new.seq, new.title, new.content, new.compound, {scope} WHERE new.deleted_at IS NULL;")
    backfill_scope = SCOPES[table].format(row="m") if scoped else "NULL"
    statements = [
        *(f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}" for suffix in ("ai", "au", "ad")),
        f"DROP TABLE IF EXISTS {fts}",
        f"CREATE VIRTUAL TABLE {fts} USING fts5(title, content, compound, scope, tokenize='{fulltext.TOKENIZER}')",
        f"CREATE TRIGGER {table}_fts_ai AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER {table}_fts_au AFTER UPDATE OF {INDEXED[table]}, deleted_at ON {table} "
        f"BEGIN DELETE FROM {fts} WHERE rowid = old.seq; {insert} END",
        f"CREATE TRIGGER {table}_fts_ad AFTER DELETE ON {table} BEGIN DELETE FROM {fts} WHERE rowid = old.seq; END",
        f"INSERT INTO {fts}(rowid, title, content, compound, scope) "
        f"SELECT m.seq, m.title, m.content, m.compound, {backfill_scope} FROM {table} m WHERE m.deleted_at IS NULL",
    ]
    if table == "pillbox_pill":
        statements.append("DROP TRIGGER IF EXISTS pillbox_prescription_fts_au")
        if scoped:
            statements.append("CREATE TRIGGER pillbox_prescription_fts_au AFTER UPDATE OF bottle_id ON "
                              f"pillbox_prescription BEGIN {MOVED.format(row='new')} END")
    return statements


def postgres_statements(cursor: Any, table: str) -> list[str]:
    scope = SCOPES[table].format(row="NEW")
    statements = [
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS search_scope text",
        f"CREATE OR REPLACE FUNCTION {table}_search_vector() RETURNS trigger AS "
        f"$$ BEGIN NEW.search_vector := {postgres_search.WEIGHTED}; NEW.search_scope := {scope}::text; "
        "RETURN NEW; END $$ LANGUAGE plpgsql",
        f"DROP TRIGGER IF EXISTS {table}_search ON {table}",
        f"CREATE TRIGGER {table}_search BEFORE INSERT OR UPDATE OF {INDEXED[table]} ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {table}_search_vector()",
        f"UPDATE {table} m SET search_scope = ({SCOPES[table].format(row='m')})::text",
    ]
    if table == "pillbox_pill":
        statements += [
            "CREATE OR REPLACE FUNCTION pillbox_prescription_moved() RETURNS trigger AS "
            f"$$ BEGIN {MOVED.format(row='NEW')} RETURN NEW; END $$ LANGUAGE plpgsql",
            "DROP TRIGGER IF EXISTS pillbox_prescription_moved ON pillbox_prescription",
            "CREATE TRIGGER pillbox_prescription_moved AFTER UPDATE OF bottle_id ON pillbox_prescription "
            "FOR EACH ROW EXECUTE FUNCTION pillbox_prescription_moved()",
        ]
    # The UPDATE above may leave deferred foreign-key checks pending, and PostgreSQL builds no index over them.
    statements.append("SET CONSTRAINTS ALL IMMEDIATE")
    if _btree_gin(cursor):
        # The two-column index answers a search by words alone too: 0003's index would only cost writes.
        statements += [f"CREATE INDEX IF NOT EXISTS {table}_search_scoped ON {table} "
                       "USING gin (search_scope, search_vector)", f"DROP INDEX IF EXISTS {table}_search"]
    else:
        statements.append(f"CREATE INDEX IF NOT EXISTS {table}_search_scope ON {table} (search_scope)")
    return [*statements, "SET CONSTRAINTS ALL DEFERRED"]


def _btree_gin(cursor: Any) -> bool:
    cursor.execute("SAVEPOINT pillbox_btree_gin")
    try:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    except Exception:  # no right to create the extension: a plain index on the scope instead
        cursor.execute("ROLLBACK TO SAVEPOINT pillbox_btree_gin")
        return False
    cursor.execute("RELEASE SAVEPOINT pillbox_btree_gin")
    return True


def forwards_for(table: str) -> Any:
    def forwards(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                statements = postgres_statements(cursor, table)
            else:
                statements = sqlite_statements(table, scoped=not is_local_alias(connection.alias))
            for statement in statements:
                cursor.execute(statement)

    return forwards


def backwards_for(table: str) -> Any:
    """Back to 0002's and 0003's indexes, without a scope."""
    def backwards(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                for statement in (
                    f"DROP INDEX IF EXISTS {table}_search_scoped", f"DROP INDEX IF EXISTS {table}_search_scope",
                    "DROP TRIGGER IF EXISTS pillbox_prescription_moved ON pillbox_prescription",
                    "DROP FUNCTION IF EXISTS pillbox_prescription_moved()",
                    f"CREATE OR REPLACE FUNCTION {table}_search_vector() RETURNS trigger AS "
                    f"$$ BEGIN NEW.search_vector := {postgres_search.WEIGHTED}; RETURN NEW; END $$ LANGUAGE plpgsql",
                    f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_scope",
                    f"CREATE INDEX IF NOT EXISTS {table}_search ON {table} USING gin (search_vector)",
                ):
                    cursor.execute(statement)
            else:
                cursor.execute("DROP TRIGGER IF EXISTS pillbox_prescription_fts_au")
                for statement in fulltext.drop_statements(table) + fulltext.fts_statements(table):
                    cursor.execute(statement)

    return backwards


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0005_original_import")]

    operations = [
        migrations.RunPython(forwards_for("pillbox_pill"), backwards_for("pillbox_pill"),
                             hints={"model_name": "pill"}),
        migrations.RunPython(forwards_for("pillbox_capsule"), backwards_for("pillbox_capsule"),
                             hints={"model_name": "capsule"}),
    ]

"""Search cost that follows the caller's own rows in a database shared by many users.

SQLite: the global database's full-text indexes get a ``scope`` column holding whose row it is (a pill's bottle
id, a capsule's owner id), so a search ANDs the caller's scope with the query inside FTS5 and never ranks or
joins anyone else's matches. A project's own file leaves ``scope`` empty: everything in it is the caller's, and
an empty column adds no token to any row, so its ranking is exactly as before. The column is searched only by
name (``scope : …``); the query's words are kept to the other three columns.

PostgreSQL needs nothing here: its planner already reaches the caller's rows through their owner's (or
prescription's) btree index and checks the words on those rows alone. A two-column GIN index (``btree_gin``, the
scope beside ``search_vector``) was measured and not kept: a prefix term's partial match reads every user's
entries for it (17 ms at 100 users where the caller's own rows took 8 ms).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.db import migrations

from pillbox.routers import is_local_alias

fulltext = import_module("pillbox.migrations.0002_fulltext")

# What each row's scope is, as an SQL expression over a row of its table.
PILL_SCOPE = "(SELECT bottle_id FROM pillbox_prescription WHERE id = {row}.prescription_id)"
CAPSULE_SCOPE = "{row}.owner_id"
SCOPES = {"pillbox_pill": PILL_SCOPE, "pillbox_capsule": CAPSULE_SCOPE}
# An update of one of these columns changes what the index holds for the row.
INDEXED = {"pillbox_pill": "title, content, compound, deleted_at, prescription_id",
           "pillbox_capsule": "title, content, compound, deleted_at, owner_id"}
# A prescription written after its pills (foreign keys are checked at commit), or moved to another bottle
# (nothing does either today), gives its pills their scope: the pills' own trigger indexes them again.
RESCOPE = "UPDATE pillbox_pill SET prescription_id = prescription_id WHERE prescription_id = new.id;"
PRESCRIPTION_TRIGGERS = {"pillbox_prescription_fts_ai": "AFTER INSERT",
                         "pillbox_prescription_fts_au": "AFTER UPDATE OF bottle_id"}


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
        f"CREATE TRIGGER {table}_fts_au AFTER UPDATE OF {INDEXED[table]} ON {table} "
        f"BEGIN DELETE FROM {fts} WHERE rowid = old.seq; {insert} END",
        f"CREATE TRIGGER {table}_fts_ad AFTER DELETE ON {table} BEGIN DELETE FROM {fts} WHERE rowid = old.seq; END",
        f"INSERT INTO {fts}(rowid, title, content, compound, scope) "
        f"SELECT m.seq, m.title, m.content, m.compound, {backfill_scope} FROM {table} m WHERE m.deleted_at IS NULL",
    ]
    if table == "pillbox_pill":
        statements += [f"DROP TRIGGER IF EXISTS {name}" for name in PRESCRIPTION_TRIGGERS]
        if scoped:
            statements += [f"CREATE TRIGGER {name} {event} ON pillbox_prescription BEGIN {RESCOPE} END"
                           for name, event in PRESCRIPTION_TRIGGERS.items()]
    return statements


def forwards_for(table: str) -> Any:
    def forwards(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        if connection.vendor != "sqlite":
            return
        with connection.cursor() as cursor:
            for statement in sqlite_statements(table, scoped=not is_local_alias(connection.alias)):
                cursor.execute(statement)

    return forwards


def backwards_for(table: str) -> Any:
    """Back to 0002's index, without a scope."""
    def backwards(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            return
        with schema_editor.connection.cursor() as cursor:
            for name in PRESCRIPTION_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
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

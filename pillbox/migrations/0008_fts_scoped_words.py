"""Search cost that follows the caller's own rows, all the way into FTS5.

Migration 0006 gave the global database's full-text indexes a ``scope`` column, so a search ANDs the caller's
scope with the words. FTS5 still walked every user's list of each word to do it: bm25 counts how many rows of
the whole table hold each phrase, and a prefix term merges the lists of every word it begins, everyone's rows
included. A search on a database of 1,000 users cost 13-16x the same search alone.

Now each indexed word of the global database carries its scope's tag (``pillbox.tokens.scoped``: a pill's
bottle, a capsule's owner), so the caller's words are their own FTS5 terms: a search reads, ranks and merges
the caller's lists only, and a word's rarity is counted among the caller's rows. The triggers call
``pillbox_scoped(scope, text)``, which Django registers on every SQLite connection it opens (a write to the
global database from outside Django, e.g. the ``sqlite3`` shell, fails with "no such function" rather than
indexing words no search would find). A project's own file is not touched: everything in it is the caller's.

PostgreSQL needs nothing here (see 0006).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.db import migrations

from pillbox.routers import is_local_alias

fulltext = import_module("pillbox.migrations.0002_fulltext")
scope_column = import_module("pillbox.migrations.0006_fts_scope")

COLUMNS = ("title", "content", "compound")


def _tagged(scope: str, row: str) -> str:
    return ", ".join(f"pillbox_scoped({scope}, {row}.{column})" for column in COLUMNS)


def sqlite_statements(table: str) -> list[str]:
    fts = f"{table}_fts"
    scope = scope_column.SCOPES[table]
    insert = (f"INSERT INTO {fts}(rowid, {', '.join(COLUMNS)}) SELECT new.seq, {_tagged('s.scope', 'new')} "
              f"FROM (SELECT {scope.format(row='new')} AS scope) s WHERE new.deleted_at IS NULL;")
    return [
        *(f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}" for suffix in ("ai", "au", "ad")),
        f"DROP TABLE IF EXISTS {fts}",
        f"CREATE VIRTUAL TABLE {fts} USING fts5({', '.join(COLUMNS)}, tokenize='{fulltext.TOKENIZER}')",
        f"CREATE TRIGGER {table}_fts_ai AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER {table}_fts_au AFTER UPDATE OF {scope_column.INDEXED[table]} ON {table} "
        f"BEGIN DELETE FROM {fts} WHERE rowid = old.seq; {insert} END",
        f"CREATE TRIGGER {table}_fts_ad AFTER DELETE ON {table} BEGIN DELETE FROM {fts} WHERE rowid = old.seq; END",
        f"INSERT INTO {fts}(rowid, {', '.join(COLUMNS)}) "
        f"SELECT m.seq, {_tagged(scope.format(row='m'), 'm')} FROM {table} m WHERE m.deleted_at IS NULL",
        # One b-tree per index, not the dozens of segments a backfill leaves: fewer places for each term.
        f"INSERT INTO {fts}({fts}) VALUES ('optimize')",
    ]


def forwards_for(table: str) -> Any:
    def forwards(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        if connection.vendor != "sqlite" or is_local_alias(connection.alias):
            return
        with connection.cursor() as cursor:
            for statement in sqlite_statements(table):
                cursor.execute(statement)

    return forwards


def backwards_for(table: str) -> Any:
    """Back to 0006's index, with a scope column."""
    def backwards(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        if connection.vendor != "sqlite" or is_local_alias(connection.alias):
            return
        with connection.cursor() as cursor:
            for statement in scope_column.sqlite_statements(table, scoped=True):
                cursor.execute(statement)

    return backwards


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0007_scope_covering_indexes")]

    operations = [
        migrations.RunPython(forwards_for("pillbox_pill"), backwards_for("pillbox_pill"),
                             hints={"model_name": "pill"}),
        migrations.RunPython(forwards_for("pillbox_capsule"), backwards_for("pillbox_capsule"),
                             hints={"model_name": "capsule"}),
    ]

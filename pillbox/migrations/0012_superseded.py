"""A pill (or capsule) may be superseded by a newer one of the same bottle (or owner): ``superseded_by`` names it
(pillbox.superseding). The change log's triggers (migration 0011) also note a change of ``superseded_by``, so the
search caches drop a row that was superseded and take it back when it no longer is.
"""

from __future__ import annotations

import re
from importlib import import_module
from typing import Any

import django.db.models.deletion
from django.db import migrations, models

log = import_module("pillbox.migrations.0011_change_log")

WATCHED = f"{log.WATCHED}, superseded_by_id"


def _row_triggers(connection: Any, watched: str) -> list[str]:
    """The change log's triggers on the pill and capsule tables, noting a change of the ``watched`` columns."""
    tables = set(connection.introspection.table_names())
    if connection.vendor == "postgresql":
        return [statement for statement in log.postgres_statements(tables, watched=watched)
                if any(f"TRIGGER {table}_change " in statement for table, _, _ in log.ROWS)]
    statements = []
    for statement in sqlite_statements(tables, watched=watched):
        name = statement.split()[5]  # CREATE TRIGGER IF NOT EXISTS <name>
        statements += [f"DROP TRIGGER IF EXISTS {name}", statement]
    return statements


def sqlite_statements(tables: set[str], *, watched: str = WATCHED) -> list[str]:
    """The update triggers of the pill and capsule tables on SQLite (the only ones this migration changes)."""
    return [statement for statement in log.sqlite_statements(tables, watched=watched)
            if any(f" {table}_change_au " in statement for table, _, _ in log.ROWS)]


def _columns(apps: Any, schema_editor: Any, *, add: bool) -> None:
    """Adds (or removes) the column where it is missing (or present): a file whose record of later migrations was
    lost (as the tests make one) is brought forward without tripping over a column it already has."""
    connection = schema_editor.connection
    tables = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        for name in ("pill", "capsule"):
            model = apps.get_model("pillbox", name)
            if model._meta.db_table not in tables:  # a project's file has no capsules
                continue
            columns = {column.name for column in connection.introspection.get_table_description(
                cursor, model._meta.db_table)}
            if ("superseded_by_id" in columns) != add:
                change = schema_editor.add_field if add else schema_editor.remove_field
                change(model, model._meta.get_field("superseded_by"))


def forwards(apps: Any, schema_editor: Any) -> None:
    _columns(apps, schema_editor, add=True)
    with schema_editor.connection.cursor() as cursor:
        for statement in _row_triggers(schema_editor.connection, WATCHED):
            cursor.execute(statement)


def backwards(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    # SQLite drops a foreign key column by making the table again under a new name: a trigger naming the table
    # (the full-text index's, the change log's, the vectors' log) would stop that rename, or go with the old table.
    # They are dropped first and made again on the new table.
    kept = _triggers_naming_the_tables(connection) if connection.vendor == "sqlite" else {}
    with connection.cursor() as cursor:
        for name in kept:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
    _columns(apps, schema_editor, add=False)
    changed = {statement.split()[5] for statement in sqlite_statements(set(connection.introspection.table_names()))}
    with connection.cursor() as cursor:
        for name, sql in kept.items():
            if name not in changed:  # those are made below, as 0011 made them
                cursor.execute(sql)
        for statement in _row_triggers(connection, log.WATCHED):
            cursor.execute(statement)


def _triggers_naming_the_tables(connection: Any) -> dict[str, str]:
    """Name -> SQL of every trigger on the pill or capsule table, or whose body names one of them."""
    naming = re.compile(r"\bpillbox_(?:pill|capsule)\b")
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        return {name: sql for name, table, sql in cursor.fetchall()
                if table in ("pillbox_pill", "pillbox_capsule") or naming.search(sql)}


def _field(model: str) -> migrations.AddField:
    return migrations.AddField(
        model_name=model,
        name="superseded_by",
        field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                related_name="supersedes", to=f"pillbox.{model}"),
    )


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0011_change_log")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[_field("capsule"), _field("pill")]),
        migrations.RunPython(forwards, backwards, hints={"model_name": "pill"}),
    ]

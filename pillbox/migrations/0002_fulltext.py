"""Full-text indexes for pills and capsules (SQLite FTS5), kept in step by triggers.

Each index holds only live rows: a discarded row leaves the index, a restored one comes back, so search and
its typo vocabulary never see discarded text. The index row's rowid is the memory row's ``seq``.
"""

from django.db import migrations

TOKENIZER = "unicode61 remove_diacritics 2"


def fts_statements(table: str) -> list[str]:
    fts = f"{table}_fts"
    insert = (
        f"INSERT INTO {fts}(rowid, title, content, compound) "
        "SELECT new.seq, new.title, new.content, new.compound WHERE new.deleted_at IS NULL;"
    )
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(title, content, compound, tokenize='{TOKENIZER}')",
        f"CREATE TRIGGER IF NOT EXISTS {table}_fts_ai AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_fts_au AFTER UPDATE OF title, content, compound, deleted_at "
        f"ON {table} BEGIN DELETE FROM {fts} WHERE rowid = old.seq; {insert} END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_fts_ad AFTER DELETE ON {table} "
        f"BEGIN DELETE FROM {fts} WHERE rowid = old.seq; END",
        f"INSERT INTO {fts}(rowid, title, content, compound) "
        f"SELECT seq, title, content, compound FROM {table} WHERE deleted_at IS NULL",
    ]


def drop_statements(table: str) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}" for suffix in ("ai", "au", "ad")] + [
        f"DROP TABLE IF EXISTS {table}_fts"
    ]


def forwards_for(table: str):
    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return  # PostgreSQL searches with its own full-text machinery
        with schema_editor.connection.cursor() as cursor:
            for statement in fts_statements(table):
                cursor.execute(statement)

    return forwards


def backwards_for(table: str):
    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        with schema_editor.connection.cursor() as cursor:
            for statement in drop_statements(table):
                cursor.execute(statement)

    return backwards


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0001_initial")]

    operations = [
        migrations.RunPython(
            forwards_for("pillbox_pill"), backwards_for("pillbox_pill"), hints={"model_name": "pill"}
        ),
        migrations.RunPython(
            forwards_for("pillbox_capsule"), backwards_for("pillbox_capsule"), hints={"model_name": "capsule"}
        ),
    ]

"""PostgreSQL's full-text index cuts text into the words FTS5 and the Python side cut, and keeps each row's length.

0003's ``to_tsvector('simple', …)`` kept paths, URLs, hosts, e-mail addresses and dotted or versioned names as
single tokens (``docs/conf.py``, ``oauth2validator._extract_basic_auth``): the words inside them could not be
found, while the SQLite index (FTS5's unicode61) and the query's terms (``pillbox.tokens.WORD``) split them. Now
the text is cut the same way before it is indexed: every run of characters that are neither letters nor digits
(the underscore included) becomes a space. ``search_length`` holds the row's number of words (title, compound and
content), which the search's bm25 needs for its length normalisation, as FTS5 keeps its own. The index is rebuilt
for every row. Nothing changes on SQLite.
"""

from importlib import import_module

from django.db import migrations

postgres_search = import_module("pillbox.migrations.0003_postgres_search")

SPLIT = "regexp_replace(pillbox_fold(coalesce(NEW.{column}, '')), '[^[:alnum:]]+', ' ', 'g')"
WEIGHTED = (
    f"setweight(to_tsvector('simple', {SPLIT.format(column='title')}), 'A') || "
    f"setweight(to_tsvector('simple', {SPLIT.format(column='compound')}), 'B') || "
    f"setweight(to_tsvector('simple', {SPLIT.format(column='content')}), 'D')"
)
# Words counted as FTS5 counts a row's tokens: every position of every lexeme.
LENGTH = "coalesce((SELECT sum(coalesce(array_length(u.positions, 1), 1)) FROM unnest(NEW.search_vector) u), 0)"


def _trigger_function(cursor, table: str, weighted: str, length: bool) -> None:
    body = f"NEW.search_vector := {weighted};"
    if length:
        body += f" NEW.search_length := {LENGTH};"
    cursor.execute(f"CREATE OR REPLACE FUNCTION {table}_search_vector() RETURNS trigger AS "
                   f"$$ BEGIN {body} RETURN NEW; END $$ LANGUAGE plpgsql")


def forwards_for(table: str):
    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS search_length integer NOT NULL DEFAULT 0")
            _trigger_function(cursor, table, WEIGHTED, length=True)
            cursor.execute(f"UPDATE {table} SET title = title")

    return forwards


def backwards_for(table: str):
    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            _trigger_function(cursor, table, postgres_search.WEIGHTED, length=False)
            cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_length")
            cursor.execute(f"UPDATE {table} SET title = title")

    return backwards


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0009_file_origin")]

    operations = [
        migrations.RunPython(
            forwards_for("pillbox_pill"), backwards_for("pillbox_pill"), hints={"model_name": "pill"}
        ),
        migrations.RunPython(
            forwards_for("pillbox_capsule"), backwards_for("pillbox_capsule"), hints={"model_name": "capsule"}
        ),
    ]

"""Full-text search on PostgreSQL: a weighted ``search_vector`` kept by a trigger, with a GIN index.

Only the global database can be PostgreSQL (local bottles are always SQLite files), and SQLite has its FTS5
index from 0002, so this migration does nothing there. Accents are folded with the ``unaccent`` extension
when it can be created; without it, search is still case-insensitive but accent-sensitive.
"""

from django.db import migrations

WEIGHTED = (
    "setweight(to_tsvector('simple', pillbox_fold(coalesce(NEW.title, ''))), 'A') || "
    "setweight(to_tsvector('simple', pillbox_fold(coalesce(NEW.compound, ''))), 'B') || "
    "setweight(to_tsvector('simple', pillbox_fold(coalesce(NEW.content, ''))), 'D')"
)


def _fold_function(cursor) -> None:
    cursor.execute("SAVEPOINT pillbox_unaccent")
    try:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pillbox_fold(text) RETURNS text AS "
            "$$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, $1)) $$ "
            "LANGUAGE sql IMMUTABLE PARALLEL SAFE"
        )
        cursor.execute("RELEASE SAVEPOINT pillbox_unaccent")
    except Exception:  # no right to create the extension: fold case only
        cursor.execute("ROLLBACK TO SAVEPOINT pillbox_unaccent")
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pillbox_fold(text) RETURNS text AS $$ SELECT lower($1) $$ "
            "LANGUAGE sql IMMUTABLE PARALLEL SAFE"
        )


def forwards_for(table: str):
    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            _fold_function(cursor)
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS search_vector tsvector")
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {table}_search_vector() RETURNS trigger AS "
                f"$$ BEGIN NEW.search_vector := {WEIGHTED}; RETURN NEW; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_search ON {table}")
            cursor.execute(
                f"CREATE TRIGGER {table}_search BEFORE INSERT OR UPDATE OF title, content, compound ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION {table}_search_vector()"
            )
            cursor.execute(f"UPDATE {table} SET title = title")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {table}_search ON {table} USING gin (search_vector)")

    return forwards


def backwards_for(table: str):
    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS {table}_search ON {table}")
            cursor.execute(f"DROP FUNCTION IF EXISTS {table}_search_vector()")
            cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector")

    return backwards


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0002_fulltext")]

    operations = [
        migrations.RunPython(
            forwards_for("pillbox_pill"), backwards_for("pillbox_pill"), hints={"model_name": "pill"}
        ),
        migrations.RunPython(
            forwards_for("pillbox_capsule"), backwards_for("pillbox_capsule"), hints={"model_name": "capsule"}
        ),
    ]

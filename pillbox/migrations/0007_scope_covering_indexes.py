"""Covering indexes for the typo vocabulary's check of the caller's rows (their count, newest row and latest edit):
in a database shared with others their rows are scattered, and reading one table page per row cost more than
the search. Each replaces the index it extends.

Plain SQL with IF EXISTS / IF NOT EXISTS: a file whose record of later migrations was lost (as the tests make
one) is brought forward without tripping over indexes it already has.
"""

from __future__ import annotations

from django.db import migrations, models
from django.db.migrations.operations.base import Operation

PILL = models.Index(fields=["prescription", "deleted_at", "seq", "updated_at"], name="pillbox_pill_rx_alive_seq")
CAPSULE = models.Index(fields=["owner", "deleted_at", "seq", "updated_at"], name="pillbox_capsule_owner_seq")


def replace(model: str, old: str, old_columns: str, new: models.Index, columns: str) -> Operation:
    table = f"pillbox_{model}"
    return migrations.SeparateDatabaseAndState(
        state_operations=[migrations.RemoveIndex(model_name=model, name=old),
                          migrations.AddIndex(model_name=model, index=new)],
        database_operations=[migrations.RunSQL(
            [f"CREATE INDEX IF NOT EXISTS {new.name} ON {table} ({columns})", f"DROP INDEX IF EXISTS {old}"],
            [f"CREATE INDEX IF NOT EXISTS {old} ON {table} ({old_columns})", f"DROP INDEX IF EXISTS {new.name}"],
            hints={"model_name": model},
        )],
    )


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0006_fts_scope")]

    operations = [
        replace("pill", "pillbox_pill_rx_alive", "prescription_id, deleted_at", PILL,
                "prescription_id, deleted_at, seq, updated_at"),
        replace("capsule", "pillbox_capsule_owner_alive", "owner_id, deleted_at", CAPSULE,
                "owner_id, deleted_at, seq, updated_at"),
    ]

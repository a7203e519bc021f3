"""Vectors searched where they live, on a PostgreSQL server that has pgvector (``pillbox.embeddings.halfvec``):
a ``halfvec`` column beside each stored vector, filled from them, kept in step by a trigger, under an HNSW index.

A no-op on SQLite and on a server without the extension (search by meaning stays in the process). A server that
gets the extension later is switched over with ``manage.py pgvector enable``; going back, with this migration
reversed or ``manage.py pgvector disable``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import migrations

from pillbox.embeddings import halfvec

logger = logging.getLogger("pillbox")


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        logger.info("pgvector: %s", halfvec.enable(schema_editor.connection))


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        logger.info("pgvector: %s", halfvec.disable(schema_editor.connection))


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0012_superseded")]

    operations = [migrations.RunPython(forwards, backwards, hints={"model_name": "pill"})]

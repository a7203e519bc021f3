"""Local bottle databases hold only bottles, prescriptions, pills and the record of an import from the original
Pillbox; everything else is global."""

from __future__ import annotations

from typing import Any

LOCAL_ALIAS_PREFIX = "bottle:"
LOCAL_MODELS = frozenset({"bottle", "prescription", "pill", "pillvector", "originalimport", "filemark"})


def is_local_alias(alias: str) -> bool:
    return alias.startswith(LOCAL_ALIAS_PREFIX)


class LocalBottleRouter:
    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        if not is_local_alias(db):
            return True
        return app_label == "pillbox" and model_name in LOCAL_MODELS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        return obj1._state.db == obj2._state.db or None

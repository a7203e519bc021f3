"""What the benchmark scripts share: where the public data and the shared tools are, and how results are scored."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TOOLS = SHARED / "bench" / "tools"
DATA = SHARED / "bench" / "data"


def load_module(name: str, path: Path) -> ModuleType:
    # The shared tools are not a package; load them by path so that the numbers are computed exactly as the
    # shared scorer computes them, and a reference implementation is the shared one itself.
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of an app server a benchmark starts: this one's, less any database it points at, with a
    fresh data directory ``home``, a production-like site on loopback and ``extra`` on top."""
    import secrets

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PILLBOX_ROOT")}
    env.update(PILLBOX_HOME=str(home), DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
               DJANGO_SETTINGS_MODULE="config.settings", DJANGO_DEBUG="false", ALLOWED_HOSTS="127.0.0.1",
               SITE_URL="http://127.0.0.1", **extra)
    return env


def setup_django(home: Path, *, database_url: str | None = None) -> None:
    """Django on a scratch data directory (never the real one), its global database migrated: a SQLite file in
    ``home``, or the database at ``database_url`` when given (never the environment's DATABASE_URL)."""
    os.environ["PILLBOX_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    # The model runs in this process (what the figures have always measured), and no shared model process
    # outlives the benchmark; bench/stdio_memory.py and bench/stdio_lookup.py measure the shared one.
    os.environ.setdefault("EMBEDDINGS_SHARED", "off")
    for name in ("DATABASE_URL", "PILLBOX_ROOT"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from base.bootstrap import ensure_global_db

    ensure_global_db()


def load_score() -> ModuleType:
    return load_module("shared_bench_score", TOOLS / "score.py")


def summarise(score: ModuleType, data: dict[str, Any], res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """score.py's metrics over all queries and per query kind."""
    rows = score.per_query(data, res)
    out: dict[str, dict[str, Any]] = {"all": score.metrics(rows)}
    for kind in sorted({r["kind"] for r in rows}):
        out[kind] = score.metrics([r for r in rows if r["kind"] == kind])
    return out


def ratio(a: float, b: float) -> str:
    if b == 0:
        return "inf" if a > 0 else "-"
    return f"{a / b:.2f}"

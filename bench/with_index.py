#!/usr/bin/env python3
"""Runs another benchmark with every search by meaning going through the approximate index (pillbox/search/ann.py):

    .venv/bin/python bench/with_index.py bench/pills_search.py --quick
    .venv/bin/python bench/with_index.py bench/locomo.py --quick

The threshold is one row (PILLBOX_VECTOR_INDEX_ROWS=1), so every scope is a large one, and an index is built at
once where a search needs it (not in the background), so no search of the run falls back on the exact scan: the
recall figures are those of the approximate path. Compare them with the same benchmark run on its own.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    os.environ["PILLBOX_VECTOR_INDEX_ROWS"] = "1"
    sys.path[:0] = [str(ROOT), str(Path(sys.argv[1]).resolve().parent)]
    from pillbox.search import ann

    built: list[str] = []

    def at_once(alias: str, kind: str, model_key: str, dimensions: int, *, fresh: bool = False) -> None:
        ann.build(alias, kind, model_key, dimensions, fresh=fresh)
        built.append(alias)

    ann.schedule = at_once
    sys.argv = sys.argv[1:]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        print(f"with_index: {len(built)} index builds or updates, at once", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Search quality on a database shared by many users: the recall set in one user's global memory, among other
users' rows, against the same memory on a database holding only it.

    .venv/bin/python bench/shared_quality.py [--users 100] [--per-user 1000] [--keep DIR]

The public recall set (1,442 pills and their queries) is stored as one user's global bottle of pills and as
their capsules, on two global SQLite databases: one where ``--users`` other users hold ``--per-user`` pills and
capsules each (``bench/per_user.py``'s rows: the same public texts, varied), and one holding that user alone.
The ``pill_search`` and ``capsule_search`` tool functions answer every query (over HTTP's reach, words only:
the full-text index is what differs between the two), and the shared scorer scores both. A search in a shared
database should find what it finds alone: the others' rows must change neither what is found nor its order.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from common import DATA, REPO, load_score, setup_django, summarise
from per_user import BASE_MS, build, owner_uuid

DEFAULT_DATA = DATA / "pills_recall_s1.json"
ID_LINE = re.compile(r"^id: ([0-9a-f]+)$", re.MULTILINE)
TOOLS = ("pill_search", "capsule_search")


def store_recall_set(items: list[dict[str, Any]], user: int) -> None:
    """The recall set as user ``user``'s global bottle of pills and their capsules, written after the others'."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration

    now = timezone.now()
    get_user_model().objects.create(id=user + 1, username="reader", password="!")
    bottle = owner_uuid("bottle", user)
    Bottle.objects.create(id=bottle, name="memory", display_name="Memory", directory="", scope=Bottle.SCOPE_GLOBAL,
                          created_at=now)
    Registration.objects.create(user_id=user + 1, bottle_id=bottle, name="memory", display_name="Memory",
                                scope=Bottle.SCOPE_GLOBAL, directory="", db_path="")
    Prescription.objects.create(id=owner_uuid("prescription", user), bottle_id=bottle, title="work", started_at=now)
    first = BASE_MS + 10**9
    Pill.objects.bulk_create([
        Pill(id=item_id("pill", item["id"]), seq=first + i, prescription_id=owner_uuid("prescription", user),
             compound=item["compound"], title=item["title"], content=item["content"], created_at=now, updated_at=now)
        for i, item in enumerate(items)])
    Capsule.objects.bulk_create([
        Capsule(id=item_id("capsule", item["id"]), seq=first + i, owner_id=user + 1, compound=item["compound"],
                title=item["title"], content=item["content"], created_at=now, updated_at=now)
        for i, item in enumerate(items)])


def item_id(kind: str, dataset_id: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"shared-quality/{kind}/{dataset_id}")


def serve(a: argparse.Namespace) -> int:
    """One database: build it (unless built), answer every query with both tools, print the ranked dataset ids."""
    os.environ["EMBEDDINGS"] = "off"
    setup_django(a.home)
    from django.contrib.auth import get_user_model

    from mcp_bridge.tools import Caller
    from pillbox import ids
    from pillbox.tools import TOOLSET

    data = json.loads(a.data.read_text(encoding="utf-8"))
    marker = a.home / "built.json"
    wanted = {"users": a.users, "per_user": a.per_user, "shared": a.role == "shared"}
    if not (marker.is_file() and json.loads(marker.read_text()) == wanted):
        if a.role == "shared":
            build(data["items"], a.users, a.per_user, None)
        store_recall_set(data["items"], a.users)
        marker.write_text(json.dumps(wanted))
    caller = Caller(user=get_user_model().objects.get(pk=a.users + 1), transport="http")
    back = {ids.short(item_id(kind, item["id"])): item["id"]
            for kind in ("pill", "capsule") for item in data["items"]}
    out: dict[str, dict[str, list[str]]] = {}
    for tool in TOOLS:
        handler = TOOLSET.by_name[tool].handler
        out[tool] = {str(q["i"]): [back.get(short, f"?{short}") for short in
                                   ID_LINE.findall(str(handler(caller, {"query": q["q"], "limit": 20})))]
                     for q in data["queries"]}
    print(json.dumps(out))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--per-user", type=int, default=1000)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--keep", type=Path, help="keep the databases here and reuse them")
    ap.add_argument("--worker", choices=("shared", "alone"), help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.data = a.data.resolve()
    if a.worker:
        a.role = a.worker
        return serve(a)
    root = a.keep.resolve() if a.keep else Path(tempfile.mkdtemp(prefix="shared_quality_")).resolve()
    answers = {}
    try:
        for role in ("shared", "alone"):
            home = root / role
            home.mkdir(parents=True, exist_ok=True)
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", role, "--home", str(home),
                                   "--users", str(a.users), "--per-user", str(a.per_user), "--data", str(a.data)],
                                  cwd=REPO, capture_output=True, text=True, check=False)
            if done.returncode:
                raise SystemExit(f"the {role} worker failed:\n{done.stderr[-3000:]}")
            answers[role] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    data = json.loads(a.data.read_text(encoding="utf-8"))
    score = load_score()
    print(f"{len(data['queries'])} queries; the reader's {len(data['items']):,} pills and capsules among "
          f"{a.users:,} users x {a.per_user:,} of each (shared) or alone\n")
    print("| tool | kind | n | MRR@10 shared | MRR@10 alone | found@20 shared | found@20 alone | answers differing "
          "| first hits differing |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tool in TOOLS:
        shared, alone = (summarise(score, data, {"results": answers[role][tool]}) for role in ("shared", "alone"))
        for kind in shared:
            queries = [q for q in data["queries"] if kind == "all" or q["kind"] == kind]
            pairs = [(answers["shared"][tool][str(q["i"])], answers["alone"][tool][str(q["i"])]) for q in queries]
            differ = sum(mine != theirs for mine, theirs in pairs)
            first = sum(mine[:1] != theirs[:1] for mine, theirs in pairs)
            print(f"| {tool} | {kind} | {shared[kind]['n']} | {shared[kind]['mrr@10']:.3f} "
                  f"| {alone[kind]['mrr@10']:.3f} | {shared[kind]['found@20']:.3f} "
                  f"| {alone[kind]['found@20']:.3f} | {differ} | {first} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

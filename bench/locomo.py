#!/usr/bin/env python3
"""Recall on real dialogue: LoCoMo's conversations through `pill_search`, words only, the model alone and the tool.

    .venv/bin/python bench/locomo.py [--dir ../shared/bench/locomo] [--keep DIR] [--quick] [--json FILE]

LoCoMo (Maharana et al., ACL 2024) is read where it lies beside the checkout (its licence allows benchmark use
only: nothing of it is copied into the repository); without it the script says so and exits 0. The usual
protocol: one bottle per conversation (one user each, so `pill_search` covers only that bottle), one prescription
per session titled with its date, one pill per turn (content ``Speaker: text``, plus the caption of a shared
photo; title ``Speaker on <date>``, or --title another form); every question of categories 1-4 asked through
the `pill_search` tool function at limit 20. Scored per category and overall: R@5 (the share of a question's
evidence turns in the first 5, averaged), hit@5 and MRR@10 (the first evidence turn), the share answered
``No pills found.`` (all of these questions have a stored answer: a false absence) and, per ``confidence:``
level, how often the first row is an evidence turn (its precision).

--keep DIR keeps the bottles (and their vectors) for the next run; --quick is the CI guard: it fails when the
tool's R@5 is not 0.03 above words only, a category is more than 0.01 under it, MRR@10 under it, or the false
absence rate over 2 %. The precision of `high` is printed against its goal (90 %), not guarded: on this dialogue
it is 74 % (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import SHARED, setup_django

LOCOMO = SHARED / "bench" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ID_LINE = re.compile(r"^id: ([0-9a-f]+)$", re.MULTILINE)
CONFIDENCE_LINE = re.compile(r"^confidence: (\w+)", re.MULTILINE)
NOTHING = "No pills found."
LEVELS = ("high", "medium", "low")
# The --quick guard (the goals, with the false-absence and precision goals as they are).
MAX_FALSE_ABSENCE = 0.02
MIN_HIGH_PRECISION = 0.90
CATEGORY_SLACK = 0.01
MIN_GAIN = 0.03


def turns(conversation: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    """(session number, its date, turn) in order."""
    out = []
    sessions = sorted(int(key.split("_")[1]) for key in conversation
                      if re.fullmatch(r"session_\d+", key) and conversation[key])
    for number in sessions:
        date = conversation.get(f"session_{number}_date_time", "")
        out += [(number, date, turn) for turn in conversation[f"session_{number}"]]
    return out


def evidence_of(qa: dict[str, Any]) -> list[str]:
    """The evidence turn ids (a few are written 'D8:6; D9:17' in one string)."""
    return [part for entry in qa.get("evidence", []) for part in re.split(r"[;,\s]+", entry) if part]


TITLES: dict[str, Callable[[dict[str, Any], str], str]] = {
    "speaker-date": lambda turn, date: f"{turn['speaker']} on {date}",
    "speaker": lambda turn, date: turn["speaker"],
    "text": lambda turn, date: " ".join(turn["text"].split()[:8]) or turn["speaker"],
}


def build(root: Path, name: str, conversation: dict[str, Any], title: str) -> tuple[Any, dict[str, str]]:
    """The conversation's bottle, made through the tools (reused from an earlier --keep run); short id -> dia_id."""
    from pills_quality import Project, embeddings

    from pillbox import ids, services
    from pillbox.access import reach_for
    from pillbox.embeddings import backfill

    mapping_file = root / f"{name}.ids.json"
    project = Project(root, name)
    if project.reused and mapping_file.exists():
        return project, json.loads(mapping_file.read_text())
    reach = reach_for(project.caller)
    embeddings(False)  # stored without vectors, then backfilled in batches
    mapping: dict[str, str] = {}
    prescriptions: dict[int, str] = {}
    for session, date, turn in turns(conversation):
        if session not in prescriptions:
            opened = project.call("prescription_open", {
                "bottle_id": project.bottle_id, "title": f"Session {session}, {date}", "author_name": "Bench",
                "author_email": "bench@example.org"})
            prescriptions[session] = Project._first_id(opened)
        content = f"{turn['speaker']}: {turn['text']}"
        if turn.get("blip_caption"):
            content += f" [shares a photo: {turn['blip_caption']}]"
        pill = services.pill_store(reach=reach, prescription_id=prescriptions[session],
                                   title=TITLES[title](turn, date), content=content, compound="dialogue",
                                   author_name="Bench", author_email="bench@example.org")
        mapping[ids.short(pill.id)] = turn["dia_id"]
    embeddings(True)
    backfill.backfill(project.alias(), "pill")
    mapping_file.write_text(json.dumps(mapping))
    return project, mapping


def ask(project: Any, mapping: dict[str, str], question: str, *, meaning: bool) -> tuple[list[str], str]:
    from pills_quality import embeddings

    embeddings(meaning)
    text = project.search({"query": question, "limit": 20})
    return [mapping.get(short, "?") for short in ID_LINE.findall(text)], text


def model_alone(project: Any, mapping: dict[str, str], questions: list[dict[str, Any]]) -> dict[str, list[str]]:
    from pills_quality import meaning_only

    return meaning_only(project, mapping, questions)


def scores(rows: list[dict[str, Any]], system: str) -> dict[str, dict[str, float]]:
    """Per category (and all): R@5, hit@5, MRR@10, found@20, the false-absence rate."""
    out: dict[str, dict[str, float]] = {}
    for label in ["all", *CATEGORIES.values()]:
        chosen = [row for row in rows if label in ("all", row["category"])]
        if not chosen:
            continue
        recall = hit = mrr = found = empty = 0.0
        for row in chosen:
            ranked, evidence = row[system], row["evidence"]
            recall += len(set(ranked[:5]) & evidence) / len(evidence)
            first = next((at for at, turn in enumerate(ranked, 1) if turn in evidence), None)
            hit += first is not None and first <= 5
            mrr += 1 / first if first is not None and first <= 10 else 0
            found += first is not None
            empty += row.get(f"{system} empty", False)
        n = len(chosen)
        out[label] = {"n": n, "r@5": recall / n, "hit@5": hit / n, "mrr@10": mrr / n, "found@20": found / n,
                      "false absence": empty / n}
    return out


def confidence(rows: list[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    """Per level: how many answers said it, and how often their first row is an evidence turn."""
    counts: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for row in rows:
        level = row["level"] or ("none" if row["tool empty"] else "unsaid")
        counts[level] += 1
        right[level] += bool(row["tool"]) and row["tool"][0] in row["evidence"]
    return {level: (counts[level], right[level] / counts[level]) for level in counts}


def run(directory: Path, root: Path, limit: int | None, title: str) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conversation = data.get("conversation", data)
        project, mapping = build(root, f"locomo-{path.stem}-{title}", conversation, title)
        questions = [qa for qa in data["qa"] if qa.get("category") in CATEGORIES and evidence_of(qa)]
        if limit:
            questions = questions[:limit]
        keyed = [{"i": f"{path.stem}-{at}", "q": qa["question"]} for at, qa in enumerate(questions)]
        alone = model_alone(project, {short: dia for short, dia in mapping.items()}, keyed)
        for query, qa in zip(keyed, questions, strict=True):
            tool, text = ask(project, mapping, qa["question"], meaning=True)
            words, words_text = ask(project, mapping, qa["question"], meaning=False)
            level = CONFIDENCE_LINE.search(text)
            rows.append({"key": query["i"], "q": qa["question"], "category": CATEGORIES[qa["category"]],
                         "evidence": set(evidence_of(qa)), "tool": tool, "words": words, "meaning": alone[query["i"]],
                         "tool empty": text == NOTHING, "words empty": words_text == NOTHING,
                         "level": level.group(1) if level else ""})
    return rows


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tables = {system: scores(rows, system) for system in ("words", "meaning", "tool")}
    print(f"LoCoMo: {len(rows)} questions (categories 1-4)")
    print("| category | n | " + " | ".join(f"{metric} {system}" for metric in ("r@5", "mrr@10", "hit@5")
                                         for system in tables) + " | false absence tool |")
    print("|" + "---|" * (3 + 3 * len(tables)))
    for label, base in tables["words"].items():
        cells = [f"{tables[system][label][metric]:.3f}" for metric in ("r@5", "mrr@10", "hit@5") for system in tables]
        absent = tables["tool"][label]["false absence"]
        print(f"| {label} | {base['n']:.0f} | " + " | ".join(cells) + f" | {absent:.1%} |")
    levels = confidence(rows)
    print("confidence: " + ", ".join(f"{level} {count} answers, first row right {share:.1%}"
                                     for level, (count, share) in sorted(levels.items())))
    return {"tables": tables, "confidence": {level: list(value) for level, value in levels.items()}}


def failures(result: dict[str, Any]) -> list[str]:
    tool, words = result["tables"]["tool"], result["tables"]["words"]
    problems = []
    if tool["all"]["r@5"] < words["all"]["r@5"] + MIN_GAIN:
        problems.append(f"R@5 {tool['all']['r@5']:.3f} < words only {words['all']['r@5']:.3f} + {MIN_GAIN}")
    if tool["all"]["mrr@10"] < words["all"]["mrr@10"]:
        problems.append(f"MRR@10 {tool['all']['mrr@10']:.3f} < words only {words['all']['mrr@10']:.3f}")
    for label, row in tool.items():
        if row["r@5"] < words[label]["r@5"] - CATEGORY_SLACK:
            problems.append(f"{label}: R@5 {row['r@5']:.3f} < words only {words[label]['r@5']:.3f} - {CATEGORY_SLACK}")
    if tool["all"]["false absence"] > MAX_FALSE_ABSENCE:
        problems.append(f"false absence {tool['all']['false absence']:.1%} > {MAX_FALSE_ABSENCE:.0%}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=LOCOMO, help="LoCoMo's conversation files (one JSON each)")
    ap.add_argument("--keep", type=Path, help="keep the bottles here and reuse them in the next run")
    ap.add_argument("--limit", type=int, help="questions per conversation (default: all)")
    ap.add_argument("--title", choices=TITLES, default="speaker-date",
                    help="each pill's title: the speaker and the session's date (default), the speaker alone, or "
                         "the turn's first words (the protocol leaves it open: the tool must not depend on it)")
    ap.add_argument("--quick", action="store_true", help="the CI guard: exit 1 when a goal is missed")
    ap.add_argument("--json", type=Path, help="write the rows and tables here")
    a = ap.parse_args()
    if not any(a.dir.glob("*.json")):
        print(f"SKIPPED: no LoCoMo conversations in {a.dir}")
        return 0
    with tempfile.TemporaryDirectory(prefix="locomo-") as scratch:
        root = a.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        setup_django(root / "home")
        rows = run(a.dir, root / "projects", a.limit, a.title)
    result = report(rows)
    if a.json:
        a.json.write_text(json.dumps({"rows": [{**row, "evidence": sorted(row["evidence"])} for row in rows],
                                      **result}, indent=1) + "\n")
    high = result["confidence"].get("high")
    if high:
        print(f"goal: 'high' first rows right >= {MIN_HIGH_PRECISION:.0%}: "
              f"{'ok' if high[1] >= MIN_HIGH_PRECISION else 'MISSED'} ({high[1]:.1%} of {high[0]})")
    problems = failures(result)
    for problem in problems:
        print("FAILED: " + problem)
    return 1 if a.quick and problems else 0


if __name__ == "__main__":
    sys.exit(main())

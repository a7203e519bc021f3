"""What a starting session is told of its project's memory, within a size budget (``manage.py recall``).

The whole bottle is weighed, not only its last prescription: lasting knowledge (decisions, conventions, gotchas)
before chatter (notes, progress logs), recent and often-read pills before old unread ones, and every recent
session keeps at least its best pill so that a short last session cannot hide the ones before it. The user's
capsules (memory shared by every project) follow, newest first, titles at least. Whatever does not fit is counted
and the tool that shows it is named. Pure: it ranks and formats what ``selectors.session_memory`` fetched.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from pillbox import shaping
from pillbox.ids import short
from pillbox.models import Capsule, Pill
from pillbox.origin import Foreign
from pillbox.selectors import SessionMemory
from pillbox.texts import plural

# Compound words (free text, so matched word by word) that mark what a later session needs, and what it rarely does.
LASTING = frozenset({
    "decision", "decisions", "decided", "adr", "architecture", "design", "convention", "conventions", "rule",
    "rules", "preference", "preferences", "constraint", "constraints", "gotcha", "gotchas", "pitfall", "warning",
    "lesson", "lessons", "learning", "learnings", "insight", "policy", "contract", "api", "schema", "setup",
    "config", "configuration", "security", "invariant", "bug", "bugfix", "fix", "incident", "workaround",
})
PASSING = frozenset({
    "note", "notes", "log", "chatter", "chat", "status", "progress", "wip", "scratch", "misc", "journal", "turn",
    "message", "update", "standup", "todo",
})
SESSIONS_COVERED = 10  # recent prescriptions that keep at least one pill each
SNIPPET = 160
CAPSULE_HEADING = "# Capsules (your memory shared by every project, newest first)"


def weight(compound: str) -> int:
    words = set(re.split(r"[^a-z0-9]+", compound.lower()))
    if words & LASTING:
        return 2
    if words & PASSING:
        return 0
    return 1


def ranked(pills: Sequence[Pill]) -> list[Pill]:
    """The pills in the order a new session should read them."""
    if not pills:
        return []
    by_age = sorted(pills, key=lambda pill: -pill.seq)
    age = {pill.pk: rank for rank, pill in enumerate(by_age)}
    most_read = max(pill.views for pill in pills)

    def score(pill: Pill) -> float:
        recency = 1 / (1 + age[pill.pk] / 10)
        popularity = math.log1p(pill.views) / math.log1p(most_read) if most_read else 0.0
        return weight(pill.compound) + recency + 0.5 * popularity

    order = sorted(pills, key=lambda pill: (-score(pill), -pill.seq))
    sessions: list[uuid.UUID] = []
    for pill in by_age:
        if pill.prescription_id not in sessions:
            sessions.append(pill.prescription_id)
    covered = set(sessions[:SESSIONS_COVERED])
    firsts: list[Pill] = []
    for pill in order:
        if pill.prescription_id in covered:
            covered.discard(pill.prescription_id)
            firsts.append(pill)
    chosen = {pill.pk for pill in firsts}
    return firsts + [pill for pill in order if pill.pk not in chosen]


def one_line(text: str, width: int = SNIPPET) -> str:
    flat = shaping.one_line(text, len(text) + 1)
    return flat if len(flat) <= width else flat[:width].rstrip() + "…"


def pill_lines(pill: Pill, *, full: bool) -> str:
    head = f"  id: {short(pill.id)} [{one_line(pill.compound, 64)}] {one_line(pill.title, 200)}"
    return head + (f"\n    {one_line(pill.content)}" if full else "")


def capsule_lines(capsule: Capsule, *, full: bool) -> str:
    head = f"  id: {short(capsule.id)} [{capsule.compound}] {one_line(capsule.title, 200)}"
    return head + (f"\n    {one_line(capsule.content)}" if full else "")


@dataclass
class Room:
    left: int

    def take(self, text: str) -> bool:
        if len(text) + 1 > self.left:
            return False
        self.left -= len(text) + 1
        return True


def clean(text: str) -> str:
    """Printed into a terminal and a model's context: no control character (escape sequences, clipboard writes) and
    no format character (bidi overrides, zero-width ones) from stored text gets through."""
    return shaping.lines_kept(text)


def render(*, header: str, sessions: str, memory: SessionMemory, budget: int) -> str:
    """``header`` and ``sessions`` (the bottle_context text, already fitted) come first; pills and capsules share
    the rest, with a quarter of it kept for capsule titles, and a last line counts what was left out."""
    superseded = superseded_line(memory.superseded_pills, memory.superseded_capsules)
    footer_room = 260 + len(superseded)
    room = Room(budget - len(header) - len(sessions) - footer_room - 4)
    capsule_titles = [capsule_lines(capsule, full=False) for capsule in memory.capsules]
    whole = [capsule_lines(capsule, full=True) for capsule in memory.capsules]
    wanted = sum(len(line) + 1 for line in [CAPSULE_HEADING, *whole]) if whole else 0
    capsule_room = Room(min(wanted, max(room.left // 4, 0)))
    room.left -= capsule_room.left

    pill_heading = "# Pills across sessions (lasting first; pill_read <id> shows one whole)"
    shown_pills: dict[uuid.UUID, list[tuple[Pill, str]]] = {}
    if memory.pills and room.take(pill_heading):
        titles_only = False
        for pill in ranked(memory.pills):
            header_cost = 0 if pill.prescription_id in shown_pills else len(session_heading(pill)) + 1
            text = pill_lines(pill, full=not titles_only)
            if len(text) + 1 + header_cost > room.left and not titles_only:
                titles_only = True
                text = pill_lines(pill, full=False)
            if len(text) + 1 + header_cost > room.left:
                break
            room.left -= header_cost
            room.take(text)
            shown_pills.setdefault(pill.prescription_id, []).append((pill, text))
    capsule_room.left += room.left
    shown_capsules: list[str] = []
    if memory.capsules and capsule_room.take(CAPSULE_HEADING):
        for title in capsule_titles:
            if not capsule_room.take(title):
                break
            shown_capsules.append(title)
        # Room left over after every title that fit: the newest capsules get their first line of content too.
        for index, full in enumerate(whole[:len(shown_capsules)]):
            extra = len(full) - len(shown_capsules[index])
            if extra > capsule_room.left:
                break
            capsule_room.left -= extra
            shown_capsules[index] = full

    parts = [header + sessions]
    if shown_pills:
        blocks = [pill_heading]
        newest_first = sorted(shown_pills.values(), key=lambda entries: (entries[0][0].prescription.started_at,
                                                                         entries[0][0].prescription_id), reverse=True)
        for entries in newest_first:
            blocks.append(session_heading(entries[0][0]))
            blocks.extend(text for _, text in entries)
        parts.append("\n".join(blocks))
    if shown_capsules:
        parts.append("\n".join([CAPSULE_HEADING, *shown_capsules]))
    pills_shown = sum(len(entries) for entries in shown_pills.values())
    parts.append(left_out(memory.total_pills - pills_shown, memory.total_capsules - len(shown_capsules)))
    parts.append(superseded)
    return clean("\n\n".join(part for part in parts if part))


def session_heading(pill: Pill) -> str:
    rx = pill.prescription
    state = "open" if rx.ended_at is None else "closed"
    return f"prescription {short(rx.id)} [{state}] {one_line(rx.title, 120)}"


def left_out(pills: int, capsules: int) -> str:
    notes = []
    if pills > 0:
        notes.append(f"{pills} more pill{'s' if pills != 1 else ''} (pill_search finds them; prescription_context "
                     "<id> lists one session's)")
    if capsules > 0:
        notes.append(f"{capsules} more capsule{'s' if capsules != 1 else ''} (capsule_search or capsule_read)")
    return "Not shown: " + "; ".join(notes) + "." if notes else ""


def superseded_line(pills: int, capsules: int) -> str:
    """How many rows were hidden for a newer one superseding them (pillbox.superseding), if any."""
    hidden = [plural(count, f"superseded {noun}") for count, noun in ((pills, "pill"), (capsules, "capsule")) if count]
    if not hidden:
        return ""
    return f"({' and '.join(hidden)} hidden; pill_search or capsule_search with include_superseded: true shows them)"


def foreign_line(foreign: Foreign) -> str:
    """The one line a memory not (yet) the user's own gets instead of its content."""
    pills = "its pills could not be counted" if foreign.pills is None else plural(foreign.pills, "pill")
    why = ("a copy of a memory of yours made elsewhere" if foreign.copied
           else "not made by your Pillbox on this machine, nor adopted")
    where = shaping.one_line(str(foreign.path.parent.parent), 4096)
    return (f"Pillbox: {where} holds a Pillbox memory not yet trusted ({pills}; {why}), so none of it was read. "
            "Look at it first (`manage.py adopt` there shows what it holds), then adopt it with `manage.py adopt "
            "--yes` there, or have your agent call bottle_vinculate.")

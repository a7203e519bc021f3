"""How todos relate when an agent plans: which one is whose sub-task, what blocks what, what is due when.

Pure functions over keys and instants (no ORM), shared by the selectors, the services and the formatters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from todos.timestamps import BadInstant, parse_instant

# Words an agent may use instead of a date in dueBefore/dueAfter. Days and weeks are UTC days and ISO weeks
# (Monday first), as every instant of this API is UTC.
DUE_WORDS = ("today", "tomorrow", "this week", "overdue")
DUE_RULE = f"an ISO 8601 date or date-time such as 2026-11-30, or one of {', '.join(DUE_WORDS)}"


@dataclass(frozen=True)
class TodoFilter:
    """What list_todos, search_todos and next_todos may narrow their answer to; None means no narrowing."""

    due_before: datetime | None = None  # deadline strictly earlier
    due_after: datetime | None = None  # deadline at or after
    priority: str | None = None
    under: str | None = None  # a todo's key: it and its sub-tasks, at any depth
    tag: str | None = None

    def __bool__(self) -> bool:
        return any(value is not None for value in vars(self).values())


def due_bound(text: str, *, side: str, now: datetime) -> datetime:
    """The instant a dueBefore (``side="before"``) or dueAfter (``side="after"``) value stands for.

    A day or a week is a span: dueBefore ends with it (``dueBefore: "today"`` is everything due by tonight,
    overdue included), dueAfter starts with it (``dueAfter: "tomorrow"`` is tomorrow and later). ``overdue``
    is the present moment: dueBefore it is what is overdue, dueAfter it is what is not yet. An ISO 8601 value
    is the instant itself (a bare date is its midnight UTC).
    """
    word = " ".join(text.lower().split())
    midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    spans = {
        "today": (midnight, midnight + timedelta(days=1)),
        "tomorrow": (midnight + timedelta(days=1), midnight + timedelta(days=2)),
        "this week": (midnight - timedelta(days=midnight.weekday()), midnight + timedelta(days=7 - midnight.weekday())),
        "overdue": (now, now),
    }
    if word in spans:
        start, end = spans[word]
        return end if side == "before" else start
    return parse_instant(text)


def read_due(text: str, *, side: str, now: datetime) -> datetime | None:
    try:
        return due_bound(text, side=side, now=now)
    except BadInstant:
        return None


def parents(links: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Each todo's parent: the first of its links naming another todo of ``links``.

    Links are written by agents and may loop (a → b → a); the todo where a loop closes is left without a
    parent, so every todo sits exactly once in a tree.
    """
    parent: dict[str, str] = {}
    for key, targets in links.items():
        found = next((link for link in targets if link != key and link in links), None)
        if found is not None:
            parent[key] = found
    for key in list(parent):
        seen = {key}
        step = parent.get(key)
        while step is not None:
            if step in seen:
                del parent[key]
                break
            seen.add(step)
            step = parent.get(step)
    return parent


def subtree(root: str, parent: Mapping[str, str]) -> set[str]:
    """The root and every todo whose chain of parents reaches it."""
    inside = {root}
    for key in parent:
        chain: list[str] = []
        step: str | None = key
        while step is not None and step not in inside:
            chain.append(step)
            step = parent.get(step)
        if step is not None:
            inside.update(chain)
    return inside


def blocking_cycle(key: str, blockers: Sequence[str], graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """The shortest loop ``key`` would close by waiting on ``blockers`` (``[key, ..., key]``), or None.

    ``graph`` is every todo's current blockedBy; ``key``'s own entry is replaced by ``blockers``.
    """
    edges = {**graph, key: list(blockers)}
    # Breadth first along "waits on" edges, so the loop named is the shortest one to break.
    came_from: dict[str, str] = {}
    frontier = [key]
    while frontier:
        following = []
        for node in frontier:
            for target in edges.get(node, ()):
                if target == key:
                    path = [node]
                    while path[-1] != key:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), key]
                if target not in came_from and target in edges:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    return None


def open_blockers(blockers: Iterable[str], open_keys: set[str]) -> list[str]:
    """The blockers still to be done; a completed, deleted or purged blocker no longer holds anything up."""
    return [key for key in blockers if key in open_keys]

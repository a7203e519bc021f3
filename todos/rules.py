"""The field rules of a Todo, shared by the services and by the MCP input schemas."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from base.invisible import format_character
from todos.models import Priority

ID_MAX = 128
NAME_MAX = 255
DESCRIPTION_MAX = 20_000
LINKS_MAX = 100
TAGS_MAX = 20
TAG_MAX = 40
BLOCKERS_MAX = 100
CLAIMER_MAX = 64
CLAIM_MINUTES = 30
CLAIM_MINUTES_MAX = 24 * 60
PRIORITIES: tuple[str, ...] = tuple(Priority.values)
PRIORITY_PROBLEM = f"priority must be one of {', '.join(PRIORITIES)}"


def bad_character(text: str, *, multiline: bool = False, whitespace: bool = True) -> str | None:
    """The first character the field may not hold, described for the reader, or None."""
    for char in text:
        if multiline and char in "\n\t":
            continue
        if 0xD800 <= ord(char) <= 0xDFFF:
            return "a lone surrogate"
        if unicodedata.category(char) == "Cc":
            return "NUL" if char == "\x00" else f"control character U+{ord(char):04X}"
        if not whitespace and char.isspace():
            return "whitespace"
    return None


def id_problem(value: str, *, field: str = "id") -> str | None:
    if not 1 <= len(value) <= ID_MAX:
        return f"{field} must be 1-{ID_MAX} characters, got {len(value)}"
    if bad := bad_character(value, whitespace=False) or format_character(value):
        return f"{field} must not contain {bad}"
    return None


def claimer_problem(value: str) -> str | None:
    """A claimer's name is shown as ``@name`` in compact lists: one word, like an id, but shorter."""
    if len(value) > CLAIMER_MAX:
        return f"by must be 1-{CLAIMER_MAX} characters, got {len(value)}"
    return id_problem(value, field="by")


def claimer_name(client_name: str) -> str | None:
    """A client's self-given name (``Claude Code``) as a claimer: whitespace runs become hyphens, control
    characters and invisible formatting ones go, at most CLAIMER_MAX characters; None when nothing is left."""
    words = (
        "".join(char for char in word if not (bad_character(char) or format_character(char)))
        for word in client_name.split()
    )
    return "-".join(word for word in words if word)[:CLAIMER_MAX] or None


def minutes_problem(value: int) -> str | None:
    if not 1 <= value <= CLAIM_MINUTES_MAX:
        return f"minutes must be 1-{CLAIM_MINUTES_MAX} (24 hours), got {value}"
    return None


def text_problem(field: str, value: str, *, low: int, high: int, multiline: bool = False) -> str | None:
    if not low <= len(value) <= high:
        return f"{field} must be {low}-{high} characters, got {len(value)}"
    if bad := bad_character(value, multiline=multiline):
        return f"{field} must not contain {bad}"
    return None


def links_problems(links: Iterable[str]) -> list[str]:
    items = list(links)
    if len(items) > LINKS_MAX:
        return [f"links must have at most {LINKS_MAX} items, got {len(items)}"]
    problems = []
    for index, link in enumerate(items):
        if not isinstance(link, str):
            problems.append(f"links item {index} must be a string")
        elif problem := id_problem(link, field=f"links item {index}"):
            problems.append(problem)
    return problems


# One word: letters and digits of any script, joined by single hyphens or underscores (`needs-review`, `v2`).
TAG_PATTERN = r"[^\W_]+(?:[-_][^\W_]+)*"
_TAG = re.compile(TAG_PATTERN)
TAG_RULE = "a lowercase word of letters and digits, hyphens or underscores allowed inside, like needs-review"


def tag_problem(value: str, *, field: str = "tag") -> str | None:
    """The tag as it is stored is ``value.lower()``: people write `Backend`, the list keeps `backend`."""
    if not 1 <= len(value) <= TAG_MAX:
        return f"{field} must be 1-{TAG_MAX} characters, got {len(value)}"
    if invisible := format_character(value):
        return f"{field} must not contain {invisible}"
    if not _TAG.fullmatch(value):
        return f"{field} must be {TAG_RULE}"
    return None


def tags_problems(tags: Iterable[str]) -> list[str]:
    items = list(tags)
    if len(items) > TAGS_MAX:
        return [f"tags must have at most {TAGS_MAX} items, got {len(items)}"]
    problems = []
    for index, tag in enumerate(items):
        if not isinstance(tag, str):
            problems.append(f"tags item {index} must be a string")
        elif problem := tag_problem(tag, field=f"tags item {index}"):
            problems.append(problem)
    return problems


def normal_tags(tags: Iterable[str]) -> list[str]:
    return dedupe(tag.lower() for tag in tags)


def blockers_problems(blockers: Iterable[str]) -> list[str]:
    items = list(blockers)
    if len(items) > BLOCKERS_MAX:
        return [f"blockedBy must have at most {BLOCKERS_MAX} items, got {len(items)}"]
    problems = []
    for index, blocker in enumerate(items):
        if not isinstance(blocker, str):
            problems.append(f"blockedBy item {index} must be a string")
        elif problem := id_problem(blocker, field=f"blockedBy item {index}"):
            problems.append(problem)
    return problems


def dedupe(links: Iterable[str]) -> list[str]:
    """First occurrence wins, so the agent's order is kept."""
    return list(dict.fromkeys(links))

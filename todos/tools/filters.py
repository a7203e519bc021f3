"""The filters and views that list_todos, search_todos and next_todos share: their schemas, and the reading
of them into a ``TodoFilter`` (shared with the REST API)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from todos import rules
from todos.planning import DUE_RULE, TodoFilter, read_due
from todos.tools.arguments import Arguments, fail_on, read
from todos.tools.schemas import ID_SCHEMA

DUE_HELP = "`today`, `tomorrow` and `this week` are UTC days and the ISO week (Monday to Sunday); `overdue` is now."
FILTERS: dict[str, Any] = {
    "dueBefore": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "description": "Only todos with a deadline before this: an ISO 8601 date or date-time, or `today` (due by "
        f"the end of today, overdue included), `tomorrow`, `this week`, `overdue` (past due). {DUE_HELP} E.g. "
        "`this week` (due by Sunday night) or `2026-12-24`.",
    },
    "dueAfter": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "description": "Only todos with a deadline at or after this: an ISO 8601 date or date-time, or `today` "
        "(due today or later), `tomorrow`, `this week`, `overdue` (not yet past due). E.g. `2026-12-01` with "
        "dueBefore `2027-01-01`: due in December.",
    },
    "priority": {
        "type": "string",
        "enum": list(rules.PRIORITIES),
        "description": "Only todos of this priority, e.g. `high`.",
    },
    "under": {
        **ID_SCHEMA,
        "description": "Only this todo and its sub-tasks at any depth (a todo's parent is the first of its links "
        "that names another of your todos). Usually a root todo's id, e.g. `remodel-basement`.",
    },
    "tag": {
        "type": "string",
        "minLength": 1,
        "maxLength": rules.TAG_MAX,
        "description": "Only todos with this tag (any case), e.g. `backend`.",
    },
}
VIEW: dict[str, Any] = {
    "type": "string",
    "enum": ["json", "compact", "tree"],
    "default": "json",
    "description": "`json` (the default): an array of Todos. `compact`: one line per todo, "
    "`id · priority · due · name`, then #tags and [done], [deleted] or [blocked by ...], and @who while "
    "someone holds a claim on it; sub-tasks indented "
    "under their parent; usually a fifth to a third of the JSON's characters. `tree`: the JSON with sub-tasks "
    'nested under `subtasks` of their parent, e.g. `[{"id":"remodel-basement",…,"subtasks":[{"id":"drywall",…}]}]`.',
}
FILTER_HELP = (
    "Narrow with dueBefore/dueAfter (ISO 8601, or today, tomorrow, this week, overdue), priority, under (a todo "
    'and its sub-tasks) and tag; view "compact" answers one short line per todo, view "tree" nests sub-tasks.'
)


def filter_fields(values: Mapping[str, Any], problems: dict[str, str]) -> TodoFilter:
    """The filters among read arguments, as the selectors take them; a bad one is recorded in ``problems``
    under its name (shared with the REST API)."""
    now = timezone.now()
    bounds = {}
    for name, side in (("dueBefore", "before"), ("dueAfter", "after")):
        if name in values and name not in problems:
            bounds[name] = read_due(values[name], side=side, now=now)
            if bounds[name] is None:
                problems[name] = f"{name} must be {DUE_RULE}"
    under = values.get("under")
    if under is not None and "under" not in problems and (problem := rules.id_problem(under, field="under")):
        problems["under"] = problem
    tag = values.get("tag")
    if tag is not None and "tag" not in problems and (problem := rules.tag_problem(tag)):
        problems["tag"] = problem
    return TodoFilter(
        due_before=bounds.get("dueBefore"),
        due_after=bounds.get("dueAfter"),
        priority=values.get("priority"),
        under=under,
        tag=tag.lower() if tag is not None else None,
    )


def read_listing(schema: Mapping[str, Any], arguments: Any) -> tuple[Arguments, TodoFilter]:
    values, problems = read(schema, arguments)
    filters = filter_fields(values, problems)
    fail_on(problems, schema)
    return values, filters

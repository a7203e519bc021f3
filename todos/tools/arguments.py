"""Reading a tool's arguments: defaults applied, one plain sentence per bad field, and the refusal that joins
them in the order the schema lists the fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_bridge.arguments import Problem, read_arguments
from mcp_bridge.tools import ToolFailure
from todos import rules
from todos.tools.schemas import NO_INPUT

Arguments = dict[str, Any]


def _wording(problem: Problem, schema: Mapping[str, Any]) -> str:
    if problem.kind == "enum":
        spec = schema["properties"][problem.field]
        allowed = next((branch["enum"] for branch in spec.get("anyOf", ()) if "enum" in branch), None) or spec["enum"]
        return f"{problem.field} must be one of {', '.join(allowed)}"
    return f"{problem.field} {problem.detail}"


def read(
    schema: Mapping[str, Any], arguments: Any, *, multiline: tuple[str, ...] = ()
) -> tuple[Arguments, dict[str, str]]:
    """The arguments with defaults applied and nulls dropped, and one problem sentence per bad field."""
    values, problems = read_arguments(schema, arguments, multiline=multiline)
    found: dict[str, str] = {}
    for problem in problems:
        found.setdefault(problem.field, _wording(problem, schema))
    if isinstance(arguments, Mapping):
        known = schema.get("properties", {})
        for name in arguments:
            if name not in known:
                # An unknown argument is usually a misspelt one: refusing beats silently dropping it.
                expected = ", ".join(known) or "no arguments"
                found.setdefault(str(name), f"{name} is not an argument of this tool (it takes {expected})")
    return values, found


def fail_on(problems: Mapping[str, str], schema: Mapping[str, Any] = NO_INPUT) -> None:
    """One sentence for every bad field, in the order the schema lists them (unknown arguments last)."""
    if problems:
        order = {name: position for position, name in enumerate(schema.get("properties", {}))}
        fields = sorted(problems, key=lambda name: order.get(name, len(order)))
        raise ToolFailure("; ".join(problems[name] for name in fields))


def field_rules(values: Mapping[str, Any], problems: dict[str, str]) -> None:
    """The rules of ids, links, tags and blockers past what the schema checks, recorded under each field."""
    if "id" in values and (problem := rules.id_problem(values["id"])):
        problems.setdefault("id", problem)
    for name, check in (("links", rules.links_problems), ("tags", rules.tags_problems),
                        ("blockedBy", rules.blockers_problems)):
        if name in values and (found := check(values[name])):
            problems.setdefault(name, "; ".join(found))

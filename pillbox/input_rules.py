"""The rules every tool's input keeps beyond what its JSON schema says (no blank text, no argument the tool does
not take, something to change or to look for), and the wording of what breaks them: invalid_input for input that
cannot be read, validation_error (with the content-over-limit advice) for the rest. The REST API reads its
request bodies with the same, so it cannot drift from what agents read."""

from __future__ import annotations

from typing import Any

from base.invisible import format_character
from mcp_bridge.arguments import Problem
from pillbox import texts
from pillbox.exceptions import InvalidInput, PillboxError, ValidationFailed
from pillbox.limits import CONTENT_LIMIT

NONBLANK = ("title", "compound", "name", "display_name", "author_name", "author_email", "content")
# Ids, names and compounds (a tag): no invisible formatting character may make them read as something else.
VISIBLE = ("id", "prescription_id", "bottle_id", "name", "display_name", "compound", "author_name", "author_email")


def problems_error(tool: str, problems: list[Problem], arguments: dict[str, Any]) -> PillboxError:
    fields = {p.field: p.detail for p in problems}
    unreadable = [p for p in problems if p.is_unreadable]
    if unreadable:
        first = unreadable[0]
        return InvalidInput(f"The input of {tool} cannot be read: {first.field} {first.detail}.", **fields)
    content = arguments.get("content") if isinstance(arguments, dict) else None
    if isinstance(content, str) and len(content) > CONTENT_LIMIT and "content" in fields:
        over = texts.plural(len(content) - CONTENT_LIMIT, "character")
        advice = "trim it" if tool.endswith("_revise") else "split it into several pills"
        fields["content"] = f"{fields['content']}: {over} over the limit; {advice}"
        return ValidationFailed(f"content is {over} over the {CONTENT_LIMIT} limit; {advice}.", **fields)
    verb = "breaks" if len(problems) == 1 else "break"
    return ValidationFailed(f"{texts.plural(len(problems), 'field')} of {tool} {verb} the rules; fix "
                            f"{'it' if len(problems) == 1 else 'them'} and call again.", **fields)


def unknown_arguments(tool: str, schema: dict[str, Any], arguments: Any) -> PillboxError | None:
    """A misspelt argument silently dropped would change what the call means: refuse it, naming what is taken."""
    if not isinstance(arguments, dict):
        return None
    known = schema["properties"]
    unknown = [str(name) for name in arguments if name not in known]
    if not unknown:
        return None
    shown = repr(unknown[0][:64])
    accepted = ", ".join(known) or "no arguments"
    return InvalidInput(f"{shown} is not an argument of {tool}; it takes {accepted}.",
                        **{"unknown": ", ".join(repr(name[:64]) for name in unknown[:5]), "accepted": accepted})


def field_problems(values: dict[str, Any]) -> list[Problem]:
    """What the schema cannot say: blank text, and invisible formatting characters in ids and names."""
    blank = [Problem(name, "length", "must not be blank") for name in NONBLANK
             if isinstance(values.get(name), str) and not values[name].strip()]
    invisible = [Problem(name, "characters", f"must not contain {found}") for name in VISIBLE
                 if isinstance(values.get(name), str) and (found := format_character(values[name]))]
    return blank + invisible


def require_change(tool_name: str, changes: dict[str, str], supersedes: list[str] | None = None) -> None:
    if not changes and supersedes is None:
        raise ValidationFailed(f"{tool_name} needs at least one of title, content, compound or supersedes.",
                               fields="give title, content, compound or supersedes")


def require_query_or_compound(query: str | None, compound: str | None, *, timed: bool = False) -> None:
    """Something to look for: a query, a compound, or (``timed``) a time window to list."""
    if not query and not compound and not timed:
        raise ValidationFailed("Give a query, a compound, or both.", query="required unless compound is given")

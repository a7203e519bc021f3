"""Reading tool arguments against the tool's own input schema.

The same JSON Schema an agent reads is the one that is enforced, so the two cannot drift. Problems come
back structured (field, kind, detail); each app words them its own way. The rules (docs/errors.md): ``null`` is
the same as leaving an optional field out, lengths count code points, control characters are refused
(newline and tab only where a field allows several lines).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["missing", "type", "enum", "length", "range", "characters", "items"]
JSON_TYPES = {"string": "a string", "integer": "an integer", "boolean": "a boolean", "array": "an array",
              "object": "an object"}


@dataclass(frozen=True)
class Problem:
    field: str
    kind: Kind
    detail: str

    @property
    def is_unreadable(self) -> bool:
        """Input that cannot be read at all (invalid_input) rather than a broken rule (validation_error)."""
        return self.kind in ("missing", "type", "enum")


def _bad_character(text: str, multiline: bool) -> str | None:
    for char in text:
        if char in "\n\t" and multiline:
            continue
        if 0xD800 <= ord(char) <= 0xDFFF:
            return "a lone surrogate"
        if unicodedata.category(char) == "Cc":
            return "NUL" if char == "\x00" else f"control character U+{ord(char):04X}"
    return None


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        # JSON Schema counts 3.0 as an integer, and so do clients that send every number as a float.
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _check_string(name: str, value: str, spec: Mapping[str, Any], multiline: bool) -> Problem | None:
    if "enum" in spec and value not in spec["enum"]:
        return Problem(name, "enum", f"must be one of {', '.join(spec['enum'])}, got {value!r}"[:300])
    low, high = spec.get("minLength", 0), spec.get("maxLength")
    if len(value) < low or (high is not None and len(value) > high):
        bounds = f"{low}-{high}" if high is not None else f"at least {low}"
        return Problem(name, "length", f"must be {bounds} characters, got {len(value)}")
    if bad := _bad_character(value, multiline):
        return Problem(name, "characters", f"must not contain {bad}")
    return None


def read_arguments(
    schema: Mapping[str, Any],
    arguments: Mapping[str, Any] | None,
    *,
    multiline: Collection[str] = (),
) -> tuple[dict[str, Any], list[Problem]]:
    """Return the known arguments (defaults applied, nulls dropped) and every problem found."""
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    if arguments is not None and not isinstance(arguments, Mapping):
        return values, [Problem("arguments", "type", "must be an object")]
    given = {key: value for key, value in (arguments or {}).items() if value is not None}
    properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in given:
            problems.append(Problem(name, "missing", "is required"))
    for name, spec in properties.items():
        if name not in given:
            if "default" in spec:
                values[name] = spec["default"]
            continue
        value = given[name]
        spec = _without_null(spec)
        kind = spec.get("type", "string")
        if not _type_ok(value, kind):
            problems.append(Problem(name, "type", f"must be {JSON_TYPES.get(kind, kind)}, got {_json_type(value)}"))
            continue
        problem: Problem | None = None
        if kind == "string":
            problem = _check_string(name, value, spec, name in multiline)
        elif kind == "integer":
            value = int(value)
            low, high = spec.get("minimum"), spec.get("maximum")
            if (low is not None and value < low) or (high is not None and value > high):
                problem = Problem(name, "range", f"must be {low}-{high}, got {value}")
        elif kind == "array":
            problem = _check_array(name, value, spec)
        if problem is not None:
            problems.append(problem)
        else:
            values[name] = value
    return values, problems


def _without_null(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A nullable field's non-null schema: nulls were dropped as absent, so only the other branch matters.

    Nullable is written either as a type array (``["string", "null"]``) or as ``anyOf`` branches.
    """
    kind = spec.get("type")
    if isinstance(kind, list):
        return {**spec, "type": next((item for item in kind if item != "null"), "string")}
    branches = spec.get("anyOf")
    if isinstance(branches, list):
        branch = next((b for b in branches if isinstance(b, Mapping) and b.get("type") != "null"), {})
        return {**{k: v for k, v in spec.items() if k != "anyOf"}, **branch}
    return spec


def _check_array(name: str, value: list[Any], spec: Mapping[str, Any]) -> Problem | None:
    high = spec.get("maxItems")
    if high is not None and len(value) > high:
        return Problem(name, "items", f"must have at most {high} items, got {len(value)}")
    item_spec = spec.get("items", {})
    for index, item in enumerate(value):
        kind = item_spec.get("type", "string")
        if not _type_ok(item, kind):
            return Problem(name, "type", f"item {index} must be {JSON_TYPES.get(kind, kind)}, got {_json_type(item)}")
        if kind == "string" and (problem := _check_string(f"{name}[{index}]", item, item_spec, False)):
            return Problem(name, problem.kind, f"item {index} {problem.detail}")
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"

"""Hypothesis strategies for hostile MCP input: each tool's own input schema, plus what agents really send.

Settings: a bounded run for CI, and a long run (``HYPOTHESIS_PROFILE=long``: 350 examples per tool, over 10,000
across the 31 tools) for when the tools change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PER_TOOL = 350 if LONG else 25


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=not LONG,  # CI: the same examples every run; the long run explores
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


MEGABYTE = "A" * 1_000_000
MEGABYTE_WIDE = "é" * 600_000  # over a MiB once UTF-8 encoded


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


HOSTILE_STRINGS: list[str] = [
    "",
    " ",
    "\t",
    "\n",
    "   \n\t ",
    "\x00",
    "a\x00b",
    "\x00" * 10,
    "\x1b[31mred",
    "\x7f",
    "\u2028",
    "\u202e",
    "\ud800",
    "x\udfffy",
    "\udbff\udfff",
    "😀" * 64,
    "e\u0301" * 100,
    "\ufeff",
    "%00",
    "\\x00",
    MEGABYTE,
    MEGABYTE_WIDE,
    "x" * 256,
    "x" * 5001,
    "x" * 20_001,
    "y" * 4097,
    # FTS5 syntax and SQL fragments
    '"',
    '""',
    "'",
    "*",
    '"auth"*',
    "NEAR(a b)",
    "a OR b",
    "a AND NOT b",
    "title:secret",
    "^start",
    "(((",
    ")",
    "{title content}: x",
    "- -- ---",
    "'; DROP TABLE pillbox_pill; --",
    "1' OR '1'='1",
    "% _ \\",
    "%",
    "_",
    "\\",
    "NULL",
    "null",
    "None",
    "0x00",
    "1e999",
    "-1",
    "select * from auth_user",
    # paths
    "../../../../../../etc/passwd",
    "..",
    ".",
    "/",
    "/etc",
    "~",
    "~root",
    "~/.pillbox",
    "/proc/self/cwd",
    "/dev/zero",
    "//",
    "./.pillbox",
    "a/../../..",
    "/tmp/../..",
    "C:\\Windows",
    "file:///etc",
    "~nosuchuser-pillbox",
    "~nosuchuser-pillbox/x",
    "/tmp/" + "n" * 300,
    "x" * 255 + "/" + "y" * 300,
    # id-like
    "01234567",
    "0123456",
    "0" * 8,
    "f" * 32,
    "0" * 33,
    "-" * 36,
    "0123-4567",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "٠١٢٣٤٥٦٧٨",
    "０１２３４５６７",
    "0x12345678",
    "0123456789abcdefg",
    "01234567 89abcdef",
    # templates and markup
    "{{7*7}}",
    "${jndi:ldap://x}",
    "<script>alert(1)</script>",
    "%s%s%s%n",
    "{0}",
    "\r\nSet-Cookie: x=y",
]
DATES = [
    "2026-11-30",
    "2026-11-30T09:15:00Z",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "2026-02-30",
    "2026-W01-1",
    "2026-001",
    "2026-366",
    "24:00",
    "2026-11-30T24:00:00Z",
    "now",
    "+10000-01-01",
    "2026-11-30T09:15:00.123456789Z",
    "1970-01-01T00:00:00Z",
]
HUGE_NUMBERS = [
    0,
    -1,
    -(2**31),
    2**31,
    2**63,
    -(2**63) - 1,
    2**64,
    10**100,
    -(10**100),
    101,
    201,
    1.5,
    float("inf"),
    float("-inf"),
    float("nan"),
    1e308,
]

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
hostile = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.sampled_from(HUGE_NUMBERS),
    st.sampled_from(DATES),
    json_values,
    st.text(),
    st.builds(_nested, st.sampled_from([50, 500, 5000])),
    st.lists(st.sampled_from(HOSTILE_STRINGS), max_size=3),
    st.just([None] * 101),
    st.just(["link"] * 150),
)


def _without_null(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    kind = spec.get("type")
    if isinstance(kind, list):
        return {**spec, "type": next((item for item in kind if item != "null"), "string")}
    if isinstance(spec.get("anyOf"), list):
        branch = next((b for b in spec["anyOf"] if b.get("type") != "null"), {})
        return {**{k: v for k, v in spec.items() if k != "anyOf"}, **branch}
    return spec


def valid_value(name: str, spec: Mapping[str, Any], ids: Sequence[str]) -> st.SearchStrategy[Any]:
    """Values the schema allows (the generator only: the tools decide what is really valid)."""
    spec = _without_null(spec)
    kind = spec.get("type", "string")
    if kind == "string":
        if "enum" in spec:
            return st.sampled_from(list(spec["enum"]))
        if (name == "id" or name.endswith("_id")) and ids:
            return st.sampled_from(list(ids))
        if name in ("completedAt", "deadlineAt"):
            return st.sampled_from(DATES)
        low = spec.get("minLength", 0)
        high = min(spec.get("maxLength", 300), 300)
        return st.text(min_size=low, max_size=max(low, high))
    if kind == "integer":
        return st.integers(spec.get("minimum", -(2**40)), spec.get("maximum", 2**40))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(valid_value(name, spec.get("items", {}), ids), max_size=min(spec.get("maxItems", 5), 5))
    return json_values


def arguments_for(schema: Mapping[str, Any], ids: Sequence[str] = ()) -> st.SearchStrategy[dict[str, Any]]:
    """A tool's arguments: each property valid or hostile, required ones usually present, sometimes an unknown
    argument too."""
    properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    required = set(schema.get("required", ()))

    def field(name: str) -> st.SearchStrategy[Any]:
        return st.one_of(valid_value(name, properties[name], ids), valid_value(name, properties[name], ids), hostile)

    present = st.fixed_dictionaries(
        {name: field(name) for name in properties if name in required},
        optional={name: field(name) for name in properties if name not in required},
    )
    unknown = st.dictionaries(
        st.one_of(st.sampled_from(["ID", "uid", "owner", "user", "\x00", "__proto__", ""]), st.text(max_size=20)),
        hostile,
        max_size=2,
    )
    dropped = st.just(set())
    if required:
        dropped = st.one_of(dropped, dropped, st.sets(st.sampled_from(sorted(required)), max_size=len(required)))

    def combine(values: dict[str, Any], extra: dict[str, Any], drop: set[str], with_extra: bool) -> dict[str, Any]:
        merged = {key: value for key, value in values.items() if key not in drop}
        if with_extra:
            merged.update({key: value for key, value in extra.items() if key not in properties})
        return merged

    return st.builds(combine, present, unknown, dropped, st.booleans())

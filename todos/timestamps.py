"""Instants as the Todos API reads and writes them: any ISO 8601 date or date-time in, UTC with milliseconds out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.utils import timezone

# datetime.fromisoformat (3.11) reads calendar and week dates, basic and extended forms, comma decimals and
# offsets; ISO 8601 also has ordinal dates (2026-334) and the end-of-day hour 24:00, which it does not read.
_ORDINAL = re.compile(r"(\d{4})-?(\d{3})")
_END_OF_DAY = re.compile(r"(.+?[Tt ])24(?::?00(?::?00(?:[.,]0+)?)?)?((?:[Zz]|[+-].+)?)")
# fromisoformat takes any character between date and time; ISO 8601 takes T (and people write a space).
_DATE_TIME_SEPARATOR = re.compile(r"[^Tt ]*?(?:\d{8}|\d{4}-\d\d-\d\d|\d{4}-?W\d\d-?\d)(.)")


class BadInstant(ValueError):
    """The text is not an ISO 8601 date or date-time this API can store."""


def parse_instant(text: str) -> datetime:
    """An aware UTC datetime; a date-time without a zone is UTC, a bare date is midnight UTC."""
    if match := _ORDINAL.fullmatch(text):
        year, day = int(match[1]), int(match[2])
        try:
            start = date(year, 1, 1)
        except ValueError as error:
            raise BadInstant(text) from error
        if not 1 <= day <= (date(year, 12, 31) - start).days + 1:
            raise BadInstant(text)
        return datetime(year, 1, 1, tzinfo=UTC) + timedelta(days=day - 1)
    extra_day = timedelta(0)
    if match := _END_OF_DAY.fullmatch(text):
        text, extra_day = f"{match[1]}00:00:00{match[2]}", timedelta(days=1)
    separator = _DATE_TIME_SEPARATOR.match(text)
    if separator and separator[1] not in "Tt ":
        raise BadInstant(text)
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC) + extra_day
    except (ValueError, OverflowError) as error:
        # OverflowError: an offset that pushes year 1 or year 9999 out of range once moved to UTC.
        raise BadInstant(text) from error


def format_instant(moment: datetime | None) -> str | None:
    """`2026-11-30T09:15:42.123Z`; strftime's %Y would drop the leading zeros of years before 1000."""
    if moment is None:
        return None
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
        f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


def read_instant(values: Mapping[str, Any], name: str, problems: dict[str, str]) -> datetime | None:
    """The instant in ``values[name]`` (None when absent); a bad one is recorded in ``problems`` under its name."""
    text = values.get(name)
    if text is None:
        return None
    try:
        return parse_instant(text)
    except BadInstant:
        problems[name] = f"{name} must be an ISO 8601 date or date-time such as 2026-11-30 or 2026-11-30T09:15:00Z"
        return None


class Clock:
    """The time claims are judged and stamped by: the real time, moved on by ``advance`` in tests (the same
    process's servers see it too), so a lease can run out without a test waiting for it."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def now(self) -> datetime:
        return timezone.now() + self.offset

    def advance(self, delta: timedelta) -> None:
        self.offset += delta

    def reset(self) -> None:
        self.offset = timedelta(0)


clock = Clock()

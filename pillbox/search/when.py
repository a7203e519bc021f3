"""Recall by time: the window of creation times a search keeps to, read from its ``since`` and ``until`` arguments
or from the English time words of its query ('yesterday', 'last week', 'since Monday', 'in March 2026',
'before 2026-11-01', 'after the 3rd', 'this morning', 'last weekend', 'a few days ago'), which are then taken out of
the words searched.

Days, weeks (Monday first), months and years are the caller's calendar: in the ``time_zone`` the client gives,
else the server's (Django's ``TIME_ZONE``). A window is half-open: its start is in it, its end is not. A word is
read as a time only where nothing else is meant: a month or a weekday needs a preposition before it ('in March',
not 'march the soldiers') or a year after it, 'May' a capital besides, and a possessive ('today's build') is
never a time. ``now`` can be given, so the reading is tested at any moment.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone

from pillbox.exceptions import ValidationFailed
from pillbox.search.terms import FOLDED_STOP_WORDS, extract_terms

MONTHS = {name.lower(): at for at, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): at for at, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
WEEKDAYS = {name.lower(): at for at, name in enumerate(calendar.day_name)}
# 'sat' and 'sun' are words of their own.
WEEKDAYS |= {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
UNITS = {"h": "hour", "hour": "hour", "d": "day", "day": "day", "w": "week", "week": "week", "m": "month",
         "month": "month", "y": "year", "year": "year"}
EARLIEST_YEAR, LATEST_YEAR = 1970, 2200


def _words(names: dict[str, int], *, may: str = "may") -> str:
    """Names longest first (so 'march' is tried before 'mar'), 'may' as given."""
    ordered = sorted((name for name in names if name != "may"), key=len, reverse=True)
    return "(?:" + "|".join(ordered) + (f"|{may}" if "may" in names else "") + ")"


MONTH = _words(MONTHS, may="(?-i:May)")  # in a query, never the modal verb
ANY_MONTH = _words(MONTHS)  # in what was read as a time already
WEEKDAY = _words(WEEKDAYS)
# Counts a person gives loosely, as the range of units they can mean: 'a few days ago' is two to five days back,
# 'the last few days' the five days before now (a window wider than meant loses nothing; a narrower one would).
VAGUE = {"couple": (2, 3), "few": (2, 5), "several": (3, 7)}
NUMBER = r"(?:\d{1,3}|(?:a\s+)?(?:couple(?:\s+of)?|few)|several|" + "|".join(NUMBERS) + ")"
PART_OF_DAY = {"morning": (0, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}
UNIT = r"(?:hour|day|week|month|year)s?"
ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
YEAR = r"(?:19[7-9]\d|2[01]\d\d)"
ISO_DAY = r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?"
# A point in time a person names, as a span of it (a day, a week, a month, a year). Those needing no preposition
# first: they mean a time wherever they stand.


def _points(month: str) -> tuple[list[str], list[str]]:
    free = [
        r"(?:the\s+)?day\s+before\s+yesterday",
        # A part of a day: 'this morning', 'yesterday afternoon', 'last night', 'tonight'.
        r"(?:this|yesterday|today)\s+(?:morning|afternoon|evening)|(?:last|yesterday)\s+night|tonight",
        r"(?<!\bthe\s)(?:earlier\s+)?(?:today|yesterday)",  # not 'the today widget'
        r"(?:earlier\s+)?(?:this|last|previous)\s+(?:week|month|year)(?!\s+of\b)",  # not 'the last week of May'
        r"(?:this|last|past|previous)\s+weekend|(?:over|during|on|at)\s+the\s+weekend",
        rf"{NUMBER}\s+{UNIT}\s+ago", rf"(?:last|this)\s+{WEEKDAY}", rf"{month}\s+{ORDINAL},?\s+{YEAR}",
        rf"{ORDINAL}\s+(?:of\s+)?{month},?\s+{YEAR}", rf"{month},?\s+{YEAR}",
    ]
    return free, free + [ISO_DAY, rf"{month}\s+{ORDINAL}", rf"(?:the\s+)?{ORDINAL}\s+(?:of\s+)?{month}", month,
                         WEEKDAY, r"the\s+\d{1,2}(?:st|nd|rd|th)", YEAR]


FREE_POINTS, POINTS = _points(MONTH)
POINT = "(?:" + "|".join(POINTS) + ")"
FREE_POINT = "(?:" + "|".join(FREE_POINTS) + ")"
ANY_POINT = "(?:" + "|".join(_points(ANY_MONTH)[1]) + ")"  # an argument is a time: 'may 2026' is May
# Where the phrase may begin and end: not inside a word, a path or a hyphenated name, nor before a possessive.
BEGIN = r"(?<![\w\-./'’])"
END = r"(?![\w\-/]|['’]s\b|\.\w)"
BEFORE, AFTER, SINCE, UNTIL, ON = "before", "after", "since", "until", "on"
# 'from' alone is where a thing comes from ('the notes from last week'); 'from ... to ...' is read apart.
PREPOSITIONS = {"since": SINCE, "from": ON, "after": AFTER, "before": BEFORE, "until": UNTIL, "till": UNTIL,
                "up to": UNTIL, "through": UNTIL, "on": ON, "in": ON, "during": ON}
PHRASE = re.compile(
    BEGIN + "(?:"
    rf"between\s+(?P<between>{POINT})\s+and\s+(?P<and>{POINT})"
    rf"|from\s+(?P<from>{POINT})\s+(?:to|until|till|through)\s+(?P<to>{POINT})"
    rf"|(?:(?:in|over|during|within|for)\s+)?(?:the\s+)?(?:last|past)\s+(?P<count>{NUMBER})\s+(?P<unit>{UNIT})"
    # 'the past week', 'in the last month' (not 'the last week of March'): that long back from now.
    rf"|(?:(?:in|over|during|within|for)\s+)?the\s+(?:past|last)\s+(?P<one>hour|day|week|month|year)(?!\s+of\b)"
    rf"|(?P<prep>since|from|after|before|until|till|up\s+to|through|on|in|during)\s+(?P<point>{POINT})"
    rf"|(?P<free>{FREE_POINT})"
    ")" + END,
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Window:
    """Creation times from ``start`` (in) to ``end`` (out); None is open. ``source`` says where it was read."""

    start: datetime | None
    end: datetime | None
    zone: tzinfo
    source: str
    unapplied: str = ""  # a time phrase of the query, not applied because an argument gave the window
    # The query's time words named a window no row was created in: they speak of when the memory's content
    # happened, not when it was written, and every time was searched with them as words (``engine.timed_search``).
    unused: bool = False

    @property
    def from_query(self) -> bool:
        return self.source.startswith('"')

    def describe(self) -> str:
        """``2026-11-23 → 2026-11-30 UTC (from "last week")``: the answer's ``time:`` line."""
        start, end = self._shown(self.start), self._shown(self.end)
        span = f"{start} → {end}" if start and end else f"since {start}" if start else f"before {end}"
        note = f"; {self.unapplied} in the query not applied" if self.unapplied else \
            "; nothing was written then, so every time was searched, the words as words" if self.unused else ""
        return f"{span} {zone_name(self.zone)} (from {self.source}{note})"

    def _shown(self, moment: datetime | None) -> str:
        if moment is None:
            return ""
        local = moment.astimezone(self.zone)
        if local.time() == time():
            return local.strftime("%Y-%m-%d")
        return local.strftime("%Y-%m-%d %H:%M" if not local.second else "%Y-%m-%d %H:%M:%S")

    @property
    def empty(self) -> bool:
        return self.start is not None and self.end is not None and self.start >= self.end


@dataclass(frozen=True)
class Recall:
    """What a search keeps to: its window (None: all time) and the words left to search (None: only time words
    were given, and the window is listed newest first)."""

    window: Window | None
    query: str | None


def zone_name(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or str(zone)


def zone_of(name: str | None) -> tzinfo:
    """The client's IANA time zone (``Europe/Paris``), else the server's."""
    if name is None:
        return timezone.get_default_timezone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationFailed(f"time_zone {name[:64]!r} is not a known IANA time zone; give one such as "
                               "Europe/Paris or America/New_York, or leave it out for the server's.",
                               time_zone="not a known IANA time zone") from None


def recall(query: str | None, *, since: str | None = None, until: str | None = None,
           time_zone: str | None = None, now: datetime | None = None) -> Recall:
    """The window and the words to search. An argument wins over the query's time words (they are still taken
    out of the words, and the answer says they were not applied). Unreadable arguments, or ``since`` not before
    ``until``, are refused."""
    zone = zone_of(time_zone)
    now = now or timezone.now()
    found, words = read_phrases(query, now=now, zone=zone) if query else (None, query)
    left = words if words and any(term not in FOLDED_STOP_WORDS for term in extract_terms(words)) else None
    if since is None and until is None:
        return Recall(found, left if found else query)
    start = bound(since, "since", now=now, zone=zone) if since is not None else None
    end = bound(until, "until", now=now, zone=zone) if until is not None else None
    if start is not None and end is not None and start >= end:
        raise ValidationFailed(f"since ({(since or '')[:64]}) is not before until ({(until or '')[:64]}): the "
                               "window would hold "
                               "nothing. Swap them, or widen the window.",
                               since="must be before until", until="must be after since")
    named = "since/until" if since is not None and until is not None else "since" if since is not None else "until"
    return Recall(Window(start, end, zone, named, unapplied=found.source if found else ""),
                  left if found else query)


def read_phrases(query: str, *, now: datetime, zone: tzinfo) -> tuple[Window | None, str]:
    """The window the query's time words name (several are intersected: 'since March before the 3rd') and the
    query without them."""
    window: Window | None = None
    kept, at = [], 0
    for match in PHRASE.finditer(query):
        span = _phrase(match, now=now, zone=zone)
        if span is None:
            continue
        kept.append(query[at:match.start()])
        at = match.end()
        source = f'"{" ".join(match.group(0).split())}"'
        if window is None:
            window = Window(span[0], span[1], zone, source)
        else:
            window = Window(_later(window.start, span[0]), _earlier(window.end, span[1]), zone,
                            f"{window.source}, {source}")
    kept.append(query[at:])
    return window, " ".join("".join(kept).split())


def bound(text: str, name: str, *, now: datetime, zone: tzinfo) -> datetime:
    """An argument's moment: an ISO date (``until`` takes the whole day in), a date-time, a span back from now
    (``7d``, ``2w``, ``3m``, ``12h``, ``1y``), or a time phrase ('yesterday', 'last week', 'March 2026')."""
    value = text.strip()
    if span := re.fullmatch(r"(\d{1,4})\s*(h|d|w|m|y|hours?|days?|weeks?|months?|years?)", value, re.IGNORECASE):
        return _back(now, int(span.group(1)), UNITS[span.group(2).lower().rstrip("s")])
    found = _point(value, now=now, zone=zone) if re.fullmatch(ANY_POINT, value, re.IGNORECASE) else None
    if found is None:
        raise ValidationFailed(
            f"{name} cannot be read as a time: {value[:64]!r}. Give an ISO date (2026-11-01), a date-time "
            "(2026-11-01T09:30, Z or an offset welcome), or a span back from now (7d, 2w, 3m).",
            **{name: "not a date, a date-time or a span back from now"})
    return found[0] if name == "since" else found[1]


def _phrase(match: re.Match[str], *, now: datetime, zone: tzinfo) -> tuple[datetime | None, datetime | None] | None:
    groups = match.groupdict()
    if groups["between"] or groups["from"]:
        first = _point(groups["between"] or groups["from"], now=now, zone=zone)
        last = _point(groups["and"] or groups["to"], now=now, zone=zone)
        return (first[0], last[1]) if first and last else None
    if groups["count"] or groups["one"]:
        count = _count(groups["count"])[1] if groups["count"] else 1
        return _back(now, count, UNITS[(groups["unit"] or groups["one"]).lower().rstrip("s")]), None
    point = _point(groups["point"] or groups["free"], now=now, zone=zone)
    if point is None:
        return None
    start, end = point
    prep = PREPOSITIONS.get(" ".join(groups["prep"].lower().split()), ON) if groups["prep"] else ON
    return {SINCE: (start, None), AFTER: (end, None), BEFORE: (None, start), UNTIL: (None, end)}.get(prep, point)


def _point(text: str, *, now: datetime, zone: tzinfo) -> tuple[datetime, datetime] | None:
    """The span a point names ('yesterday' is that day, 'last week' that week, 'March' the latest March begun)."""
    words = " ".join(text.lower().replace(",", " ").split())
    today = now.astimezone(zone).date()

    def days(first: date, after_last: date) -> tuple[datetime, datetime]:
        return _midnight(first, zone), _midnight(after_last, zone)

    if re.fullmatch(ISO_DAY, text.strip()):
        return _iso(text.strip(), zone)
    words = words.removeprefix("earlier ")
    if words in ("today", "yesterday") or words.endswith("before yesterday"):
        back = {"today": 0, "yesterday": 1}.get(words, 2)
        return days(today - timedelta(back), today - timedelta(back - 1))
    if m := re.fullmatch(r"(this|today|yesterday|last) (morning|afternoon|evening|night)|(tonight)", words):
        base = today - timedelta(1 if m.group(1) in ("yesterday", "last") else 0)
        hours = PART_OF_DAY[m.group(2) or "night"]
        return _midnight(base, zone) + timedelta(hours=hours[0]), _midnight(base, zone) + timedelta(hours=hours[1])
    if m := re.fullmatch(r"(this|last|past|previous|over the|during the|on the|at the) weekend", words):
        saturday = _unit_start(today, "week") + timedelta(5)  # this week's
        if m.group(1) in ("last", "previous") or (m.group(1) != "this" and today < saturday):
            saturday -= timedelta(7)
        return days(saturday, saturday + timedelta(2))
    if m := re.fullmatch(r"(this|last|previous) (week|month|year)", words):
        first = _unit_start(today, m.group(2))
        if m.group(1) != "this":
            first = _unit_start(first - timedelta(1), m.group(2))
        return days(first, _unit_next(first, m.group(2)))
    if m := re.fullmatch(rf"({NUMBER}) ({UNIT}) ago", words):
        unit = m.group(2).rstrip("s")
        if unit == "hour":
            return None
        fewest, most = _count(m.group(1))
        first = _unit_start(_back(now, most, unit).astimezone(zone).date(), unit)
        last = _unit_start(_back(now, fewest, unit).astimezone(zone).date(), unit)
        return days(first, _unit_next(last, unit))
    if m := re.fullmatch(rf"(?:(last|this) )?({WEEKDAY})", words):
        weekday = WEEKDAYS[m.group(2)]
        if m.group(1) == "this":
            day = _unit_start(today, "week") + timedelta(weekday)
        else:  # the latest such day, today included; 'last Monday' is one before today
            day = today - timedelta((today.weekday() - weekday) % 7 or (7 if m.group(1) else 0))
        return days(day, day + timedelta(1))
    if m := re.fullmatch(r"(?:the )?(\d{1,2})(?:st|nd|rd|th)?", words):
        day_found = _latest_day(today, int(m.group(1)))
        return days(day_found, day_found + timedelta(1)) if day_found else None
    return _calendar(words, today, zone)


def _calendar(words: str, today: date, zone: tzinfo) -> tuple[datetime, datetime] | None:
    """A year, a month (of a year), or a day of a month: the latest one begun when no year is named."""
    if re.fullmatch(YEAR, words):
        year = int(words)
        if year > today.year:  # 'port in 2048': no pill was written then
            return None
        return _midnight(date(year, 1, 1), zone), _midnight(date(year + 1, 1, 1), zone)
    month_name = day_text = year_text = None
    if m := re.fullmatch(rf"({ANY_MONTH})(?: ({ORDINAL}))?(?: ({YEAR}))?", words):
        month_name, day_text, year_text = m.groups()
    elif m := re.fullmatch(rf"(?:the )?({ORDINAL}) (?:of )?({ANY_MONTH})(?: ({YEAR}))?", words):
        day_text, month_name, year_text = m.groups()
    if month_name is None:
        return None
    month = MONTHS[month_name.lower()]
    year = int(year_text) if year_text else today.year - (month > today.month)
    if not day_text:
        first = date(year, month, 1)
        return _midnight(first, zone), _midnight(_unit_next(first, "month"), zone)
    number = int(re.sub(r"\D", "", day_text))
    if not 1 <= number <= calendar.monthrange(year, month)[1]:
        return None
    day = date(year, month, number)
    if not year_text and day > today:
        day = day.replace(year=year - 1) if not (month == 2 and number == 29) else day
    return _midnight(day, zone), _midnight(day + timedelta(1), zone)


def _iso(text: str, zone: tzinfo) -> tuple[datetime, datetime] | None:
    """A date (its whole day) or a date-time (that instant, for both ends); one without an offset is local."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
        return None
    if len(text) == len("2026-11-01"):
        return _midnight(moment.date(), zone), _midnight(moment.date() + timedelta(1), zone)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=zone)
    return moment, moment


def _latest_day(today: date, number: int) -> date | None:
    """The latest day numbered ``number`` of a month, today or before ('after the 3rd')."""
    if not 1 <= number <= 31:
        return None
    year, month = today.year, today.month
    for _ in range(12):
        if number <= calendar.monthrange(year, month)[1] and date(year, month, number) <= today:
            return date(year, month, number)
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return None


def _count(text: str) -> tuple[int, int]:
    """The fewest and the most units a count can mean (one number, or a loose count's range)."""
    word = text.lower().split()[-1]
    if word == "of" or word in VAGUE:
        return VAGUE[text.lower().split()[-2] if word == "of" else word]
    number = NUMBERS[word] if word in NUMBERS else int(word)
    return number, number


def _midnight(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone)


def _unit_start(day: date, unit: str) -> date:
    if unit == "week":
        return day - timedelta(day.weekday())
    if unit == "month":
        return day.replace(day=1)
    if unit == "year":
        return day.replace(month=1, day=1)
    return day


def _unit_next(first: date, unit: str) -> date:
    if unit == "week":
        return first + timedelta(7)
    if unit == "month":
        return date(first.year + first.month // 12, first.month % 12 + 1, 1)
    if unit == "year":
        return date(first.year + 1, 1, 1)
    return first + timedelta(1)


def _back(now: datetime, count: int, unit: str) -> datetime:
    """``count`` units before ``now``: hours, days and weeks exactly; months and years on the calendar (the day
    kept, or the month's last)."""
    if unit in ("hour", "day", "week"):
        return now - timedelta(**{f"{unit}s": count})
    months = count * (12 if unit == "year" else 1)
    year, month = divmod(now.year * 12 + now.month - 1 - months, 12)
    year = max(year, 1)
    return now.replace(year=year, month=month + 1, day=min(now.day, calendar.monthrange(year, month + 1)[1]))


def _later(one: datetime | None, other: datetime | None) -> datetime | None:
    return max(one, other) if one and other else one or other


def _earlier(one: datetime | None, other: datetime | None) -> datetime | None:
    return min(one, other) if one and other else one or other


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def micros(moment: object) -> int:
    """A creation time as read (a datetime, naive in UTC on SQLite, or SQLite's text), in microseconds."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    assert isinstance(moment, datetime)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // MICROSECOND

"""A labelled timeline shared by the recall-by-time tests and bench/time_filter.py: pills with known creation
times across fifteen months placed relative to a moment (``labelled``), searches with the window each must keep
to (``cases``, computed here apart from the parser), and the titles a window holds (``inside``)."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

# Days back from today of the labelled pills (one each), across fifteen months.
DAYS_BACK = (0, 1, 2, 3, 4, 6, 8, 9, 13, 16, 24, 31, 38, 45, 59, 70, 95, 130, 180, 250, 320, 380, 450)


def midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def labelled(now: datetime, days_back: tuple[int, ...] | range = DAYS_BACK) -> dict[str, datetime]:
    """Title -> creation time: a pill a day back for each of ``days_back`` (at a time of day six hours from now's,
    so no span back from now falls near one), and pills on the edges of today, this week and this month."""
    today = now.date()
    hour = (now - midnight(today) + timedelta(hours=6)) % timedelta(days=1)
    times = {f"Deploy note {back} days back": midnight(today - timedelta(back)) + hour for back in days_back}
    week, month = today - timedelta(today.weekday()), today.replace(day=1)
    for name, edge in (("today", today), ("week", week), ("month", month)):
        times[f"Deploy note at the start of {name}"] = midnight(edge)
        times[f"Deploy note just before {name}"] = midnight(edge) - timedelta(microseconds=1)
    return times


def months_back(day: date, count: int) -> date:
    year, month = divmod(day.year * 12 + day.month - 1 - count, 12)
    return date(year, month + 1, 1)


def latest(day: date, number: int) -> date:
    """The latest day of a month numbered ``number``, today or before."""
    for back in range(12):
        first = months_back(day, back)
        if number <= calendar.monthrange(first.year, first.month)[1] and first.replace(day=number) <= day:
            return first.replace(day=number)
    raise AssertionError(number)


def three_months_before(now: datetime) -> datetime:
    first = months_back(now.date(), 3)
    return now.replace(year=first.year, month=first.month,
                       day=min(now.day, calendar.monthrange(first.year, first.month)[1]))


def cases(now: datetime) -> list[tuple[dict[str, Any], datetime | None, datetime | None, str]]:
    """(search arguments, expected start, expected end, the start of the expected time line), for ``now``."""
    today = now.date()
    week = today - timedelta(today.weekday())
    month = today.replace(day=1)
    march = date(today.year - (today.month < 3), 3, 1)
    day30 = today - timedelta(30)
    third = latest(today, 3)
    return [
        ({"query": "what did we do yesterday?"}, midnight(today - timedelta(1)), midnight(today),
         f'time: {today - timedelta(1)} → {today} UTC (from "yesterday")'),
        ({"query": "today"}, midnight(today), midnight(today + timedelta(1)), 'time: '),
        ({"query": "last week"}, midnight(week - timedelta(7)), midnight(week),
         f'time: {week - timedelta(7)} → {week} UTC (from "last week")'),
        ({"query": "this week"}, midnight(week), midnight(week + timedelta(7)), "time: "),
        ({"query": "last month"}, midnight(months_back(month, 1)), midnight(month), "time: "),
        ({"query": "this month"}, midnight(month), midnight(months_back(month, -1)), "time: "),
        ({"query": "last year"}, midnight(date(today.year - 1, 1, 1)), midnight(date(today.year, 1, 1)), "time: "),
        # 'since Monday' on a Monday is since this morning.
        ({"query": "since Monday"}, midnight(week), None, f'time: since {week} UTC (from "since Monday")'),
        ({"query": "in March"}, midnight(march), midnight(march.replace(month=4)), "time: "),
        ({"query": f"in March {march.year}"}, midnight(march), midnight(march.replace(month=4)), "time: "),
        ({"query": f"before {day30}"}, None, midnight(day30), f'time: before {day30} UTC (from "before {day30}")'),
        ({"query": "after the 3rd"}, midnight(third + timedelta(1)), None, "time: since "),
        ({"query": "3 days ago"}, midnight(today - timedelta(3)), midnight(today - timedelta(2)), "time: "),
        ({"query": f"on {day30}"}, midnight(day30), midnight(day30 + timedelta(1)), "time: "),
        ({"query": f"between {today - timedelta(60)} and {day30}"}, midnight(today - timedelta(60)),
         midnight(day30 + timedelta(1)), "time: "),
        ({"query": "in the last 10 days"}, now - timedelta(days=10), None, "time: since "),
        ({"query": "in the last week"}, now - timedelta(days=7), None, "time: since "),  # not the calendar's
        # Loose counts at their widest (two to five days back), a weekend, where a thing comes from.
        ({"query": "a few days ago"}, midnight(today - timedelta(5)), midnight(today - timedelta(1)),
         f'time: {today - timedelta(5)} → {today - timedelta(1)} UTC (from "a few days ago")'),
        ({"query": "deploy notes from last weekend"}, midnight(week - timedelta(2)), midnight(week), "time: "),
        # Words and a phrase, a typo and a phrase: the words' pass (strict, then widened) keeps to the window.
        ({"query": "deploy notes last week"}, midnight(week - timedelta(7)), midnight(week), "time: "),
        ({"query": "deplyo last month", "limit": 100}, midnight(months_back(month, 1)), midnight(month), "time: "),
        ({"query": "deploy", "fuzzy": True, "since": "2w"}, now - timedelta(weeks=2), None,
         "time: since "),
        # Arguments: a span, dates (until takes its day in), and an argument beside a phrase (the argument wins).
        ({"query": "deploy", "since": "10d"}, now - timedelta(days=10), None, "time: since "),
        ({"since": str(day30), "until": str(today - timedelta(3))}, midnight(day30), midnight(today - timedelta(2)),
         f"time: {day30} → {today - timedelta(2)} UTC (from since/until)"),
        ({"query": "deploy last week", "until": str(day30)}, None, midnight(day30 + timedelta(1)),
         f'time: before {day30 + timedelta(1)} UTC (from until; "last week" in the query not applied)'),
        ({"query": "yesterday", "since": "3m"}, three_months_before(now), None, "time: since "),
    ]


def inside(times: dict[str, datetime], start: datetime | None, end: datetime | None) -> list[str]:
    """The titles created in the window, newest first."""
    kept = [title for title, moment in times.items()
            if (start is None or moment >= start) and (end is None or moment < end)]
    return sorted(kept, key=lambda title: times[title], reverse=True)

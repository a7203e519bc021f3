"""Reading a time from English words and from since/until, at fixed moments (``now`` is given)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pillbox.exceptions import ValidationFailed
from pillbox.search.when import recall

# A Wednesday afternoon; the 2nd of December 2026.
NOW = datetime(2026, 12, 2, 15, 30, tzinfo=UTC)


def day(text: str, zone: str = "UTC") -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone))


@pytest.mark.parametrize(("query", "start", "end", "left"), [
    ("what did we do yesterday?", "2026-12-01", "2026-12-02", None),
    ("today", "2026-12-02", "2026-12-03", None),
    ("deploy today", "2026-12-02", "2026-12-03", "deploy"),
    ("the day before yesterday", "2026-11-30", "2026-12-01", None),
    ("last week", "2026-11-23", "2026-11-30", None),
    ("this week", "2026-11-30", "2026-12-07", None),
    ("last month", "2026-11-01", "2026-12-01", None),
    ("this month", "2026-12-01", "2027-01-01", None),
    ("last year", "2025-01-01", "2026-01-01", None),
    ("auth since Monday", "2026-11-30", None, "auth"),
    ("since Wednesday", "2026-12-02", None, None),  # today is one: since this morning
    ("last Wednesday", "2026-11-25", "2026-11-26", None),
    ("on Friday", "2026-11-27", "2026-11-28", None),
    ("in March", "2026-03-01", "2026-04-01", None),
    ("in March 2025", "2025-03-01", "2025-04-01", None),
    ("in December", "2026-12-01", "2027-01-01", None),
    ("in May", "2026-05-01", "2026-06-01", None),
    ("March 2026 release", "2026-03-01", "2026-04-01", "release"),
    ("before 2026-11-01 deploy", None, "2026-11-01", "deploy"),
    ("after 2026-11-01", "2026-11-02", None, None),
    ("since 2026-11-01", "2026-11-01", None, None),
    ("until 2026-11-01", None, "2026-11-02", None),
    ("on 2026-11-02", "2026-11-02", "2026-11-03", None),
    ("after the 3rd", "2026-11-04", None, None),  # the latest 3rd is last month's
    ("since the 1st", "2026-12-01", None, None),
    ("before the 2nd", None, "2026-12-02", None),
    ("3 days ago", "2026-11-29", "2026-11-30", None),
    ("two weeks ago", "2026-11-16", "2026-11-23", None),
    ("a month ago", "2026-11-01", "2026-12-01", None),
    ("between March and May 2026", "2026-03-01", "2026-06-01", None),
    ("between 2026-11-01 and 2026-11-10", "2026-11-01", "2026-11-11", None),
    ("from March 3 to the 10th of April", "2026-03-03", "2026-04-11", None),
    ("in 2025", "2025-01-01", "2026-01-01", None),
    ("since March before the 3rd", "2026-03-01", "2026-11-03", None),  # two phrases: both apply
    ("deploy notes from last weekend", "2026-11-28", "2026-11-30", "deploy notes"),  # 'from' alone: that time
    ("over the weekend", "2026-11-28", "2026-11-30", None),  # the latest begun: today is a Wednesday
    ("this weekend", "2026-12-05", "2026-12-07", None),
    ("errors earlier today", "2026-12-02", "2026-12-03", "errors"),
    ("earlier this week", "2026-11-30", "2026-12-07", None),
    ("a couple of days ago", "2026-11-29", "2026-12-01", None),  # two or three days back
    ("a few days ago", "2026-11-27", "2026-12-01", None),  # two to five days back
    ("this morning", "2026-12-02", "2026-12-02T12:00", None),
    ("yesterday afternoon", "2026-12-01T12:00", "2026-12-01T18:00", None),
    ("last night", "2026-12-01T18:00", "2026-12-02T06:00", None),
])
def test_when_reads_a_phrase_and_takes_it_out_of_the_words(query, start, end, left):
    wanted = recall(query, now=NOW)
    assert wanted.window is not None, query
    assert (wanted.window.start, wanted.window.end) == (start and day(start), end and day(end)), query
    assert wanted.query == left, query


@pytest.mark.parametrize(("query", "since"), [
    ("cache in the last 7 days", NOW - timedelta(days=7)),
    ("the past week", NOW - timedelta(days=7)),
    ("over the past 24 hours", NOW - timedelta(hours=24)),
    ("last 2 months", datetime(2026, 10, 2, 15, 30, tzinfo=UTC)),
    ("in the last week", NOW - timedelta(days=7)),  # not the calendar's last week
    ("over the last month", datetime(2026, 11, 2, 15, 30, tzinfo=UTC)),
    ("in the last few days", NOW - timedelta(days=5)),  # a loose count: its most
    ("over the past couple of weeks", NOW - timedelta(weeks=3)),
])
def test_when_reads_a_span_back_from_now(query, since):
    wanted = recall(query, now=NOW)
    assert wanted.window is not None and (wanted.window.start, wanted.window.end) == (since, None)


@pytest.mark.parametrize("query", [
    "today's build", "march the soldiers", "it may fail in may", "we may retry", "black friday sale",
    "monday.com integration", "port 2026", "yesterday-view component", "docs/last-week.md", "may 2026",
    "the today widget's state", "port in 2048", "the last week of March", "few things", "several bugs",
    "a few tests", "the night shift", "this morning's fix",
])
def test_when_leaves_words_that_are_not_a_time(query):
    wanted = recall(query, now=NOW)
    assert wanted.window is None and wanted.query == query, query


def test_when_describes_the_window_and_what_it_came_from():
    assert recall("last week", now=NOW).window.describe() == '2026-11-23 → 2026-11-30 UTC (from "last week")'
    assert recall("since 7d", now=NOW).window is None  # a span is an argument's form, not a phrase
    by_argument = recall("auth last week", since="7d", now=NOW)
    assert by_argument.window.describe() == ('since 2026-11-25 15:30 UTC (from since; "last week" in the query '
                                             'not applied)')
    assert by_argument.query == "auth"
    both = recall(None, since="2026-11-01", until="2026-11-30", now=NOW)
    assert both.window.describe() == "2026-11-01 → 2026-12-01 UTC (from since/until)" and both.query is None
    assert recall(None, until="2w", now=NOW).window.describe() == "before 2026-11-18 15:30 UTC (from until)"


@pytest.mark.parametrize(("since", "until", "start", "end"), [
    ("7d", None, NOW - timedelta(days=7), None),
    ("2w", "1w", NOW - timedelta(weeks=2), NOW - timedelta(weeks=1)),
    ("3m", None, datetime(2026, 9, 2, 15, 30, tzinfo=UTC), None),
    ("12h", None, NOW - timedelta(hours=12), None),
    ("1y", None, datetime(2025, 12, 2, 15, 30, tzinfo=UTC), None),
    ("2026-11-01", "2026-11-30", day("2026-11-01"), day("2026-12-01")),
    ("2026-11-01T09:30", "2026-11-01T10:00:00Z", day("2026-11-01T09:30"), day("2026-11-01T10:00")),
    ("2026-11-01T09:30+02:00", None, day("2026-11-01T07:30"), None),
    ("yesterday", "yesterday", day("2026-12-01"), day("2026-12-02")),
    ("may 2026", None, day("2026-05-01"), None),
])
def test_when_reads_since_and_until(since, until, start, end):
    window = recall("deploy", since=since, until=until, now=NOW).window
    assert window is not None and (window.start, window.end) == (start, end)


def test_when_reads_days_in_the_time_zone_given():
    # At 15:30 UTC it is already the 3rd in Auckland (UTC+13 in December).
    window = recall("yesterday", time_zone="Pacific/Auckland", now=NOW).window
    assert (window.start, window.end) == (day("2026-12-02", "Pacific/Auckland"), day("2026-12-03", "Pacific/Auckland"))
    assert window.describe() == '2026-12-02 → 2026-12-03 Pacific/Auckland (from "yesterday")'
    until = recall(None, until="2026-11-01", time_zone="America/New_York", now=NOW).window
    assert until.end == datetime(2026, 11, 2, 5, 0, tzinfo=UTC)  # EST, UTC-5, after the clocks went back


@pytest.mark.parametrize(("arguments", "field", "message"), [
    ({"since": "last tuesday-ish"}, "since", "since cannot be read as a time: 'last tuesday-ish'."),
    ({"until": "soon"}, "until", "until cannot be read as a time: 'soon'."),
    ({"since": "2026-13-01"}, "since", "since cannot be read as a time: '2026-13-01'."),
    ({"since": "2026-11-05", "until": "2026-11-01"}, "since",
     "since (2026-11-05) is not before until (2026-11-01): the window would hold nothing."),
    ({"since": "1d", "until": "7d"}, "until", "since (1d) is not before until (7d)"),
    ({"time_zone": "Mars/Olympus"}, "time_zone", "time_zone 'Mars/Olympus' is not a known IANA time zone"),
    ({"time_zone": "../../etc/passwd"}, "time_zone", "is not a known IANA time zone"),
])
def test_when_refuses_a_time_it_cannot_read(arguments, field, message):
    with pytest.raises(ValidationFailed) as refused:
        recall("deploy", now=NOW, **arguments)
    assert message in refused.value.message and field in refused.value.fields

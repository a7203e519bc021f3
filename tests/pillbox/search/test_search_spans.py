"""A time window as a range of row keys (``pillbox.search.spans``): the range when the window's pills are one,
nothing (the words' pass then joins each row) when a creation time was written apart from its key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from pillbox import services
from pillbox.global_db import GLOBAL
from pillbox.models import Pill
from pillbox.search.spans import key_range
from pillbox.search.targets import Target
from pillbox.search.when import Window
from tests.api.conftest import AUTHOR, reach_of


def test_spans_a_window_is_the_range_of_its_pills_keys_while_they_are_one(alice):
    if connections[GLOBAL].vendor != "sqlite":
        pytest.skip("spans: a range of keys is for a SQLite file's index (PostgreSQL joins each row)")
    reach = reach_of(alice)
    bottle = services.bottle_create(reach=reach, name="spans", display_name="Spans", scope="global")
    rx = services.prescription_open(reach=reach_of(alice), bottle_id=bottle.id.hex, title="Work", **AUTHOR)
    pills = [services.pill_store(reach=reach_of(alice), prescription_id=rx.id.hex, title=f"Note {n}",
                                 content="Deployed.", compound="note", **AUTHOR) for n in range(5)]
    now = timezone.now()
    for back, pill in zip((40, 30, 20, 10, 0), pills, strict=True):  # oldest first, as the keys are
        Pill.objects.filter(pk=pill.pk).update(created_at=now - timedelta(days=back, hours=1))
    zone = timezone.get_default_timezone()

    def keys(start_days: int, end_days: int | None) -> tuple[int, int] | None:
        window = Window(now - timedelta(days=start_days), now - timedelta(days=end_days) if end_days else None,
                        zone, "since")
        return key_range(Target(alias=GLOBAL, kind="pill", bottles=frozenset([bottle.id]), window=window))

    assert keys(25, 5) == (pills[2].seq, pills[3].seq)
    assert keys(45, None) == (pills[0].seq, pills[4].seq)
    assert keys(100, 50) == (1, 0)  # no pill: an empty range
    # A creation time written apart from its key (an import keeps the original's): the window's pills are no
    # longer one range, and the range is not offered.
    Pill.objects.filter(pk=pills[3].pk).update(created_at=now - timedelta(days=60))
    assert keys(45, None) is None
    assert keys(25, 5) == (pills[2].seq, pills[2].seq)

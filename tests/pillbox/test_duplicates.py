"""pillbox.duplicates on its own: which notes group, which never do, the keeper, and the scale it must handle."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from pillbox.duplicates import EXACT, MEANING, NEAR, Note, _blocks, _shape, groups

START = datetime(2026, 3, 1, tzinfo=UTC)


def notes(*texts: str, views: tuple[int, ...] = ()) -> list[Note]:
    return [Note(id=f"n{index}", title="Note", content=text, created_at=START + timedelta(days=index),
                 views=views[index] if views else 0) for index, text in enumerate(texts)]


def grouped(found: list[Note], **options: object) -> list[set[str]]:
    return [{note.id for note in group.members} for group in groups(found, **options)]  # type: ignore[arg-type]


def test_duplicates_exact_text_groups_whatever_its_case_spacing_and_punctuation() -> None:
    found = notes("Run the migrations before deploying.", "run  the migrations, before deploying",
                  "Something else entirely")
    assert grouped(found, modes=(EXACT,)) == [{"n0", "n1"}]


@pytest.mark.parametrize("first, second", [
    ("Stripe retries a failed webhook for three days; handlers must be idempotent.",
     "Stripe retries a failed webhook for three days; handlers must be idempotant."),
    ("Copy requirements.txt first. Docker caches layers by it.",
     "Docker caches layers by it. Copy requirements.txt first."),
    ("The search index is rebuilt nightly by the cron job in ops/cron.yaml.",
     "The search index is rebuilt every nightly by the cron job in ops/cron.yaml."),
])
def test_duplicates_near_text_groups_typo_fixes_reordering_and_a_word_more(first: str, second: str) -> None:
    assert grouped(notes(first, second)) == [{"n0", "n1"}]
    assert grouped(notes(first, second), modes=(EXACT,)) == []


@pytest.mark.parametrize("first, second", [
    ("Set the HTTP client timeout to 30s for the payments API.",
     "Set the HTTP client timeout to 60s for the payments API."),
    ("The local PostgreSQL listens on port 5432.", "The local PostgreSQL listens on port 5433."),
    ("The service runs on Python 3.11.", "The service runs on Python 3.12."),
    ("Enable the debug toolbar in development.", "Disable the debug toolbar in development."),
    ("Failed jobs are retried with backoff.", "Failed jobs are not retried with backoff."),
    ("Failed jobs can be retried by hand.", "Failed jobs can't be retried by hand."),
    ("Always squash commits when merging.", "Never squash commits when merging."),
    ("Alice owns the billing service and reviews its changes.",
     "Bob owns the billing service and reviews its changes."),
    ("Import customers in batches of 500 rows.", "Import customers in batches of 5,000 rows."),
])
def test_duplicates_look_alikes_never_group(first: str, second: str) -> None:
    vector = np.ones(4, dtype=np.float32) / 2  # the same vector: meaning alone would call them one
    found = [Note(id=note.id, title=note.title, content=note.content, created_at=note.created_at, vector=vector)
             for note in notes(first, second)]
    assert grouped(found, modes=(EXACT, NEAR, MEANING)) == []


def test_duplicates_by_meaning_only_above_the_threshold() -> None:
    base = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    close = np.array([0.9, np.sqrt(1 - 0.9**2), 0.0], dtype=np.float32)  # cosine 0.90 with base
    far = np.array([0.8, -0.3, np.sqrt(1 - 0.8**2 - 0.3**2)], dtype=np.float32)  # 0.80 with base, 0.59 with close
    texts = ["Each night pg_dump backs the database up to S3.",
             "Every night the database is dumped with pg_dump and copied over to S3 storage.",
             "Nightly, a pg_dump of the whole database goes to S3 object storage."]
    found = [Note(id=f"n{i}", title="Backups", content=text, created_at=START + timedelta(days=i), vector=vector)
             for i, (text, vector) in enumerate(zip(texts, [base, close, far], strict=True))]
    assert grouped(found) == []  # meaning is asked for, never assumed
    assert grouped(found, modes=(MEANING,)) == [{"n0", "n1"}]
    # Lower, n2 (the newest) keeps n0; n1 is like n0 but not like n2, so it is not put in n2's group.
    assert grouped(found, modes=(MEANING,), meaning=0.75) == [{"n0", "n2"}]


def test_duplicates_keeper_is_the_most_read_then_the_newest() -> None:
    text = "Logs go to Loki through the Promtail sidecar."
    newest = groups(notes(text, text, text))
    assert newest[0].keeper.id == "n2" and newest[0].keeper_reason == "the newest"
    read = groups(notes(text, text, text, views=(0, 5, 1)))
    assert read[0].keeper.id == "n1" and read[0].keeper_reason == "the most read (5 times)"
    assert [note.id for note in read[0].others] == ["n2", "n0"]


def test_duplicates_a_chain_is_not_one_group() -> None:
    # A ~ B and B ~ C, but A and C differ by two words: every member must match its keeper itself.
    found = notes("Uploaded images are resized to WebP by the worker, not in the request.",
                  "Uploaded images are resized to WebP by the worker, never in the request.",
                  "Uploaded images are resized to WebP by the worker, never in request.")
    for group in groups(found, near=80):
        for other in group.others:
            assert other.id in group.links


def test_duplicates_thousands_of_notes_compare_only_a_few_candidate_pairs() -> None:
    rng = random.Random(7)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(4000)]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(15, 80))) for _ in range(2000)]
    for index in range(0, 2000, 20):
        texts[index + 1] = texts[index] + "."
        texts[index + 2] = texts[index].replace(texts[index].split()[3], texts[index].split()[3] + "s", 1)
    found = notes(*texts)
    # Letters are compared for the pairs that share most of their words only: never the 2 million pairs.
    candidates = _blocks([_shape(note) for note in found])
    assert len(candidates) < 2 * len(found)
    assert sorted(sorted(group) for group in grouped(found)) == sorted(
        sorted([f"n{index}", f"n{index + 1}", f"n{index + 2}"]) for index in range(0, 2000, 20))


def test_duplicates_by_meaning_needs_words_in_common() -> None:
    # Two notes on one subject in other words entirely: however close their vectors, they are not one note.
    vector = np.ones(4, dtype=np.float32) / 2
    found = [Note(id=f"n{i}", title=title, content=content, created_at=START + timedelta(days=i), vector=vector)
             for i, (title, content) in enumerate([
                 ("Cache", "Product pages are cached by the CDN edge nodes."),
                 ("Invalidation", "Purging happens through a webhook whenever prices move.")])]
    assert grouped(found, modes=(MEANING,)) == []


def test_duplicates_by_meaning_compares_each_note_with_its_closest_few() -> None:
    # Forty copies whose vectors are all alike: the pass stays bounded and still groups every copy.
    vector = np.ones(4, dtype=np.float32) / 2
    found = [Note(id=f"n{i:02d}", title="Backups", content=f"Nightly pg_dump backups go to S3{'.' * (i % 3)}",
                  created_at=START + timedelta(minutes=i), vector=vector) for i in range(40)]
    assert sum(len(group.members) for group in groups(found, modes=(MEANING,))) == 40

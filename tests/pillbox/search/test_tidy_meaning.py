"""pill_duplicates by meaning with the bundled model, over HTTP: a lesson said twice in other words is grouped only
when asked (by_meaning), look-alikes never are, and without the model the plan says so and groups by text."""

from __future__ import annotations

from tests.clients import run
from tests.pillbox.scenario import fields, new_bottle, open_prescription, site_fixture, store  # noqa: F401
from tests.pillbox.scenario import http_session as http
from tests.pillbox.test_tidy import plan_of

NOTES = [
    ("Frontend tests", "Frontend unit tests run with Vitest; end-to-end tests use Playwright."),
    ("How the frontend is tested", "We use Vitest for the frontend's unit tests and Playwright for its end-to-end "
                                   "tests."),
    ("Cache TTL", "The product page cache lives for 5 minutes."),
    ("Cache TTL", "The product page cache lives for 5 hours."),
    ("Upload limit", "The upload limit is 10 MB per file."),
    ("Upload limit", "The upload limit is 100 MB per file."),
]


def test_tidy_by_meaning_groups_a_paraphrase_only_when_asked(site, alice, meaning, monkeypatch):
    async def scenario() -> None:
        async with http(site, alice.key) as call:
            bottle = await new_bottle(call, "api-notes")
            rx = await open_prescription(call, bottle)
            pills = [await store(call, rx, title, content) for title, content in NOTES]
            assert "No duplicates found" in (await call("pill_duplicates", bottle_id=bottle)).ok

            answer = (await call("pill_duplicates", bottle_id=bottle, by_meaning=True)).ok
            header, groups = plan_of(answer)
            assert header["looked_at"] == "6 pills (by text and by meaning)"
            assert groups == [[pills[1], pills[0]]]  # 5 minutes and 5 hours, 10 MB and 100 MB stay apart
            assert "the same meaning (cosine 0.9" in answer
            tidy = fields((await call("pill_tidy", plan_id=header["plan"])).ok)["tidy"]
            assert fields((await call("pill_tidy_undo", tidy_id=tidy)).ok)["status"] == "undone"

            monkeypatch.setenv("EMBEDDINGS", "off")
            off = (await call("pill_duplicates", bottle_id=bottle, by_meaning=True)).ok
            assert "meaning: the embedding model is not available; grouped by text only" in off
            assert "No duplicates found" in off
    run(scenario())

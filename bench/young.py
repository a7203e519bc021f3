"""A young project's memory: twelve pills, and questions a newcomer asks in other words (no content word shared
with the pill that answers), plus compounds and inflections of a stored word. Small memories are where a false
"No pills found." hurts most: the answer is there, and the agent is told it is not.

``corpus()`` gives the items and queries in the shape of ``bench/fusion_capture.py``; the same pills are used by
``tests/pillbox/search/test_recall_confidence.py``, which keeps its own copy (the tests read nothing outside
tests/ and the packages).
"""

from __future__ import annotations

from typing import Any

PILLS = [
    ("deploy", "Deploying", "Deploys go through the release pipeline on tagged commits only."),
    ("sessions", "Sessions in Redis", "User sessions are kept in Redis, with a two-week expiry."),
    ("flags", "Feature flags", "Experimental switches live in settings.FLAGS and default to off."),
    ("rollback", "Rolling back a bad release",
     "Revert the tag and redeploy the previous image; migrations must stay backwards compatible."),
    ("testdb", "Test database", "Tests run against a throwaway PostgreSQL container started by a fixture."),
    ("style", "Code style", "ruff formats the code; the line length is 120."),
    ("jobs", "Background jobs", "Celery workers pick tasks from the Redis queue; retries back off exponentially."),
    ("payments", "Payments provider", "Stripe handles card payments; webhooks are verified with the signing secret."),
    ("errors", "Error tracking", "Exceptions are reported to Sentry with the release tag attached."),
    ("email", "Email sending", "Transactional emails go through Postmark; templates live in templates/email."),
    ("secrets", "Secrets", "API keys are read from environment variables, never committed; .env is git-ignored."),
    ("cache", "Caching pages", "Product pages are cached for five minutes in the CDN."),
]

# Questions in other words: none shares a content word (or its stem) with the pill that answers it.
QUESTIONS = [
    ("how do we ship to production?", "deploy"),
    ("where do we keep login state?", "sessions"),
    ("how do I try something unfinished without turning it on for everyone?", "flags"),
    ("how do I undo a broken version?", "rollback"),
    ("which formatter do we use and how wide may a row of source be?", "style"),
    ("how do customers pay us?", "payments"),
    ("where do crashes show up?", "errors"),
    ("who delivers our outgoing mail?", "email"),
]

# The same pill by a compound, its split form, a typo of it, and an inflection.
FORMS = [
    ("rollback", "rollback"), ("rollbak", "rollback"), ("roll back", "rollback"),
    ("how do I undo a deployment", "rollback"), ("how do we ship a deploy", "deploy"),
    ("deployment pipeline", "deploy"), ("session kept", "sessions"), ("flag default", "flags"),
]


def corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    items = [{"id": key, "title": title, "content": content, "compound": "notes"} for key, title, content in PILLS]
    queries = [{"key": f"y{at}", "q": q, "kind": "other words", "evidence": [target]}
               for at, (q, target) in enumerate(QUESTIONS)]
    queries += [{"key": f"f{at}", "q": q, "kind": "forms", "evidence": [target]}
                for at, (q, target) in enumerate(FORMS)]
    return items, queries

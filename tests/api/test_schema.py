"""The OpenAPI schema is public and true: schemathesis finds no server error and no answer the schema does not
describe. The docs page works offline (Swagger UI is served from this site's own static files)."""

from __future__ import annotations

import re

import hypothesis
import pytest
import requests
import schemathesis
from django.contrib.staticfiles import finders
from django.core.servers.basehttp import WSGIRequestHandler
from django.test import Client
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.api.conftest import make_memory
from tests.conftest import make_person

# Examples per operation: enough for every operation to be called with several shapes of input while the whole
# run stays well under a minute. tests/api/README.md has the long run.
EXAMPLES = 10
# Schema-valid input these operations refuse by rules a JSON schema cannot state: a search needs q or compound,
# and a local bottle is only for staff on a server with PILLBOX_ROOT. Every other check still runs on them.
CROSS_FIELD_RULES = {"GET /api/pillbox/search/", "POST /api/pillbox/bottles/"}


def test_schema_is_public_openapi_3_1_with_every_endpoint(transactional_db):
    response = Client().get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"] == "3.1.0"
    assert {
        "/api/todos/",
        "/api/todos/{todo_id}/",
        "/api/todos/{todo_id}/complete/",
        "/api/pillbox/bottles/",
        "/api/pillbox/bottles/{bottle_id}/prescriptions/",
        "/api/pillbox/prescriptions/{prescription_id}/pills/",
        "/api/pillbox/pills/{pill_id}/",
        "/api/pillbox/pills/{pill_id}/purge/",
        "/api/pillbox/capsules/",
        "/api/pillbox/capsules/{capsule_id}/restore/",
        "/api/pillbox/search/",
    } <= set(schema["paths"])
    # The request bodies are the MCP tools' input schemas.
    store = schema["paths"]["/api/pillbox/prescriptions/{prescription_id}/pills/"]["post"]["requestBody"]
    body = store["content"]["application/json"]["schema"]
    assert body["required"] == ["title", "content", "compound", "author_name", "author_email"]
    assert body["properties"]["content"]["maxLength"] == 5000


def test_docs_page_loads_everything_from_this_site(transactional_db):
    # Swagger UI, not Redoc: drf-spectacular's Redoc page fetches its fonts from Google.
    response = Client().get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    # The init script is served by the docs view itself (no inline script: the Content-Security-Policy allows none).
    init = "/api/docs/?script="
    assert init in assets and "<script>" not in html
    script = Client().get(init)
    assert script.status_code == 200 and "/api/schema/" in script.content.decode()
    for asset in (asset for asset in assets if asset != init):
        assert asset.startswith("/static/"), f"{asset} would need the internet"
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not among the static files"
    assert Client().get(next(a for a in assets if a.endswith(".js") and a != init)).status_code == 200


@pytest.fixture
def schemathesis_site(live_server, monkeypatch) -> str:
    # Django's test server writes headers and body apart: without TCP_NODELAY each call waits for a delayed ACK.
    monkeypatch.setattr(WSGIRequestHandler, "disable_nagle_algorithm", True)
    return live_server.url


def test_schemathesis_finds_no_server_error_and_no_schema_violation(schemathesis_site, transactional_db, settings):
    # schemathesis also sends wrong credentials on purpose; unthrottled, so that every operation is really called.
    settings.AUTH_FAILURE_RATE_LIMIT = (0, 60)
    person = make_person("fuzzer")
    make_memory(person)
    schema = schemathesis.openapi.from_url(f"{schemathesis_site}/api/schema/?format=json")
    headers = {"Authorization": f"Bearer {person.key}"}
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30

    # Closed before the live server stops, so that no keep-alive connection outlives it.
    with requests.Session() as session:
        for operation in operations:
            excluded = [positive_data_acceptance] if operation.label in CROSS_FIELD_RULES else []
            try:
                _fuzz(operation, session=session, headers=headers, excluded=excluded)
            except Exception as error:  # collect every operation's failure, not just the first
                failures.append(f"{operation.label}: {error}")
    assert not failures, "\n\n".join(failures)


def _fuzz(operation, *, session: requests.Session, headers: dict[str, str], excluded: list) -> None:
    @hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(hypothesis.HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    @hypothesis.given(case=operation.as_strategy())
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(session=session, headers=headers, excluded_checks=excluded)

    check()


def test_browsable_api_renders_for_a_signed_in_person(alice):
    make_memory(alice)
    client = Client()
    client.force_login(alice.user)
    page = client.get("/api/pillbox/capsules/", HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and "text/html" in page["Content-Type"]
    assert "Conventional commits" in page.content.decode()

"""Clients of the REST API (an API key, a signed-in browser session) and a little memory to read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils.crypto import get_random_string

from mcp_bridge.tools import Caller
from pillbox import services
from pillbox.access import Reach, reach_for
from tests.conftest import Person

AUTHOR = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}


@dataclass
class Answer:
    status: int
    data: Any
    headers: Any

    @property
    def error(self) -> str:
        return self.data["error"]


class Api:
    """Calls with JSON in and out; ``auth`` is sent as the Authorization header."""

    def __init__(self, client: Client | None = None, *, key: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = client or Client(headers=headers)
        self.extra: dict[str, str] = {}

    def with_csrf(self) -> Api:
        """Send the CSRF token as the web pages do: the cookie, and the same value in X-CSRFToken."""
        token = get_random_string(32)
        self.client.cookies["csrftoken"] = token
        self.extra = {"HTTP_X_CSRFTOKEN": token}
        return self

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> Answer:
        if params:
            path += "?" + "&".join(f"{name}={value}" for name, value in params.items())
        kwargs: dict[str, Any] = {**self.extra, "content_type": "application/json"}
        if body is not None:
            kwargs["data"] = json.dumps(body)
        response = getattr(self.client, method)(path, **kwargs)
        content = response.content
        data = json.loads(content) if content and response["Content-Type"].startswith("application/json") else None
        return Answer(response.status_code, data, response.headers)

    def get(self, path: str, **params: Any) -> Answer:
        return self.call("get", path, **params)

    def post(self, path: str, body: Any = None, **params: Any) -> Answer:
        return self.call("post", path, body, **params)

    def put(self, path: str, body: Any = None) -> Answer:
        return self.call("put", path, body)

    def patch(self, path: str, body: Any = None) -> Answer:
        return self.call("patch", path, body)

    def delete(self, path: str) -> Answer:
        return self.call("delete", path)


def browser(person: Person) -> Api:
    """A signed-in person's browser: Django checks the CSRF token as it would for real."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(person.user)
    return Api(client)


def reach_of(person: Person) -> Reach:
    return reach_for(Caller(user=person.user, transport="http"))


@dataclass
class Memory:
    bottle: Any
    prescription: Any
    pill: Any
    closed: Any  # a closed prescription
    old_pill: Any  # a pill in it
    capsule: Any


def make_memory(person: Person, name: str = "shop") -> Memory:
    reach = reach_of(person)
    bottle = services.bottle_create(reach=reach, name=name, display_name=name.title(), scope="global")
    reach = reach_of(person)
    closed = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="First session", **AUTHOR)
    old_pill = services.pill_store(
        reach=reach,
        prescription_id=closed.id.hex,
        title="Use SQLite",
        content="chosen: SQLite with WAL",
        compound="decision",
        **AUTHOR,
    )
    services.prescription_close(reach=reach, prescription_id=closed.id.hex)
    prescription = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="Checkout", **AUTHOR)
    pill = services.pill_store(
        reach=reach,
        prescription_id=prescription.id.hex,
        title="Stateless JWT",
        content="chosen: JWT + refresh tokens\ndiscarded: server sessions",
        compound="decision",
        **AUTHOR,
    )
    capsule = services.capsule_store(
        reach=reach, title="Conventional commits", content="feat:, fix:, docs:", compound="convention"
    )
    return Memory(bottle, prescription, pill, closed, old_pill, capsule)


@pytest.fixture
def alice_api(alice: Person) -> Api:
    return Api(key=alice.key)


@pytest.fixture
def bob_api(bob: Person) -> Api:
    return Api(key=bob.key)


@pytest.fixture
def memory(alice: Person) -> Memory:
    return make_memory(alice)


@pytest.fixture(autouse=True)
def _forget_failed_credentials():
    """Failed credentials are counted per address in the cache (accounts.auth): each test starts unthrottled."""
    cache.clear()
    yield
    cache.clear()

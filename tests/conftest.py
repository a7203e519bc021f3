from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.core.cache import cache

from accounts.services import account_for, apikey_create, user_get_or_create
from pillbox.databases import forget_local_aliases
from pillbox.original import home as original_home
from tests import outside

outside.install()


@dataclass
class Person:
    user: object
    uid: str
    key: str


def make_person(username: str, *, staff: bool = False) -> Person:
    user = user_get_or_create(username=username, staff=staff)
    _, key = apikey_create(user=user)
    return Person(user=user, uid=account_for(user).uid, key=key)


@pytest.fixture
def alice(transactional_db) -> Person:
    return make_person("alice")


@pytest.fixture
def bob(transactional_db) -> Person:
    return make_person("bob")


@pytest.fixture
def operator(transactional_db) -> Person:
    return make_person("operator", staff=True)


@pytest.fixture(autouse=True)
def _only_the_repository():
    """A test fails when it (or the code it runs) read beside the repository: see tests/outside.py. What was read
    before it (collecting, a wider fixture) is reported by the first test."""

    def check() -> None:
        if outside.read_outside:
            seen, outside.read_outside[:] = list(outside.read_outside), []
            pytest.fail("read outside the repository (tests must stand alone in a fresh clone; build what they need "
                        "in the repository):\n  " + "\n  ".join(dict.fromkeys(seen)), pytrace=False)

    check()
    yield
    check()


@pytest.fixture(autouse=True)
def _forget_local_databases():
    """Each test's local bottle databases live in its own tmp_path; the next test must not inherit their aliases
    (pytest-django would fence them off as unknown databases)."""
    forget_local_aliases()
    yield
    forget_local_aliases()


@pytest.fixture(autouse=True)
def _never_the_real_home(monkeypatch, tmp_path_factory):
    """In-process stdio callers look for the original Pillbox's global file in the home: never the real one
    (subprocess tests set HOME themselves)."""
    monkeypatch.setattr(original_home, "original_global_file",
                        lambda: tmp_path_factory.getbasetemp() / "no-home" / ".pillbox" / "pillbox.db")


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate limits and throttles count in Django's cache: one test's failures must not throttle the next."""
    cache.clear()
    yield
    cache.clear()

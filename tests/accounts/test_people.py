"""`adduser` makes a person who can sign in; `createkey` only keys existing users, so a typo creates nobody."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from accounts.services import apikey_authenticate

pytestmark = pytest.mark.django_db


def _run(*args: str) -> dict[str, str]:
    out = StringIO()
    call_command(*args, stdout=out)
    pairs = (line.partition(": ") for line in out.getvalue().splitlines())
    return {key: value.split("   ")[0] for key, _, value in pairs}


def test_adduser_prints_a_password_that_signs_in_and_a_key_that_works():
    made = _run("adduser", "dana", "--email", "dana@example.com")
    assert list(made) == ["user", "password", "uid", "key"]
    user = get_user_model().objects.get(username="dana")
    assert user.email == "dana@example.com" and not user.is_staff
    assert apikey_authenticate(raw=made["key"], uid=made["uid"]) == user
    browser = Client()
    signed_in = browser.post("/accounts/login/", {"username": "dana", "password": made["password"]})
    assert signed_in.status_code == 302
    assert browser.get("/account/").status_code == 200


def test_adduser_staff_and_refusals():
    _run("adduser", "erin", "--staff")
    assert get_user_model().objects.get(username="erin").is_staff
    for bad in ("bad name!", "", "x" * 151):
        with pytest.raises(CommandError, match="not a valid user name"):
            _run("adduser", bad)
    with pytest.raises(CommandError, match="exists already"):
        _run("adduser", "erin")
    with pytest.raises(CommandError, match="not a valid email"):
        _run("adduser", "frank", "--email", "not-an-address")
    assert not get_user_model().objects.filter(username__in=["bad name!", "frank"]).exists()


def test_createkey_never_creates_anyone_by_mistake():
    _run("adduser", "gina")
    with pytest.raises(CommandError, match="no user named 'gnia'.*adduser gnia"):
        _run("createkey", "gnia")
    assert not get_user_model().objects.filter(username="gnia").exists()
    key = _run("createkey", "gina", "--name", "laptop")
    assert apikey_authenticate(raw=key["key"]) == get_user_model().objects.get(username="gina")
    with pytest.raises(CommandError, match="not a valid user name"):
        _run("createkey", "bad name!", "--create")
    assert not get_user_model().objects.filter(username="bad name!").exists()
    bot = _run("createkey", "ci-bot", "--create")
    assert apikey_authenticate(raw=bot["key"]).username == "ci-bot"

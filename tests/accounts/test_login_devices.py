"""Hole 4 of the fourth round: the login device cookie outlived a password change.

It was a signed list of usernames skipping every login limit: after the password changed, 150 wrong guesses of
the new one from that browser in 88 s were all checked, none refused. Now the cookie holds tokens, each bound to a
``LoginDevice`` record and to the password it signed in with: a new password, a "sign out everywhere" or staff
revoking the record leave the browser counted like a stranger's.
"""

from __future__ import annotations

from django.core import signing
from django.core.cache import cache
from django.test import Client

from accounts.devices import DEVICE_COOKIE, DEVICE_SALT
from accounts.models import LoginDevice, LoginPressure
from tests.oauth.flow import PASSWORD

FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # the limits are under test, not the hash
NEW_PASSWORD = "a new password, 2026"
OWNER = "192.0.2.1"


def _login(username: str, password: str, device: str = "", address: str = OWNER) -> tuple[int, Client]:
    client = Client(REMOTE_ADDR=address)
    if device:
        client.cookies[DEVICE_COOKIE] = device
    return client.post("/accounts/login/", {"username": username, "password": password}).status_code, client


def _guesses(count: int, device: str, username: str = "alice") -> list[int]:
    return [_login(username, f"wrong guess {n}", device)[0] for n in range(count)]


def _signed_in(settings, person, address: str = OWNER) -> tuple[Client, str]:
    if not person.user.has_usable_password():
        settings.PASSWORD_HASHERS = FAST_HASHER
        person.user.set_password(PASSWORD)
        person.user.save()
    status, browser = _login(person.user.username, PASSWORD, address=address)
    assert status == 302
    return browser, browser.cookies[DEVICE_COOKIE].value


def _forget_failures() -> None:
    cache.clear()
    LoginPressure.objects.all().delete()


def test_login_device_cookie_from_before_a_password_change_no_longer_skips_the_limits(alice, settings):
    _browser, device = _signed_in(settings, alice)
    assert _guesses(12, device) == [200] * 12  # the owner's own browser: never refused while the password holds
    _forget_failures()

    alice.user.set_password(NEW_PASSWORD)
    alice.user.save()
    statuses = _guesses(150, device)
    # The report's 150 wrong guesses of the new password: 10 checked, then refused unchecked, as without a cookie.
    assert statuses == [200] * 10 + [429] * 140
    assert _login("alice", NEW_PASSWORD, device)[0] == 429
    _forget_failures()
    assert statuses == [_login("alice", f"again {n}", address="198.51.100.7")[0] for n in range(150)], (
        "a browser that never signed in is treated the same"
    )


def test_login_device_signed_in_with_the_new_password_is_known_again(alice, settings):
    _browser, device = _signed_in(settings, alice)
    alice.user.set_password(NEW_PASSWORD)
    alice.user.save()
    status, browser = _login("alice", NEW_PASSWORD, device)
    assert status == 302
    fresh = browser.cookies[DEVICE_COOKIE].value
    assert _guesses(12, fresh) == [200] * 12
    assert LoginDevice.objects.filter(user=alice.user).count() == 1  # the old record gave way to the new one


def test_login_device_revoked_by_staff_is_void_and_its_session_ends(alice, operator, settings):
    browser, device = _signed_in(settings, alice)
    assert _guesses(11, device) == [200] * 11
    _forget_failures()
    staff = Client()
    staff.force_login(operator.user)
    page = staff.get("/admin/accounts/logindevice/")
    assert page.status_code == 200 and b"alice" in page.content and b"live" in page.content

    record = LoginDevice.objects.get(user=alice.user)
    staff.post("/admin/accounts/logindevice/", {"action": "revoke", "_selected_action": [record.pk]})
    assert LoginDevice.objects.get(pk=record.pk).revoked_at is not None
    assert _guesses(11, device) == [200] * 10 + [429]
    assert browser.get("/account/").status_code == 302  # signed out: off to the login page


def test_login_device_sign_out_everywhere_voids_every_cookie_and_session(alice, settings):
    here, device_here = _signed_in(settings, alice)
    there, device_there = _signed_in(settings, alice, address="203.0.113.5")
    assert there.get("/account/").status_code == 200

    response = here.post("/account/sign-out-everywhere")
    assert response.status_code == 303 and response["Location"] == "/accounts/login/"
    assert here.get("/account/").status_code == 302 and there.get("/account/").status_code == 302
    assert _guesses(11, device_there) == [200] * 10 + [429]
    _forget_failures()
    assert _guesses(11, device_here) == [200] * 10 + [429]


def test_login_device_cookie_of_one_account_or_of_the_old_format_skips_nothing(alice, bob, settings):
    _browser, alices = _signed_in(settings, alice)
    assert _guesses(11, alices, username="bob") == [200] * 10 + [429]
    _forget_failures()
    # The format that landed before: a signed list of usernames.
    old = signing.dumps(["alice"], salt=DEVICE_SALT)
    assert _guesses(11, old) == [200] * 10 + [429]
    _forget_failures()
    assert _guesses(11, alices) == [200] * 11

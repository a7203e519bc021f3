"""Hole 6 of the third round: anyone could keep any account from signing in.

Eleven bad passwords a minute for ``"ALICE "`` (case and a trailing space still counted as alice) kept alice's
correct password refused (429) from every new browser, and bob's from the stranger's address. Now failures count
per (username, address) and per address, the username is read as Django's login form reads it, and an account
guessed at from many addresses only slows down: a browser that signed in before is never refused, a new one waits
at most ``LOGIN_MAX_DELAY``. Time is a settable clock (``accounts.throttle.time``), not real time.
"""

from __future__ import annotations

from django.test import Client

from accounts import throttle
from accounts.models import LoginPressure
from tests.conftest import make_person
from tests.oauth.flow import PASSWORD

FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # the throttle is under test, not the hash


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def _login(username: str, password: str, address: str, device: str | None = None) -> tuple[int, Client, object]:
    client = Client(REMOTE_ADDR=address)
    if device:
        client.cookies["pbx_device"] = device
    response = client.post("/accounts/login/", {"username": username, "password": password})
    return response.status_code, client, response


def _people(settings, *names: str) -> list:
    settings.PASSWORD_HASHERS = FAST_HASHER
    people = [make_person(name) for name in names]
    for person in people:
        person.user.set_password(PASSWORD)
        person.user.save()
    return people


def test_ten_minutes_of_guessing_never_locks_the_owner_out(transactional_db, settings, monkeypatch):
    (alice,) = _people(settings, "alice")
    clock = _Clock(1_800_000_000.0)
    monkeypatch.setattr(throttle, "time", clock)
    status, earlier, _ = _login("alice", PASSWORD, "192.0.2.1")
    assert status == 302
    device = earlier.cookies["pbx_device"].value

    max_delay = getattr(settings, "LOGIN_MAX_DELAY", 60)
    stranger_statuses: list[int] = []
    new_device_waits: list[int] = []
    for second in range(0, 600, 3):  # a bad password every 3 s for 10 minutes, from 50 addresses in turn
        clock.now += 3
        name = "alice" if second % 6 else "ALICE "
        stranger_statuses.append(_login(name, f"guess {second}", f"198.51.100.{second // 3 % 50}")[0])
        if second % 30 == 0:  # the owner's browser that signed in before: never refused, never slowed
            assert _login("alice", PASSWORD, "192.0.2.1", device)[0] == 302, f"at {second} s"
        if second % 60 == 0:  # the owner on a new device and a new address: at most a wait, then in
            address = f"203.0.113.{second // 60}"
            status, _client, response = _login("alice", PASSWORD, address)
            waited = 0
            if status == 429:
                waited = int(response["Retry-After"])
                assert 1 <= waited <= max_delay
                clock.now += waited
                status = _login("alice", PASSWORD, address)[0]
            assert status == 302, f"at {second} s the owner's new device was refused after waiting {waited} s"
            new_device_waits.append(waited)
    assert set(stranger_statuses) <= {200, 429} and 429 in stranger_statuses
    assert max(new_device_waits) > 0  # the stranger does slow a new device down ...
    assert max(new_device_waits) <= max_delay  # ... by at most this much
    # Staff see the account being guessed at (the admin's "Login pressure").
    pressure = LoginPressure.objects.get(user=alice.user)
    assert pressure.failures >= settings.LOGIN_RATE_LIMIT[0] and pressure.last_address.startswith("198.51.100.")
    operator = make_person("operator", staff=True)
    operator.user.is_superuser = True
    operator.user.save()
    staff = Client()
    staff.force_login(operator.user)
    page = staff.get("/admin/accounts/loginpressure/")
    assert page.status_code == 200 and b"alice" in page.content


def test_the_reported_burst_refuses_neither_the_owner_nor_a_neighbour(transactional_db, settings):
    """The report as it was: eleven bad passwords a minute for "ALICE " from one address."""
    alice, bob = _people(settings, "alice", "bob")
    statuses = [_login("ALICE ", f"guess {n}", "127.0.0.1")[0] for n in range(11)]
    assert statuses == [200] * 10 + [429]  # the stranger's own (username, address) bucket is full
    # "ALICE " is read as Django's login form reads it: the account "ALICE", which is not alice's.
    assert not LoginPressure.objects.exists()
    assert _login("alice", PASSWORD, "192.0.2.50")[0] == 302  # alice from a new browser elsewhere
    assert _login("bob", PASSWORD, "127.0.0.1")[0] == 302  # bob from the stranger's address
    assert alice.user.pk != bob.user.pk


def test_proxy_headers_count_only_from_a_configured_proxy(transactional_db, settings):
    """With TRUST_PROXY_HEADERS on, a client that reaches the server directly and sends X-Forwarded-For does not
    get a fresh address per guess; the configured proxy's header is believed."""
    settings.TRUST_PROXY_HEADERS, settings.TRUSTED_PROXIES = True, ["10.9.9.9"]
    _people(settings, "carol")
    direct = [
        Client(REMOTE_ADDR="192.0.2.77")
        .post("/accounts/login/", {"username": "carol", "password": "x"}, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
        .status_code
        for n in range(11)
    ]
    assert direct[-1] == 429
    via_proxy = [
        Client(REMOTE_ADDR="10.9.9.9")
        .post("/accounts/login/", {"username": "dave", "password": "x"}, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
        .status_code
        for n in range(11)
    ]
    assert via_proxy == [200] * 11  # eleven clients behind the proxy, one guess each

"""Behind a reverse proxy (TRUST_PROXY_HEADERS): per-address limits count the client the proxy saw."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client, override_settings

from config.proxy import forwarded_client
from tests.clients import ROOT
from tests.shared.servers import in_one_window


@pytest.mark.parametrize(
    ("header", "client"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("10.0.0.1, 203.0.113.7", "203.0.113.7"),  # the first entry is the client's own claim: never trusted
        ("203.0.113.7:4711", "203.0.113.7"),
        ("2001:db8::1", "2001:db8::1"),
        ("[2001:db8::1]:4711", "2001:db8::1"),
        ("unknown", None),
        ("", None),
        ("203.0.113.7, <script>", None),
    ],
)
def test_the_last_forwarded_address_is_the_client(header, client):
    assert forwarded_client(header) == client


def test_trust_proxy_headers_installs_the_middleware_first():
    env = {**os.environ, "TRUST_PROXY_HEADERS": "true"}
    done = subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
         "django.setup(); from django.conf import settings; print(settings.MIDDLEWARE[0])"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    assert done.stdout.strip() == "config.proxy.ForwardedClientMiddleware"
    assert "config.proxy.ForwardedClientMiddleware" not in settings.MIDDLEWARE  # off by default


def _wrong_key(client, address: str) -> int:
    return client.post("/mcp", data="{}", content_type="application/json", HTTP_AUTHORIZATION="Bearer pbx_wrong",
                       HTTP_X_FORWARDED_FOR=f"192.0.2.1, {address}").status_code


@pytest.mark.django_db
@override_settings(AUTH_FAILURE_RATE_LIMIT=(2, 60))
def test_clients_behind_the_proxy_have_budgets_of_their_own():
    def attempt(middleware: list[str]) -> list[int]:
        with override_settings(MIDDLEWARE=middleware):
            client = Client()  # a test client builds its middleware chain once
            return [_wrong_key(client, "198.51.100.1") for _ in range(3)] + [_wrong_key(client, "198.51.100.2")]

    behind_proxy = ["config.proxy.ForwardedClientMiddleware", *settings.MIDDLEWARE]
    assert in_one_window(60, lambda: attempt(behind_proxy), before=cache.clear) == [401, 401, 429, 401]
    # Without TRUST_PROXY_HEADERS the header is ignored: every request is the proxy's (the test client's) address.
    assert in_one_window(60, lambda: attempt(settings.MIDDLEWARE), before=cache.clear) == [401, 401, 429, 429]

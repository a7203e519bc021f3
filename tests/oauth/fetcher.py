"""A CIMD fetcher for tests: the client_id is an https URL on the live server, fetched over loopback http."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx2
from oauth2_provider.cimd import CIMDError, _effective_max_age

LOOPBACK = {"localhost", "127.0.0.1", "::1"}


class LoopbackFetcher:
    def fetch(self, client_id: str):
        parts = urlsplit(client_id)
        if parts.scheme != "https" or parts.hostname not in LOOPBACK:
            raise CIMDError("the test fetcher only serves loopback documents")
        response = httpx2.get(urlunsplit(parts._replace(scheme="http")), timeout=10)
        if response.status_code != 200:
            raise CIMDError(f"HTTP {response.status_code}")
        return response.json(), _effective_max_age(response.headers.get("Cache-Control"))

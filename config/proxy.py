"""The client's address behind a reverse proxy.

Every per-address limit (failed credentials, logins, client registration) counts by ``REMOTE_ADDR``. Behind a
proxy that is the proxy's own address, so every client would share one budget and one attacker could lock
everyone out. With ``TRUST_PROXY_HEADERS`` on (the app servers are reachable only through the proxy), the address
the proxy appended last to ``X-Forwarded-For`` (the peer it saw) becomes ``REMOTE_ADDR``. Earlier entries are
whatever the client claimed, so they are never used.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


def forwarded_client(header: str) -> str | None:
    """The last address of an ``X-Forwarded-For`` value, or None when it is not an IP address."""
    last = header.rsplit(",", 1)[-1].strip()
    if last.startswith("[") and "]" in last:  # "[2001:db8::1]:4711", as some proxies write IPv6 with a port
        last = last[1 : last.index("]")]
    elif last.count(":") == 1:  # "203.0.113.7:4711"
        last = last.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return None


class ForwardedClientMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if client := forwarded_client(request.META.get("HTTP_X_FORWARDED_FOR", "")):
            request.META["REMOTE_ADDR"] = client
        return self.get_response(request)

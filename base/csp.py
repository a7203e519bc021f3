"""A Content-Security-Policy on every response: scripts only from this site's own files.

No page has inline script or event-handler attributes (the pages' JavaScript is in ``static/webui``; the API
docs use drf-spectacular's split view, whose init script is a separate file), so ``script-src 'self'`` costs
nothing and turns any markup that slips past the Markdown sanitiser into inert text. Styles may be inline (the
templates use a few ``style`` attributes and blocks; CSS cannot run code). ``form-action`` is left out on purpose:
browsers apply it to the redirect that follows a form post, and the OAuth consent form must redirect to the
client's own callback.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response

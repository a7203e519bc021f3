"""What a person sees who opens an MCP endpoint in a browser: what it is and how to connect an agent to it.

The page is a 200: a browser that opened it got what it asked for (a 405 would be logged in its console as an
error). Protocol clients never ask for HTML, so they keep getting the bare 405 with ``Allow: POST`` they expect.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

SERVERS = {
    "/pillbox/mcp": ("Pillbox", "pillbox", "long-term memory for coding agents: bottles, prescriptions, pills "
                                            "and capsules"),
    "/mcp": ("Todos", "todos", "a to-do list your agents write and you check off on the /list page"),
}


def wants_page(request: HttpRequest) -> bool:
    return request.method in ("GET", "HEAD") and "text/html" in request.headers.get("Accept", "")


def endpoint_page(request: HttpRequest) -> HttpResponse:
    path = "/pillbox/mcp" if request.path.rstrip("/").endswith("pillbox/mcp") else "/mcp"
    title, name, what = SERVERS[path]
    context = {"title": title, "name": name, "what": what, "url": settings.SITE_URL + path}
    return render(request, "webui/mcp_endpoint.html", context)

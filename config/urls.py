from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.http import FileResponse, HttpRequest, JsonResponse
from django.urls import include, path
from django.utils.module_loading import import_string
from mcp.server import Server

from accounts.auth import mcp_caller
from accounts.oauth_views import account_urlpatterns, oauth_urlpatterns
from base.health import readyz
from mcp_bridge.http import mcp_endpoint
from mcp_bridge.server import build_server


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def favicon(request: HttpRequest) -> FileResponse:
    """Browsers ask for /favicon.ico on every site whatever the page links; answer with the site's icon."""
    response = FileResponse((settings.SITE_FILES / "static" / "webui" / "favicon.ico").open("rb"),
                            content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def _server(name: str) -> Callable[[], Server[Any]]:
    return lambda: build_server(import_string(settings.MCP_SERVERS[name]))


urlpatterns = [
    path("mcp", mcp_endpoint(_server("todos"), mcp_caller), name="mcp-todos"),
    path("pillbox/mcp", mcp_endpoint(_server("pillbox"), mcp_caller), name="mcp-pillbox"),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("readyz", readyz, name="readyz"),
    # OAuth 2.1 for remote MCP clients: /.well-known/… and /o/… (namespace "oauth2_provider", which DOT reverses).
    path("", include((oauth_urlpatterns, "oauth2_provider"), namespace="oauth2_provider")),
    *account_urlpatterns,
    path("api/", include("api.urls")),
    path("admin/", admin.site.urls),
    path("", include("webui.urls")),
]

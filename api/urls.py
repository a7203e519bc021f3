"""The REST API's URLs: its schema and documentation pages, each product's endpoints, and its own 404 for the rest.

Apart from ``api.base`` so that importing the shared pieces (which every endpoint's module does) never imports the
endpoints themselves."""

from __future__ import annotations

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api.base import not_found

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's init script as a file (no inline script: the CSP allows none).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("todos/", include("todos.api.urls")),
    path("pillbox/", include("pillbox.api.urls")),
    re_path(r"^(?P<unmatched>.*)$", not_found),
]

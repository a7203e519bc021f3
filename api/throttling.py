"""How often one user may call the REST API. Its own module: DRF reads ``DEFAULT_THROTTLE_CLASSES`` when
``rest_framework.views`` is imported, which ``api.base`` itself imports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from rest_framework.throttling import UserRateThrottle

if TYPE_CHECKING:  # at run time this module is imported while rest_framework.views is
    from rest_framework.request import Request
    from rest_framework.views import APIView


class UserRateLimit(UserRateThrottle):
    """DRF's per-user throttle (request history in Django's cache, so shared across workers with ``REDIS_URL``) at
    ``API_USER_RATE_LIMIT`` requests a minute per user; 0 turns it off. Read from the settings on each request,
    so the limit can change without a restart of the class."""

    def get_rate(self) -> str | None:
        allowed = int(getattr(settings, "API_USER_RATE_LIMIT", 600))
        return f"{allowed}/min" if allowed > 0 else None

    def allow_request(self, request: Request, view: APIView) -> bool:
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

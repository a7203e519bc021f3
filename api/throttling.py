"""How often one user may call the REST API. Its own module: DRF reads ``DEFAULT_THROTTLE_CLASSES`` when
``rest_framework.views`` is imported, which ``api.base`` itself imports."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import UserRateThrottle


class UserRateLimit(UserRateThrottle):
    """DRF's per-user throttle (request history in Django's cache, so shared across workers with ``REDIS_URL``) at
    ``API_USER_RATE_LIMIT`` requests a minute per user; 0 turns it off. DRF makes a throttle for each request, so
    the setting is read each time."""

    def get_rate(self) -> str | None:
        allowed = int(getattr(settings, "API_USER_RATE_LIMIT", 600))
        return f"{allowed}/min" if allowed > 0 else None

"""The OAuth applications (MCP clients) a person has let into their account, and taking that back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from accounts.models import ListLink


@dataclass(frozen=True)
class Authorisation:
    application_id: int
    name: str
    client_id: str
    since: datetime
    last_token: datetime


def authorisations(*, user: User) -> list[Authorisation]:
    """Applications holding a live access token or an unrevoked refresh token for the user."""
    now = timezone.now()
    AccessToken, RefreshToken = get_access_token_model(), get_refresh_token_model()
    live = AccessToken.objects.filter(user=user, expires__gt=now).values_list("application_id", "created")
    refresh = RefreshToken.objects.filter(user=user, revoked__isnull=True).values_list("application_id", "created")
    spans: dict[int, tuple[datetime, datetime]] = {}
    for application_id, created in [*live, *refresh]:
        if application_id is None:
            continue
        first, last = spans.get(application_id, (created, created))
        spans[application_id] = (min(first, created), max(last, created))
    applications = get_application_model().objects.filter(pk__in=spans)
    found = [Authorisation(app.pk, app.name or app.client_id, app.client_id, *spans[app.pk]) for app in applications]
    return sorted(found, key=lambda item: item.last_token, reverse=True)


def authorisation_revoke(*, user: User, application_id: int) -> bool:
    """Revoke every token and pending grant the application holds for the user; False if it held none."""
    AccessToken, RefreshToken, Grant = get_access_token_model(), get_refresh_token_model(), get_grant_model()
    mine = Q(user=user, application_id=application_id)
    with transaction.atomic():
        refresh_tokens = list(RefreshToken.objects.filter(mine, revoked__isnull=True))
        for token in refresh_tokens:
            token.revoke()  # revokes its access token too
        access, _ = AccessToken.objects.filter(mine).delete()
        grants, _ = Grant.objects.filter(mine).delete()
        # The links it was given die with it (they would anyway, their token family being revoked; this also
        # covers links obtained with access tokens that had no refresh token).
        ListLink.objects.filter(mine, revoked_at__isnull=True).update(revoked_at=timezone.now())
    return bool(refresh_tokens or access or grants)

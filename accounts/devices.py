"""Browsers that signed in with a password, which the login limits spare (``accounts.auth``).

A successful login sets a signed cookie holding a random token per account signed in from that browser (at most
``DEVICE_TOKENS``); the server keeps a ``LoginDevice`` record per token (its SHA-256, never the token). A token
skips the limits only while its record is live, names the account being signed in to, is younger than
``DEVICE_MAX_AGE``, and the account's password is the one it signed in with. So a new password, a "sign out
everywhere" or staff revoking the record in the admin leave the browser a stranger again.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import salted_hmac

from accounts.models import LoginDevice
from accounts.services import LAST_USED_RESOLUTION, hash_key
from accounts.throttle import client_ip

DEVICE_COOKIE = "pbx_device"
DEVICE_SALT = "accounts.login-device"
DEVICE_MAX_AGE = 180 * 24 * 3600
DEVICE_TOKENS = 5  # accounts remembered per browser


def password_stamp(user: User) -> str:
    """A keyed hash of the user's password hash: it changes with the password, and tells nothing of it."""
    return salted_hmac("accounts.login-device.password", user.password, algorithm="sha256").hexdigest()


def _tokens(request: HttpRequest) -> list[str]:
    try:
        known = signing.loads(request.COOKIES.get(DEVICE_COOKIE, ""), salt=DEVICE_SALT, max_age=DEVICE_MAX_AGE)
    except signing.BadSignature:
        return []
    return [token for token in (known if isinstance(known, list) else []) if isinstance(token, str)][:DEVICE_TOKENS]


def device_known(*, request: HttpRequest, username: str) -> bool:
    """Whether this browser signed in as ``username`` before, with the password the account has now, and no one
    revoked that sign-in since."""
    hashes = [hash_key(token) for token in _tokens(request)]
    if not hashes:
        return False
    oldest = timezone.now() - timedelta(seconds=DEVICE_MAX_AGE)
    devices = LoginDevice.objects.alive().filter(token_hash__in=hashes, user__username=username, created_at__gt=oldest)
    for device in devices.select_related("user"):
        if device.user.is_active and hmac.compare_digest(device.password_stamp, password_stamp(device.user)):
            _note_use(device)
            return True
    return False


def _note_use(device: LoginDevice) -> None:
    now = timezone.now()
    if device.last_used_at is None or now - device.last_used_at > LAST_USED_RESOLUTION:
        LoginDevice.objects.filter(pk=device.pk).update(last_used_at=now)


def device_remember(*, request: HttpRequest, response: HttpResponse, user: User) -> LoginDevice:
    """Record the browser that just signed in as ``user``: the token it holds for the account when that is still
    good (now naming this sign-in's session), else a new one replacing it."""
    held = _tokens(request)
    session_key = request.session.session_key or ""
    with transaction.atomic():
        mine = LoginDevice.objects.filter(user=user, token_hash__in=[hash_key(token) for token in held])
        oldest = timezone.now() - timedelta(seconds=DEVICE_MAX_AGE)
        for device in mine.alive().filter(password_stamp=password_stamp(user), created_at__gt=oldest):
            LoginDevice.objects.filter(pk=device.pk).update(session_key=session_key, last_used_at=timezone.now())
            return device
        stale = set(mine.values_list("token_hash", flat=True))
        mine.alive().delete()  # signed in with an old password: void; revoked ones stay for staff to see
        token = secrets.token_urlsafe(32)
        device = LoginDevice.objects.create(
            user=user,
            token_hash=hash_key(token),
            password_stamp=password_stamp(user),
            session_key=session_key,
            address=client_ip(request)[:64],
            user_agent=request.headers.get("User-Agent", "")[:200],
        )
    tokens = [token] + [old for old in held if hash_key(old) not in stale]
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps(tokens[:DEVICE_TOKENS], salt=DEVICE_SALT),
        max_age=DEVICE_MAX_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return device


def devices_revoke(*, user: User, device_ids: list[int] | None = None) -> int:
    """Revoke the user's live devices (all of them, or those of ``device_ids``) and end the sessions they opened;
    returns how many were revoked."""
    with transaction.atomic():
        devices = LoginDevice.objects.alive().filter(user=user)
        if device_ids is not None:
            devices = devices.filter(pk__in=device_ids)
        sessions = [key for key in devices.values_list("session_key", flat=True) if key]
        count = devices.update(revoked_at=timezone.now())
    store = import_module(settings.SESSION_ENGINE).SessionStore
    for key in sessions:
        store(session_key=key).delete()
    return count

"""Users, their uid and their API keys."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Account, ApiKey, ListLink

KEY_PREFIX = "pbx_"
# Writing last_used_at on every request would make every read a write; once a minute is enough to show.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def account_for(user: User) -> Account:
    try:
        return user.account
    except Account.DoesNotExist:
        account, _ = Account.objects.get_or_create(user=user)
        return account


def user_get_or_create(*, username: str, staff: bool = False) -> User:
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.is_staff = staff
            user.is_superuser = staff
            user.save()
        account_for(user)
    return user


def apikey_create(*, user: User, name: str = "") -> tuple[ApiKey, str]:
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(user=user, key_hash=hash_key(raw), prefix=raw[:10], name=name)
    return key, raw


def apikey_authenticate(*, raw: str, uid: str | None = None) -> User | None:
    """The user a live key belongs to (and, with ``uid``, only if the uid is theirs), else None."""
    key = apikey_find(raw=raw, uid=uid)
    return key.user if key is not None else None


def apikey_find(*, raw: str, uid: str | None = None) -> ApiKey | None:
    """The live key ``raw`` is, of an active user (and, with ``uid``, only if the uid is theirs), else None."""
    if not raw or len(raw) > 200:
        return None
    digest = hash_key(raw)
    key = ApiKey.objects.alive().select_related("user__account").filter(key_hash=digest).first()
    if key is None or not hmac.compare_digest(key.key_hash, digest) or not key.user.is_active:
        return None
    if uid is not None and not hmac.compare_digest(account_for(key.user).uid.encode(), uid.encode("utf-8", "replace")):
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key


def apikey_revoke(*, user: User, key_id: int) -> bool:
    with transaction.atomic():
        now = timezone.now()
        changed = ApiKey.objects.alive().filter(user=user, pk=key_id).update(revoked_at=now)
        if changed:
            Account.objects.filter(user=user).update(link_epoch=F("link_epoch") + 1)
            ListLink.objects.filter(api_key_id=key_id, revoked_at__isnull=True).update(revoked_at=now)
    return bool(changed)


def keys_revoke_all(*, user: User) -> int:
    """Revoke every key of the user, and with them every /list link handed out for the user."""
    with transaction.atomic():
        account_for(user)
        now = timezone.now()
        count = ApiKey.objects.alive().filter(user=user).update(revoked_at=now)
        Account.objects.filter(user=user).update(link_epoch=F("link_epoch") + 1)
        # Every link, whatever obtained it: this is the "lock everything agents were given" command.
        ListLink.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=now)
    return count

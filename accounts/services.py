"""Users, their uid and their API keys.

A key's lookup (the key with its user and account) is kept in Django's cache for ``API_KEY_CACHE_SECONDS``, under
the key's SHA-256, never the key. Everything that changes a key, its user or its account leaves a tombstone in
its place (``keys_forget``), which refuses the next lookup its cached copy and stops a lookup that read the
database before the change from caching it afterwards. With Redis every process sees the tombstone at once; with
the per-process memory cache another process may still serve its own copy until it expires.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Account, ApiKey, ListLink
from base.lru import BoundedLru

KEY_PREFIX = "pbx_"
# Writing last_used_at on every request would make every read a write; once a minute is enough to show.
LAST_USED_RESOLUTION = timedelta(minutes=1)
KEY_CACHE_PREFIX = "apikey:"
FORGOTTEN = "forgotten"  # the tombstone: look in the database, and cache nothing, until it expires
# When this process last wrote each key's last_used_at: a cached key still carries the value it was cached with.
_last_written: BoundedLru[int, datetime] = BoundedLru(max_items=10_000, max_bytes=1 << 20, size_of=lambda _: 64)


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
    key = _live_key(digest)
    if key is None or not hmac.compare_digest(key.key_hash, digest) or not key.user.is_active:
        return None
    if uid is not None and not hmac.compare_digest(account_for(key.user).uid.encode(), uid.encode("utf-8", "replace")):
        return None
    _note_use(key)
    return key


def _live_key(digest: str) -> ApiKey | None:
    seconds = settings.API_KEY_CACHE_SECONDS
    cached = cache.get(KEY_CACHE_PREFIX + digest) if seconds else None
    if isinstance(cached, ApiKey):
        return cached
    key = ApiKey.objects.alive().select_related("user__account").filter(key_hash=digest).first()
    if key is not None and cached is None and seconds:
        # The password hash stays out of the cache (Redis is not where it belongs): deferred, it loads on access.
        key.user.__dict__.pop("password", None)
        # add, not set: a tombstone left meanwhile by a revocation wins over what was read before it.
        cache.add(KEY_CACHE_PREFIX + digest, key, seconds)
    return key


def _note_use(key: ApiKey) -> None:
    now = timezone.now()
    last = max((when for when in (key.last_used_at, _last_written.get(key.pk)) if when is not None), default=None)
    if last is not None and now - last <= LAST_USED_RESOLUTION:
        return
    _last_written.put(key.pk, now)
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)


def keys_forget(*, user_id: int, digests: tuple[str, ...] = ()) -> None:
    """Tombstone the cached lookups of every key of the user (and of ``digests``): each carries the user and the
    account, so a change to either, or a revocation (which also moves the account's link epoch), stales them all.
    Called before the change commits; a lookup that reads the old rows meanwhile cannot cache them."""
    seconds = settings.API_KEY_CACHE_SECONDS
    if not seconds:
        return
    hashes = set(ApiKey.objects.filter(user_id=user_id).values_list("key_hash", flat=True)) | set(digests)
    cache.set_many({KEY_CACHE_PREFIX + digest: FORGOTTEN for digest in hashes}, seconds)


def forget_keys_on_change(
    sender: type, instance: Any, created: bool = False, update_fields: Any = None, **kwargs: Any
) -> None:
    """Signal receiver (``AccountsConfig.ready``) for saved or deleted users, accounts and keys."""
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return  # nothing cached can name a new row, and a sign-in changes nothing a key's lookup answers
    if isinstance(instance, ApiKey):
        keys_forget(user_id=instance.user_id, digests=(instance.key_hash,))
    else:
        keys_forget(user_id=instance.user_id if isinstance(instance, Account) else instance.pk)


def apikey_revoke(*, user: User, key_id: int) -> bool:
    with transaction.atomic():
        keys_forget(user_id=user.pk)
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
        keys_forget(user_id=user.pk)
        now = timezone.now()
        count = ApiKey.objects.alive().filter(user=user).update(revoked_at=now)
        Account.objects.filter(user=user).update(link_epoch=F("link_epoch") + 1)
        # Every link, whatever obtained it: this is the "lock everything agents were given" command.
        ListLink.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=now)
    return count

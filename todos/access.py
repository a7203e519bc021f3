"""Who may open a /list page: the link ``get_list_url`` hands out, or the seed's ``?uid=&key=``.

A caller that presented its key in the URL gets that same form back (it already holds the key), which dies with the
key. Everyone else gets a link (a random nonce and the site's signature of it and of the user's account uid) whose
hash is kept as an ``accounts.ListLink`` tied to the credential that asked for it: the API key, the OAuth grant (its
refresh-token family, which rotation keeps and reuse detection revokes), or the local stdio agent. A link opens the
list only while it is unexpired (``LIST_LINK_MAX_AGE_DAYS``), not revoked on the account page, and its credential is
still alive. On use the token is found by its hash and then checked against the row's user: its signature must be of
that user's account uid and the row's nonce. Nothing in a token comes from a counter, so a restored backup (which
rolls the id counters back) never hands one user a token another user held.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from accounts.models import ListLink
from accounts.services import account_for, apikey_authenticate
from mcp_bridge.tools import Credential

LIST_PATH = "/list"
LINK_PREFIX = "l_"
# Writing last_used_at on every page view would make every read a write; once a minute is enough to show.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def link_max_age() -> timedelta:
    return timedelta(days=float(getattr(settings, "LIST_LINK_MAX_AGE_DAYS", 30)))


def list_url(
    *,
    user: User,
    credential: Credential | None = None,
    presented_uid: str | None = None,
    presented_key: str | None = None,
) -> str:
    """A /list URL for ``user``, as the caller holding ``credential`` may have it (``None``: a local agent)."""
    account = account_for(user)
    if presented_key and presented_uid == account.uid:
        query = {"uid": account.uid, "key": presented_key}
    else:
        query = {"t": link_create(user=user, credential=credential or Credential(kind="stdio"))}
    return f"{settings.SITE_URL}{LIST_PATH}?{urlencode(query)}"


def link_create(*, user: User, credential: Credential) -> str:
    """A link for ``user`` tied to ``credential``. Asked again by the same credential while its link has at least
    half its life left, the same link comes back (``get_list_url`` is idempotent: an agent asking each session
    does not fill the account page with links); otherwise a new one."""
    account = account_for(user)
    now = timezone.now()
    fields = {
        "kind": credential.kind,
        "api_key_id": credential.api_key_id,
        "application_id": credential.application_id,
        "token_family": _token_family(credential.access_token_id) if credential.kind == ListLink.KIND_OAUTH else None,
    }
    if credential.kind != ListLink.KIND_OAUTH or fields["token_family"]:
        # A grant without a refresh-token family is tied to its one access token: never shared.
        fresh = now + link_max_age() / 2
        for link in ListLink.objects.unexpired().filter(user=user, expires_at__gt=fresh, **fields).order_by("-pk")[:5]:
            if link.nonce and _hash(token := _signed(link.nonce, account.uid)) == link.token_hash:
                return token
    nonce = secrets.token_urlsafe(18)
    token = _signed(nonce, account.uid)
    ListLink.objects.create(
        user=user,
        token_hash=_hash(token),
        nonce=nonce,
        access_token_id=credential.access_token_id,
        expires_at=now + link_max_age(),
        **fields,
    )
    # Dead links are kept a while for the account page's sake, not forever.
    ListLink.objects.filter(user=user, expires_at__lt=now - timedelta(days=7)).delete()
    return token


def _signer() -> signing.Signer:
    return signing.Signer(salt="todos.list-link", sep=".")


def _signed(nonce: str, account_uid: str) -> str:
    """A link's token: its nonce and the site's signature (HMAC with SECRET_KEY) of the nonce and the user's
    account uid, so it can be handed out again while only its hash is stored. A new SECRET_KEY makes new tokens;
    links already handed out keep working while the old key is in ``SECRET_KEY_FALLBACKS``."""
    return LINK_PREFIX + nonce + "." + _signer().signature(f"list-link.{account_uid}.{nonce}")


def _signed_for(token: str, *, nonce: str, account_uid: str) -> bool:
    """Whether ``token`` is the signature of ``nonce`` for this account (under the key or a fallback key)."""
    given_nonce, _, signature = token.removeprefix(LINK_PREFIX).partition(".")
    if not nonce or not constant_time_compare(given_nonce, nonce):
        return False
    try:
        _signer().unsign(f"list-link.{account_uid}.{nonce}.{signature}")
    except signing.BadSignature:
        return False
    return True


def _token_family(access_token_id: int | None) -> str | None:
    """The refresh-token family of an OAuth access token's grant (rotation keeps it; reuse revokes it)."""
    from oauth2_provider.models import get_access_token_model

    token = get_access_token_model().objects.filter(pk=access_token_id).first() if access_token_id else None
    if token is None:
        return None
    for refresh in (getattr(token, "refresh_token", None), token.source_refresh_token):
        if refresh is not None and refresh.token_family:
            return str(refresh.token_family)
    return None


def credential_alive(link: ListLink) -> bool:
    """Whether the credential that obtained ``link`` still holds access."""
    if link.kind == ListLink.KIND_API_KEY:
        return link.api_key is not None and link.api_key.revoked_at is None
    if link.kind == ListLink.KIND_OAUTH:
        from oauth2_provider.models import get_access_token_model, get_refresh_token_model
        from oauth2_provider.settings import oauth2_settings

        now = timezone.now()
        if link.token_family:
            oldest = now - timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
            return bool(get_refresh_token_model().objects.filter(
                token_family=link.token_family,
                user_id=link.user_id,
                application_id=link.application_id,
                revoked__isnull=True,
                created__gt=oldest,
            ).exists())
        return bool(get_access_token_model().objects.filter(
            pk=link.access_token_id, user_id=link.user_id, expires__gt=now
        ).exists())
    return link.kind in (ListLink.KIND_STDIO, ListLink.KIND_SESSION)


def live_links(*, user: User) -> list[ListLink]:
    links = ListLink.objects.unexpired().filter(user=user).select_related("api_key")
    alive = [link for link in links if credential_alive(link)]
    wanted = {link.application_id for link in alive if link.application_id}
    if wanted:
        from oauth2_provider.models import get_application_model

        names = {app.pk: app.name or app.client_id for app in get_application_model().objects.filter(pk__in=wanted)}
        for link in alive:
            link.application_name = names.get(link.application_id, "")
    return alive


def link_revoke(*, user: User, link_id: int) -> bool:
    return bool(ListLink.objects.unexpired().filter(user=user, pk=link_id).update(revoked_at=timezone.now()))


def list_link_user(token: str) -> User | None:
    """The user a /list link opens, or None for an unknown, expired, revoked or orphaned link."""
    if not token or len(token) > 200:
        return None
    link = (
        ListLink.objects.unexpired()
        .select_related("user__account", "api_key")
        .filter(token_hash=_hash(token))
        .first()
    )
    if link is None or not link.user.is_active:
        return None
    # The row's hash matched: the token must also be this user's (a row put back by a restore, or written by
    # anyone able to write the table, cannot open another account's list).
    if not _signed_for(token, nonce=link.nonce, account_uid=account_for(link.user).uid) or not credential_alive(link):
        return None
    now = timezone.now()
    if link.last_used_at is None or now - link.last_used_at > LAST_USED_RESOLUTION:
        ListLink.objects.filter(pk=link.pk).update(last_used_at=now)
    return link.user


def list_key_user(*, uid: str, key: str) -> User | None:
    return apikey_authenticate(raw=key, uid=uid)

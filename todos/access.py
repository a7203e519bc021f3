"""Who may open a /list page: the link ``get_list_url`` hands out, or the seed's ``?uid=&key=``.

A caller that presented its key in the URL gets that same form back (it already holds the key). Everyone
else gets a signed link naming the user's uid and ``link_epoch``: it reveals no key, a changed character
breaks the signature, and revoking the user's keys bumps the epoch, which kills every link made before.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing

from accounts.models import Account
from accounts.services import account_for, apikey_authenticate

LINK_SALT = "todos.list-link"
LIST_PATH = "/list"


def _signer() -> signing.Signer:
    # No timestamp: a link lives until the user's keys are revoked, so the same user gets the same link.
    return signing.Signer(salt=LINK_SALT)


def list_url(*, user: AbstractBaseUser, presented_uid: str | None = None, presented_key: str | None = None) -> str:
    account_for(user)
    # Read afresh: a stdio process keeps its user for hours, and revokekeys may have bumped the epoch since.
    account = Account.objects.get(user=user)
    if presented_key and presented_uid == account.uid:
        query = {"uid": account.uid, "key": presented_key}
    else:
        query = {"t": _signer().sign_object([account.uid, account.link_epoch])}
    return f"{settings.SITE_URL}{LIST_PATH}?{urlencode(query)}"


def list_link_user(token: str) -> AbstractBaseUser | None:
    """The user a signed /list link opens, or None for a tampered, foreign or revoked link."""
    if len(token) > 500:
        return None
    try:
        payload = _signer().unsign_object(token)
    except signing.BadSignature:
        return None
    if not (isinstance(payload, list) and len(payload) == 2):
        return None
    uid, epoch = payload
    account = Account.objects.select_related("user").filter(uid=uid, link_epoch=epoch).first()
    if account is None or not account.user.is_active:
        return None
    return account.user


def list_key_user(*, uid: str, key: str) -> AbstractBaseUser | None:
    return apikey_authenticate(raw=key, uid=uid)

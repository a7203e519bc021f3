from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def new_uid() -> str:
    return secrets.token_hex(10)


class Account(models.Model):
    """What a Django user needs beyond auth: a public opaque uid, a plan limit, a link epoch."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    uid = models.CharField(max_length=32, unique=True, default=new_uid, editable=False)
    max_tasks = models.PositiveIntegerField(default=1200, help_text="Todos plan limit, deleted todos included.")
    # Bumped whenever the user's keys are revoked: every signed /list link names the epoch it was made in.
    link_epoch = models.PositiveIntegerField(default=0, editable=False)

    def __str__(self) -> str:
        return f"{self.user} ({self.uid})"


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def alive(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    """An API key: only its SHA-256 is kept; the key itself is shown once, when it is made."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=12, editable=False, help_text="The key's first characters, to tell keys apart."
    )
    name = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class ListLinkQuerySet(models.QuerySet["ListLink"]):
    def unexpired(self) -> ListLinkQuerySet:
        from django.utils import timezone

        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class ListLink(models.Model):
    """A /list link handed out by ``get_list_url``: only its SHA-256 is kept, and it lives no longer than the
    credential that obtained it (an API key, an OAuth grant's token family, or a local stdio agent)."""

    KIND_API_KEY = "api_key"
    KIND_OAUTH = "oauth"
    KIND_STDIO = "stdio"
    KIND_SESSION = "session"
    KINDS = [
        (KIND_API_KEY, "API key"),
        (KIND_OAUTH, "OAuth application"),
        (KIND_STDIO, "local agent (stdio)"),
        (KIND_SESSION, "signed-in session"),
    ]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="list_links")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    # The random part of the link's token (the token is it with the site's signature of it and of the user's
    # account uid). Empty for links made before tokens carried one: those no longer open (todos.access).
    nonce = models.CharField(max_length=64, blank=True, default="", editable=False)
    kind = models.CharField(max_length=16, choices=KINDS)
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.CASCADE, related_name="list_links")
    # The OAuth application's pk, kept without a foreign key: the stdio servers run without the OAuth provider app
    # (config/settings_stdio.py) and still migrate and write this table. A deleted application takes its tokens
    # with it, and a link whose grant has no live token left is dead (todos.access.credential_alive).
    application_id = models.BigIntegerField(null=True, blank=True)
    # The refresh-token family of the grant (rotation keeps it; reuse detection revokes the whole family).
    token_family = models.UUIDField(null=True, blank=True)
    # For a grant without refresh tokens: the access token itself (deleted when revoked).
    access_token_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ListLinkQuerySet.as_manager()

    # Not a column: the OAuth application's name, set by todos.access.live_links for the account page.
    application_name: str

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "revoked_at", "expires_at"])]

    def __str__(self) -> str:
        return f"/list link of {self.user} via {self.get_kind_display()}"


class RedeemedCode(models.Model):
    """An OAuth authorization code already exchanged, by its SHA-256, with the family of the tokens it bought: a
    second exchange of the same code (someone else holds it) revokes them (RFC 6749 section 4.1.2)."""

    code_hash = models.CharField(max_length=64, unique=True)
    token_family = models.UUIDField(null=True, blank=True)
    access_token_checksum = models.CharField(max_length=64, blank=True)
    redeemed_at = models.DateTimeField(auto_now_add=True)


class LoginPressure(models.Model):
    """Failed password logins for one account from every address, for a while (``LOGIN_ACCOUNT_CEILING``): past
    the ceiling each address waits a growing delay before its next attempt at the account is checked; a browser
    that signed in as the account before never waits. Kept in the database so that staff see who is being
    guessed at (the admin's "Login pressure")."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_pressure")
    failures = models.PositiveIntegerField(default=0, help_text="Failed logins since the window opened.")
    window_started_at = models.DateTimeField()
    last_failure_at = models.DateTimeField()
    last_address = models.CharField(max_length=64, blank=True)

    class Meta:
        verbose_name_plural = "login pressure"
        ordering = ["-last_failure_at"]

    def __str__(self) -> str:
        return f"{self.failures} failed logins for {self.user}"


class LoginDeviceQuerySet(models.QuerySet["LoginDevice"]):
    def alive(self) -> LoginDeviceQuerySet:
        return self.filter(revoked_at__isnull=True)


class LoginDevice(models.Model):
    """A browser that signed in with a password (``accounts.devices``). Its cookie carries a random token of which
    only the SHA-256 is kept here; the token skips the login limits for this user only while the record is live
    and the user's password is still the one it signed in with (``password_stamp``). Revoking it (staff, in the
    admin, or the user's "sign out everywhere") also ends the session that sign-in opened."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_devices")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    # A keyed hash of the user's password hash when the browser signed in: a new password voids the device.
    password_stamp = models.CharField(max_length=64, editable=False)
    session_key = models.CharField(max_length=40, blank=True, editable=False)
    address = models.CharField(max_length=64, blank=True, help_text="The address it signed in from.")
    user_agent = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = LoginDeviceQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user}'s browser at {self.address or 'an unknown address'}"

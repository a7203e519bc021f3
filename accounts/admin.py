"""Operators' view of accounts and API keys. Only a key's hash and first characters are stored, so that is all
the admin can show; keys are made with ``manage.py createkey`` or on the account page, where they are shown once."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.devices import devices_revoke, password_stamp
from accounts.models import Account, ApiKey, LoginDevice, LoginPressure
from accounts.services import apikey_revoke
from accounts.throttle import pressure_delay


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("user", "uid", "max_tasks", "link_epoch")
    search_fields = ("user__username", "user__email", "uid")
    list_select_related = ("user",)
    fields = ("user", "uid", "max_tasks", "link_epoch")
    readonly_fields = ("user", "uid", "link_epoch")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made with the user


class KeyStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("live", "live"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        if self.value() == "live":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("shown_prefix", "user", "name", "created_at", "last_used_at", "state")
    list_filter = (KeyStateFilter, "created_at")
    search_fields = ("prefix", "name", "user__username", "user__account__uid")
    list_select_related = ("user",)
    fields = ("user", "name", "prefix", "key_hash", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "prefix", "key_hash", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    @admin.display(description="key", ordering="prefix")
    def shown_prefix(self, key: ApiKey) -> str:
        return f"{key.prefix}…"

    @admin.display(description="state", ordering="revoked_at")
    def state(self, key: ApiKey) -> str:
        return f"✗ revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "live"

    @admin.action(description="Revoke selected keys (and the user's /list links)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = sum(apikey_revoke(user=key.user, key_id=key.pk) for key in queryset.filter(revoked_at__isnull=True))
        self.message_user(request, f"Revoked {count} key{'' if count == 1 else 's'}.", messages.SUCCESS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a key is shown once when made, which the admin cannot do safely


@admin.register(LoginPressure)
class LoginPressureAdmin(admin.ModelAdmin):
    """Accounts that failed logins from any address lately: who is being guessed at, and how much each address
    is slowed down for them (browsers that signed in as the account before are never slowed)."""

    list_display = ("user", "failures", "current_delay", "window_started_at", "last_failure_at", "last_address")
    search_fields = ("user__username", "last_address")
    list_select_related = ("user",)
    readonly_fields = ("user", "failures", "window_started_at", "last_failure_at", "last_address")

    @admin.display(description="delay per address")
    def current_delay(self, pressure: LoginPressure) -> str:
        delay = pressure_delay(pressure.failures, pressure.window_started_at)
        return f"{delay} s" if delay else "none"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(LoginDevice)
class LoginDeviceAdmin(admin.ModelAdmin):
    """Browsers that signed in with a password: each skips the login limits for its account until it is revoked
    here (which also ends the session it opened) or the account's password changes."""

    list_display = ("user", "address", "user_agent", "created_at", "last_used_at", "state")
    list_filter = ("created_at",)
    search_fields = ("user__username", "address", "user_agent")
    list_select_related = ("user",)
    fields = ("user", "address", "user_agent", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    @admin.display(description="state", ordering="revoked_at")
    def state(self, device: LoginDevice) -> str:
        if device.revoked_at:
            return f"✗ revoked {device.revoked_at:%Y-%m-%d %H:%M}"
        return "live" if device.password_stamp == password_stamp(device.user) else "✗ password changed since"

    @admin.action(description="Revoke selected devices (and end their sessions)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[LoginDevice]) -> None:
        live = queryset.filter(revoked_at__isnull=True).select_related("user")
        count = sum(devices_revoke(user=device.user, device_ids=[device.pk]) for device in live)
        self.message_user(request, f"Revoked {count} device{'' if count == 1 else 's'}.", messages.SUCCESS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by signing in

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.apps import apps
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save

        from accounts.models import Account, ApiKey
        from accounts.services import forget_keys_on_change

        # A cached key lookup carries its user and account: any change to the three forgets it.
        for model in (get_user_model(), Account, ApiKey):
            post_save.connect(forget_keys_on_change, sender=model, dispatch_uid=f"forget-keys-{model.__name__}")
            post_delete.connect(forget_keys_on_change, sender=model, dispatch_uid=f"forget-keys-del-{model.__name__}")

        # The stdio servers run without the OAuth provider (config/settings_stdio.py): no clients to police there.
        if not apps.is_installed("oauth2_provider"):
            return
        from accounts import client_policy

        # Every path that stores an OAuth client validates it through Application.clean: the policy goes there.
        client_policy.install()

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.apps import apps

        # The stdio servers run without the OAuth provider (config/settings_stdio.py): no clients to police there.
        if not apps.is_installed("oauth2_provider"):
            return
        from accounts import client_policy

        # Every path that stores an OAuth client validates it through Application.clean: the policy goes there.
        client_policy.install()

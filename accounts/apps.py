from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts import client_policy

        # Every path that stores an OAuth client validates it through Application.clean: the policy goes there.
        client_policy.install()

from django.apps import AppConfig


class PillboxConfig(AppConfig):
    name = "pillbox"
    default_auto_field = "django.db.models.BigAutoField"

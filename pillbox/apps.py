from django.apps import AppConfig
from django.db.backends.signals import connection_created


class PillboxConfig(AppConfig):
    name = "pillbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from base import health
        from pillbox import deadlines, tokens
        from pillbox.original.recognise import only_our_constraints
        from pillbox.search import pgvector

        connection_created.connect(only_our_constraints, dispatch_uid="pillbox_original_constraints")
        connection_created.connect(tokens.register, dispatch_uid="pillbox_scoped_words")
        connection_created.connect(deadlines.guard_project_connection, dispatch_uid="pillbox_read_deadline")
        connection_created.connect(pgvector.announce, dispatch_uid="pillbox_pgvector_announce")
        health.REPORTS["pgvector"] = pgvector.report

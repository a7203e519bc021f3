from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import keys_revoke_all


class Command(BaseCommand):
    help = "Revoke every API key of USERNAME, and with them every /list link handed out for that user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: object, username: str, **options: object) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        count = keys_revoke_all(user=user)
        self.stdout.write(f"revoked {count} key{'s' if count != 1 else ''} of {username}")

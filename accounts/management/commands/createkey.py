from django.core.management.base import BaseCommand, CommandParser

from accounts.services import account_for, apikey_create, user_get_or_create
from config.bootstrap import ensure_global_db


class Command(BaseCommand):
    help = "Create USERNAME if missing, make a new API key and print `uid: <uid>` and `key: <key>`."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args: object, username: str, name: str, **options: object) -> None:
        ensure_global_db()
        user = user_get_or_create(username=username)
        _, raw = apikey_create(user=user, name=name)
        self.stdout.write(f"uid: {account_for(user).uid}\nkey: {raw}")

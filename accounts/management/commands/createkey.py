"""`pillbox-todos createkey NAME [--label L] [--create]`: a new API key for an existing user (a typo never makes
anyone)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands.adduser import checked_username
from accounts.services import account_for, apikey_create, user_get_or_create
from base.bootstrap import ensure_global_db


class Command(BaseCommand):
    help = ("Make a new API key for an existing user and print `uid: <uid>` and `key: <key>`. "
            "--create also makes the user (without a password: for agents only; adduser makes people).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--label", "--name", dest="name", default="",
                            help="a label for the key, e.g. laptop-claude; agents claiming todos with it are known "
                            "by it")
        parser.add_argument("--create", action="store_true", help="create the user when there is none by that name")

    def handle(self, *args: object, username: str, name: str, create: bool, **options: object) -> None:
        ensure_global_db()
        User = get_user_model()
        if not User.objects.filter(username=username).exists():
            if not create:
                known = list(User.objects.order_by("username").values_list("username", flat=True)[:20])
                listing = ", ".join(known) if known else "none yet"
                raise CommandError(f"There is no user named {username!r} (users: {listing}). Add a person with "
                                   f"`pillbox-todos adduser {username}`, or pass --create for a key-only user.")
            checked_username(username)
        user = user_get_or_create(username=username)
        _, raw = apikey_create(user=user, name=name)
        self.stdout.write(f"uid: {account_for(user).uid}\nkey: {raw}")

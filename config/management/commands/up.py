"""`manage.py up`: the README's one command after installing: migrate, make the first user, serve.

The first user is the operating-system login (or PILLBOX_USER), the same user the stdio servers run as, made
staff so the person sees in the browser the memory their local agents wrote. Credentials are printed once,
when they are made.
"""

from __future__ import annotations

import getpass
import os
import secrets

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Migrate the global database, make the local login the first staff user, and run the site."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-serve", action="store_true", help="set up only; do not start the server")

    def handle(self, *args: object, addrport: str, no_serve: bool, **options: object) -> None:
        from accounts.models import ApiKey
        from accounts.services import account_for, apikey_create, user_get_or_create
        from config.bootstrap import ensure_global_db
        from pillbox import original

        ensure_global_db()
        username = os.environ.get("PILLBOX_USER") or getpass.getuser()
        user = user_get_or_create(username=username, staff=True)
        lines = [f"Pillbox & Todos on {settings.SITE_URL} (data in {settings.PILLBOX_HOME})", f"user: {username}"]
        # The stdio servers may have made this user first, as a plain user: the person at the machine runs it.
        user.is_staff = user.is_superuser = True
        if not user.has_usable_password():
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            lines.append(f"password: {password}   (shown once; change it with manage.py changepassword)")
        user.save()
        # The person at the machine: the original Pillbox's memory in their home becomes theirs (once).
        with original.announcements() as news:
            original.import_home(user)
        lines += news.lines()
        lines.append(f"uid: {account_for(user).uid}")
        if not ApiKey.objects.alive().filter(user=user).exists():
            _, key = apikey_create(user=user, name="first key")
            lines.append(f"key: {key}   (shown once; make more with manage.py createkey {username})")
        self.stdout.write("\n".join(lines))
        if not no_serve:
            call_command("runserver", addrport, use_reloader=False)

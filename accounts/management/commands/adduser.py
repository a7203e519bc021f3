"""`pillbox-todos adduser NAME [--staff] [--email E]`: a person who can sign in to the pages, with a first API key.

The name is checked the way Django's own forms check it, so what is printed here is what the login page takes.
"""

from __future__ import annotations

import getpass
import secrets
import sys

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email
from django.db import models, transaction

from accounts.services import account_for, apikey_create
from base.bootstrap import ensure_global_db


def checked_username(raw: str) -> str:
    """The name as Django's user model accepts it, or a CommandError saying what is wrong."""
    User = get_user_model()
    field = User._meta.get_field(User.USERNAME_FIELD)
    assert isinstance(field, models.Field)  # a column, never a relation
    try:
        field.run_validators(raw)
        if not raw:
            raise ValidationError("The name must not be empty.")
    except ValidationError as exc:
        raise CommandError(f"{raw!r} is not a valid user name: {' '.join(exc.messages)}") from None
    return raw


class Command(BaseCommand):
    help = "Add a person: prints (or asks for) their password for the pages, their uid and a first API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="may use the admin and see every user's data there")
        parser.add_argument("--email", default="", help="their email address")
        parser.add_argument("--ask-password", action="store_true",
                            help="ask for the password instead of printing a generated one")

    def handle(self, *args: object, username: str, staff: bool, email: str, ask_password: bool,
               **options: object) -> None:
        username = checked_username(username)
        if email:
            try:
                validate_email(email)
            except ValidationError:
                raise CommandError(f"{email!r} is not a valid email address.") from None
        ensure_global_db()
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            raise CommandError(f"{username} exists already; `pillbox-todos createkey {username}` makes them a new key, "
                               f"`pillbox-todos changepassword {username}` a new password.")
        password = self._ask() if ask_password else None
        with transaction.atomic():
            user = User(username=username, email=email, is_staff=staff, is_superuser=staff)
            shown = password is None
            password = password or secrets.token_urlsafe(12)
            user.set_password(password)
            user.save()
            uid = account_for(user).uid
            _, key = apikey_create(user=user, name="first key")
        lines = [f"user: {username}"]
        if shown:
            lines.append(f"password: {password}   (shown once; sign in at /accounts/login/)")
        lines += [f"uid: {uid}", f"key: {key}   (shown once)"]
        self.stdout.write("\n".join(lines))

    def _ask(self) -> str:
        if not sys.stdin.isatty():
            raise CommandError("--ask-password needs a terminal; without it a password is generated and printed.")
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Password (again): "):
            raise CommandError("The two passwords differ; nobody was added.")
        try:
            password_validation.validate_password(first)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        return first

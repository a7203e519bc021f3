"""`pillbox-todos adopt [DIRECTORY] [--user NAME] [--yes]`: make a project's memory that your Pillbox did not make on
this machine your own (pillbox.origin).

A ``.pillbox/pillbox.db`` committed in a repository you cloned, copied from elsewhere or made by another user is
*foreign*: your agents' servers neither read, search nor register it, and the session-start hook only says it is
there. Without ``--yes`` this shows what it holds (its bottle, counts, its newest pill titles, never their
content); with ``--yes`` it is adopted: registered, read from now on, and labelled as come from elsewhere. A team
that commits its ``.pillbox`` on purpose adopts it once per clone. The agent's tool for the same is
``bottle_vinculate``.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = ("Show a project's Pillbox memory that your Pillbox did not make here (a cloned repository's .pillbox), "
            "then, with --yes, adopt it as your own.")
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", nargs="?", help="the directory holding .pillbox/pillbox.db (default: here)")
        parser.add_argument("--user", help="the local user (default: $PILLBOX_USER, else the login name)")
        parser.add_argument("--yes", action="store_true", help="adopt it (without: only show what it holds)")

    def handle(self, *args: object, directory: str | None, user: str | None, yes: bool, **options: object) -> None:
        from accounts.services import user_get_or_create
        from base.bootstrap import ensure_global_db
        from mcp_bridge.tools import Caller
        from pillbox import origin, services, texts
        from pillbox.access import reach_for
        from pillbox.databases import db_file
        from pillbox.exceptions import PillboxError

        ensure_global_db()
        workdir = Path(directory).expanduser().resolve() if directory else Path.cwd().resolve()
        path = db_file(workdir)
        if not path.is_file():
            raise CommandError(f"There is no .pillbox/pillbox.db in {workdir}.")
        person = user_get_or_create(username=user or os.environ.get("PILLBOX_USER") or getpass.getuser())
        try:
            if not yes:
                seen = origin.look(path)
                self.stdout.write("\n".join([
                    f"{path.resolve()} holds:", *(f"  bottle {bottle}" for bottle in seen.bottles),
                    f"  {texts.plural(seen.prescriptions, 'prescription')}, {texts.plural(seen.pills, 'pill')}; "
                    "the newest:", *(f"    {title}" for title in seen.titles),
                    f"Adopt it as your own: pillbox-todos adopt --yes {workdir}",
                ]))
                return
            reach = reach_for(Caller(user=person, transport="stdio", workdir=workdir))
            bottle, registration, created, owned = services.bottle_vinculate(reach=reach, directory=None)
        except PillboxError as exc:
            raise CommandError(texts.error(exc)) from None
        self.stdout.write(texts.bottle_linked(bottle, registration.db_path, created, owned=owned))

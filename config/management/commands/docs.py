"""`manage.py docs --write | --check`: regenerate docs/tools.md and docs/rest-api.md (and the stdio servers'
mcp_bridge/definitions.json) from the code, or fail when they are stale (CI runs the check through the test
suite)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

DEFINITIONS = "mcp_bridge/definitions.json"


class Command(BaseCommand):
    help = "Regenerate (--write) or verify (--check) the generated reference pages in docs/."

    def add_arguments(self, parser: CommandParser) -> None:
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--write", action="store_true", help=f"write the pages and {DEFINITIONS}")
        group.add_argument("--check", action="store_true", help="exit 1 when a generated page is out of date")
        group.add_argument("--session", action="store_true", help="(internal) run the example session, print JSON")

    def handle(self, *args: object, write: bool, check: bool, session: bool, **options: object) -> None:
        from config import docs, installed
        from mcp_bridge import definitions

        if installed.checkout() is None:
            raise CommandError("docs regenerates a checkout's docs/ and mcp_bridge/definitions.json: run it from a "
                               "checkout of the project (an installed package has no docs/ to write).")
        if session:
            self.stdout.write(json.dumps(docs.run_session(), ensure_ascii=False))
            return
        rendered = docs.render_all()
        tools = docs.render_definitions()
        if check:
            outdated = [f"docs/{name}" for name in docs.stale(rendered)]
            if not definitions.FILE.is_file() or definitions.FILE.read_text(encoding="utf-8") != tools:
                outdated.append(DEFINITIONS)
            if outdated:
                raise CommandError(f"{', '.join(outdated)} out of date: run "
                                   "`.venv/bin/python manage.py docs --write`.")
            self.stdout.write("docs/ is up to date.")
            return
        for name, text in rendered.items():
            (docs.DOCS / name).write_text(text)
        definitions.FILE.write_text(tools, encoding="utf-8")
        self.stdout.write(f"Wrote docs/{', docs/'.join(rendered)}, {DEFINITIONS}.")

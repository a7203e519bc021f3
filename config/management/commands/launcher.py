"""`manage.py launcher`: put a `pillbox-todos` launcher (the command that runs this copy) in ~/.local/bin.

A project's shared MCP configuration (`connect CLIENT --scope project`) runs the servers and the memory hook by
that name. An installed package has it already (its console script); a checkout runs this once; with PILLBOX_HOME
set (or a site served by `up` from another data directory) the launcher carries it.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from config import connect, installed, sites


class Command(BaseCommand):
    help = (f"Write ~/.local/bin/{connect.LAUNCHER}, which runs this checkout's manage.py: the command a project's "
            "shared MCP configuration (connect --scope project) names (an installed package has it already).")

    def handle(self, *args: object, **options: object) -> None:
        if installed.on_path():
            self.stdout.write(f"{connect.LAUNCHER} on your PATH is this copy's own command ({installed.script()}): "
                              "nothing to write.")
            return
        home = Path.home()
        data_home, note = sites.servers_home(home)
        if note:
            self.stderr.write(note)
        try:
            path, changed, saved = connect.install_launcher(home, data_home)
        except connect.ConnectError as exc:
            raise CommandError(str(exc)) from None
        kept = f" (the file that was there, not ours, is kept as {saved})" if saved else ""
        self.stdout.write(f"{'Wrote' if changed else 'Already there:'} {path}{kept}")
        if not connect.launcher_on_path(home):
            self.stderr.write(f"warning: {path.parent} is not on your PATH (or another {connect.LAUNCHER} comes "
                              "first): add it, or the clients will not find the servers.")

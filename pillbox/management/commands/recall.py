"""`manage.py recall [--user NAME] [--budget CHARS]`: this directory's memory, for a session that is starting.

Prints what an agent would read first, within a size budget: ``bottle_context`` of the working directory's
bottle, then pills chosen from the whole bottle (lasting ones, recent and often-read ones, at least one from each
recent session) and the user's capsules; the last line says what was left out and which tool shows it.
Claude Code runs it as a SessionStart hook (``manage.py connect claude-code --hooks``) and puts what it prints
into the new session's context. A hook must never stand in the way of a session: any failure prints one line and
exits 0, and so does a read that passes ``PILLBOX_RECALL_SECONDS``.

A memory the user's Pillbox did not make here and the user did not adopt (one committed in a cloned repository:
pillbox.origin) is never printed: one line says it is there, how many pills it holds and how to adopt it.
"""

from __future__ import annotations

import getpass
import logging
import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

logger = logging.getLogger("pillbox")

DEFAULT_BUDGET = 6000
PRESCRIPTIONS = 10
RECENT = 400  # newest pills weighed for a session start
POPULAR = 100  # and the most read among the older ones
CAPSULES = 100


def missing_home() -> str:
    """The one line to print when the data directory does not exist, else ''. A hook never creates one (a
    mistyped PILLBOX_HOME would get a new, empty database): manage.py asks this before the settings, which make
    the directory, are read."""
    home = Path(os.environ.get("PILLBOX_HOME") or Path.home() / ".pillbox").expanduser()
    if home.is_dir():
        return ""
    return f"Pillbox: no data directory at {home} (is PILLBOX_HOME right?); nothing to recall, nothing created."


def fit(text: str, budget: int, more: str) -> str:
    """``text`` cut between records (else between lines) to at most ``budget`` characters, saying where the rest
    is; a record is never shown in part when a whole one fits."""
    if len(text) <= budget:
        return text
    room = max(budget - len(more) - 2, 0)
    cut = text.rfind("\n\n", 0, room)
    if cut <= 0:
        cut = text.rfind("\n", 0, room)
    return (text[:cut] + "\n\n" if cut > 0 else "") + more


class Command(BaseCommand):
    help = ("Print the Pillbox memory of the current directory's bottle (its sessions, the pills that matter most "
            "across them, and your capsules) within a size budget; used as a Claude Code SessionStart hook.")
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="the local user (default: $PILLBOX_USER, else the login name)")
        parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="most characters to print")

    def handle(self, *args: object, user: str | None, budget: int, **options: object) -> None:
        from django.conf import settings

        from pillbox import deadlines

        seconds = settings.PILLBOX_RECALL_SECONDS
        try:
            with deadlines.overall(seconds):
                text = self.recall(user or os.environ.get("PILLBOX_USER") or getpass.getuser(), Path.cwd(), budget)
        except Exception as exc:  # a broken hook would greet every session with a trace
            if deadlines.interrupted(exc) or isinstance(exc, deadlines.ReadStopped):
                logger.warning("recall gave up after %g s: %s", seconds, exc)
                text = (f"Pillbox: gave up reading the memory of this directory after {seconds:g} s "
                        "(PILLBOX_RECALL_SECONDS); nothing of it is shown. Look at its .pillbox/pillbox.db.")
            else:
                logger.exception("recall failed")
                text = "Pillbox: the memory of this directory could not be read (see the server log)."
        self.stdout.write(text)

    def recall(self, username: str, workdir: Path, budget: int) -> str:
        from accounts.services import user_get_or_create
        from base.bootstrap import ensure_global_db
        from mcp_bridge.tools import Caller
        from pillbox import selectors, session_start, texts
        from pillbox.access import reach_for
        from pillbox.ids import short
        from pillbox.models import Bottle, OwnedFile
        from pillbox.shaping import one_line

        ensure_global_db()
        caller = Caller(user=user_get_or_create(username=username), transport="stdio", workdir=workdir)
        reach = reach_for(caller)
        if reach.foreign is not None:
            return session_start.foreign_line(reach.foreign)
        if reach.unreadable is not None:
            return f"Pillbox: the memory of this directory is not read. {one_line(reach.unreadable.message, 1000)}"
        bottle = None
        if reach.current_path is not None:
            mine = reach.bottles_in(reach.current)
            bottle = Bottle.objects.using(reach.current).filter(id__in=mine).order_by("id").first()
        memory = selectors.session_memory(reach=reach, alias=reach.current, bottle=bottle, recent=RECENT,
                                          popular=POPULAR, capsules=CAPSULES)
        if reach.current_path is None:
            header = ("Pillbox: no bottle for this directory yet. bottle_create makes one (memory kept next to the "
                      "code); bottle_list shows the others.")
            return session_start.render(header=header, sessions="", memory=memory, budget=budget)
        if bottle is None:
            header = "Pillbox: this directory's bottle is not in your registry; bottle_vinculate links it."
            return session_start.render(header=header, sessions="", memory=memory, budget=budget)
        # Where the file really is, not the directory a copied or crafted file claims.
        project = one_line(str(reach.current_path.parent.parent), 4096)
        label = ""
        if reach.owned is not None and reach.owned.origin == OwnedFile.ADOPTED:
            label = (f" (adopted {reach.owned.recorded_at:%Y-%m-%d}: written elsewhere, not by your Pillbox; its "
                     f"bottle named {one_line(reach.owned.claimed_directory, 300) or 'no directory'})")
        header = (f"Pillbox memory of this directory{label}: bottle {one_line(bottle.name)} ({short(bottle.id)}), "
                  f"{project}\n\n# bottle_context\n")
        context = selectors.bottle_context(reach=reach, bottle_id=bottle.id.hex, limit=PRESCRIPTIONS)
        sessions = fit(texts.bottle_context(context), budget // 3, "… (more with bottle_context)")
        return session_start.render(header=header, sessions=sessions, memory=memory, budget=budget)

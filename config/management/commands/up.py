"""`manage.py up [ADDR:PORT]`: the README's one command after installing: migrate, make the first user, serve.

The first user is the operating-system login (or PILLBOX_USER), the same user the stdio servers run as, made
staff so the person sees in the browser the memory their local agents wrote. Credentials are printed once,
when they are made; what to do next is printed every time.

The address it listens on is the site's address (links, OAuth metadata) unless SITE_URL says otherwise; it is
also written to PILLBOX_HOME/site_url so the stdio servers' links point at the same place.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

DEFAULT_ADDRPORT = "127.0.0.1:8000"
# What runserver accepts: "PORT", "ADDR:PORT", "[IPv6]:PORT".
ADDRPORT = re.compile(r"^(?:(?P<addr>\[[0-9a-fA-F:.]+\]|[\w.-]+):)?(?P<port>\d{1,5})$")
ALL_INTERFACES = {"0", "0.0.0.0", "[::]"}


def listening_url(addrport: str) -> str:
    match = ADDRPORT.match(addrport)
    if match is None:
        raise CommandError(f"{addrport!r} is not an address to listen on; give PORT or ADDR:PORT, e.g. 127.0.0.1:8101")
    addr = match["addr"] or "127.0.0.1"
    if addr in ALL_INTERFACES:  # reachable from this machine by loopback; others need SITE_URL
        addr = "127.0.0.1"
    return f"http://{addr}:{int(match['port'])}"


def adopt_site_url(url: str) -> None:
    """Make ``url`` the site's address in this process: everything settings derived from SITE_URL follows."""
    from oauth2_provider.settings import oauth2_settings

    host = urlsplit(url).hostname
    settings.SITE_URL = url
    settings.CSRF_TRUSTED_ORIGINS = [url]
    if host and host not in settings.ALLOWED_HOSTS and "*" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, host]
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": url}
    oauth2_settings.reload()


def _same_place(first: str, second: str) -> bool:
    a, b = urlsplit(first), urlsplit(second)
    return (a.hostname, a.port or 80) == (b.hostname, b.port or 80)


class Command(BaseCommand):
    help = ("Migrate the global database, make the local login the first staff user, and run the site on ADDR:PORT "
            f"(default {DEFAULT_ADDRPORT}), which becomes the site's address unless SITE_URL is set.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default=DEFAULT_ADDRPORT, help="PORT or ADDR:PORT to listen on")
        parser.add_argument("--no-serve", action="store_true", help="set up only; do not start the server")

    def handle(self, *args: object, addrport: str, no_serve: bool, **options: object) -> None:
        from accounts.models import ApiKey
        from accounts.services import account_for, apikey_create, user_get_or_create
        from config.bootstrap import ensure_global_db
        from pillbox import original

        listening = listening_url(addrport)
        notes = []
        if os.environ.get("SITE_URL"):
            if not _same_place(settings.SITE_URL, listening):
                notes.append(f"warning: SITE_URL is {settings.SITE_URL} but this server listens on {listening}: "
                             "links and OAuth metadata name SITE_URL, so it must reach this server (a proxy in "
                             "front), or unset SITE_URL.")
        else:
            adopt_site_url(listening)
            Path(settings.SITE_URL_FILE).write_text(listening + "\n")
        # listening_url above refused an addrport the pattern does not match.
        if (ADDRPORT.match(addrport)["addr"] or "") in ALL_INTERFACES:  # type: ignore[index]
            notes.append("note: listening on every interface; for other machines set SITE_URL (and ALLOWED_HOSTS) "
                         "to the address they use.")

        ensure_global_db()
        username = os.environ.get("PILLBOX_USER") or getpass.getuser()
        user = user_get_or_create(username=username, staff=True)
        site = settings.SITE_URL
        lines = [f"Pillbox & Todos on {site} (data in {settings.PILLBOX_HOME})", *notes, f"user: {username}"]
        # The stdio servers may have made this user first, as a plain user: the person at the machine runs it.
        user.is_staff = user.is_superuser = True
        if not user.has_usable_password():
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            lines.append(f"password: {password}   (shown once; change it with manage.py changepassword {username})")
        user.save()
        # The person at the machine: the original Pillbox's memory in their home becomes theirs (once).
        with original.announcements() as news:
            original.import_home(user)
        lines += news.lines()
        lines.append(f"uid: {account_for(user).uid}")
        if not ApiKey.objects.alive().filter(user=user).exists():
            _, key = apikey_create(user=user, name="first key")
            lines.append(f"key: {key}   (shown once; make more with manage.py createkey {username})")
        lines += ["", *next_steps(site, username)]
        self.stdout.write("\n".join(lines))
        if not no_serve:
            call_command("runserver", addrport, use_reloader=False)


def next_steps(site: str, username: str) -> list[str]:
    python, manage = sys.executable, str(Path(settings.BASE_DIR) / "manage.py")
    return [
        "Next steps:",
        f"  1. Sign in at {site}/accounts/login/ as {username} (the password above; forgot it? "
        f"{python} {manage} changepassword {username}). Add people with: manage.py adduser NAME",
        "  2. Connect Claude Code to both servers, from inside your project:",
        f"       {python} {manage} connect claude-code --write",
        "     which runs the equivalent of:",
        f"       claude mcp add pillbox -- {python} {manage} mcp pillbox",
        f"       claude mcp add todos -- {python} {manage} mcp todos",
        f"     Other clients, HTTP and the memory hook: {python} {manage} connect --help",
        f"  3. Docs: {Path(settings.BASE_DIR) / 'docs' / 'README.md'} (tools, errors, connecting); "
        f"the REST API at {site}/api/docs/",
    ]

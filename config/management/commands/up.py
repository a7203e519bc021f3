"""`pillbox-todos up [ADDR:PORT]`: the README's one command after installing: migrate, make the first user, serve.

It is the server for one machine (Django's development server, for the person at it); a site for a team runs
under granian or gunicorn (the README's Production, docs/deploy.md).

The first user is the operating-system login (or PILLBOX_USER), the same user the stdio servers run as, made
staff so the person sees in the browser the memory their local agents wrote. Credentials are printed once,
when they are made; what to do next is printed every time.

The address it listens on is the site's address (links, OAuth metadata) unless SITE_URL says otherwise; it is
also written to PILLBOX_HOME/site_url so the stdio servers' links point at the same place.
"""

from __future__ import annotations

import errno
import getpass
import os
import re
import secrets
import socket
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from config import installed
from config.connect import claude_code_commands, stdio_servers
from config.sites import default_home, write_site_record

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
            f"(default {DEFAULT_ADDRPORT}), which becomes the site's address unless SITE_URL is set. The server "
            "for one machine; for a team's site see the README's Production.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default=DEFAULT_ADDRPORT, help="PORT or ADDR:PORT to listen on")
        parser.add_argument("--no-serve", action="store_true", help="set up only; do not start the server")

    def handle(self, *args: object, addrport: str, no_serve: bool, **options: object) -> None:
        from accounts.models import ApiKey
        from accounts.services import account_for, apikey_create, user_get_or_create
        from base.bootstrap import ensure_global_db
        from pillbox.original.home import import_home
        from pillbox.original.news import announcements

        listening = listening_url(addrport)
        if not no_serve:
            refuse_busy_port(addrport)  # before anything is printed or written
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
        lines = [f"Pillbox & Todos on {site} ({data_place()})", *notes, f"user: {username}"]
        # The stdio servers may have made this user first, as a plain user: the person at the machine runs it.
        user.is_staff = user.is_superuser = True
        shown = not user.has_usable_password()
        if shown:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            lines.append(f"password: {password}   (shown once; change it with {installed.shown()} changepassword "
                         f"{username})")
        user.save()
        # What `connect` reads to give the agent's servers the data directory this site serves.
        write_site_record(Path.home(), home=str(settings.PILLBOX_HOME), url=site)
        # The person at the machine: the original Pillbox's memory in their home becomes theirs (once).
        with announcements() as news:
            import_home(user)
        lines += news.lines()
        lines.append(f"uid: {account_for(user).uid}")
        if not ApiKey.objects.alive().filter(user=user).exists():
            _, key = apikey_create(user=user, name="first key")
            lines.append(f"key: {key}   (shown once; make more with {installed.shown()} createkey {username})")
        lines += ["", *next_steps(site, username, password_shown=shown)]
        self.stdout.write("\n".join(lines))
        if not no_serve:
            call_command("runserver", addrport, use_reloader=False)


def refuse_busy_port(addrport: str) -> None:
    """Exit before the banner when runserver could not listen: bind as it does (address reuse on, as
    socketserver sets it), then let go."""
    match = ADDRPORT.match(addrport)
    assert match is not None  # listening_url refused the rest
    addr, port = (match["addr"] or "127.0.0.1").strip("[]"), int(match["port"])
    try:
        family, kind, proto, _, place = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise CommandError(f"Cannot listen on {addrport}: {exc.strerror}.") from None
    with socket.socket(family, kind, proto) as probe:
        if os.name != "nt":
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(place)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(f"Port {port} on {addr} is already in use (another `up`?): stop that server, "
                                   "or give another port, e.g. `up 127.0.0.1:8101`.") from None
            raise CommandError(f"Cannot listen on {addrport}: {exc.strerror}.") from None


def data_place() -> str:
    """Where this site's records are, in a few words for the banner."""
    if not os.environ.get("DATABASE_URL"):
        return f"data in {settings.PILLBOX_HOME}"
    database = settings.DATABASES["default"]
    where = f" on {database['HOST']}" if database.get("HOST") else ""
    return f"data in the {connection.vendor} database {database['NAME']}{where}; settings in {settings.PILLBOX_HOME}"


def next_steps(site: str, username: str, *, password_shown: bool = True) -> list[str]:
    run = installed.shown()
    home = str(settings.PILLBOX_HOME)
    servers = stdio_servers(None, None if Path(home) == default_home(Path.home()) else home)
    password = "the password above" if password_shown else "your password"
    docs = Path(settings.BASE_DIR) / "docs" / "README.md"
    where = str(docs) if docs.is_file() else "docs/README.md in the project's source"
    return [
        "Next steps:",
        f"  1. Sign in at {site}/accounts/login/ as {username} ({password}; forgot it? "
        f"{run} changepassword {username}). Add people with: {run} adduser NAME",
        "  2. Connect Claude Code to both servers, with the memory hook, from inside your project:",
        f"       {run} connect claude-code --write --hooks",
        "     which does, for you in that project only (nothing it writes is committed):",
        *(f"       {command}" for command in claude_code_commands(servers, "local")),
        "       and adds a SessionStart hook (recall) to .claude/settings.local.json",
        "     A file for the whole team: add --scope project. Other clients and HTTP: connect --help",
        f"  3. Docs: {where} (tools, errors, connecting); the REST API at {site}/api/docs/",
        f"  The pages and the links agents hand out (get_list_url) open only while this site runs at {site}.",
        "  This is the server for one machine (Django's development server); for a team's site, see Production",
        "  in the README (granian behind a proxy, PostgreSQL, Redis).",
    ]

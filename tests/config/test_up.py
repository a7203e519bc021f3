"""`manage.py up ADDR:PORT`: the listening address becomes the site's address everywhere (links, the 401's
resource_metadata, OAuth metadata, the stdio servers), SITE_URL still wins with a warning when they disagree,
and the next steps are printed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from tests.clients import ROOT
from todos.access import list_url


@pytest.fixture
def site_guard(settings, tmp_path, monkeypatch):
    """`up` changes the site's address in this process: let pytest-django put every derived setting back."""
    for name in ("SITE_URL", "CSRF_TRUSTED_ORIGINS", "ALLOWED_HOSTS", "OAUTH2_PROVIDER"):
        setattr(settings, name, getattr(settings, name))
    settings.SITE_URL_FILE = tmp_path / "site_url"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # up's record for connect is the person's own state
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("SITE_URL", raising=False)
    monkeypatch.setenv("PILLBOX_USER", "operator-person")
    yield settings
    from oauth2_provider.settings import oauth2_settings

    oauth2_settings.reload()


def up(*args: str) -> str:
    out = StringIO()
    call_command("up", *args, "--no-serve", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_listening_address_is_the_site_address(site_guard):
    printed = up("127.0.0.1:8101")
    assert printed.startswith("Pillbox & Todos on http://127.0.0.1:8101 ")
    assert "warning" not in printed
    assert site_guard.SITE_URL_FILE.read_text().strip() == "http://127.0.0.1:8101"
    user = get_user_model().objects.get(username="operator-person")
    assert list_url(user=user).startswith("http://127.0.0.1:8101/list?t=")

    challenge = Client().post("/mcp", "{}", content_type="application/json")
    assert challenge.status_code == 401
    assert 'resource_metadata="http://127.0.0.1:8101/.well-known/oauth-protected-resource/mcp"' in \
        challenge.headers["WWW-Authenticate"]
    assert Client().get("/.well-known/oauth-authorization-server").json()["issuer"] == "http://127.0.0.1:8101"

    # The next steps: where to sign in, the one command per server for Claude Code, where the docs are.
    assert "Sign in at http://127.0.0.1:8101/accounts/login/ as operator-person (the password above;" in printed
    assert f"{ROOT / 'docs' / 'README.md'}" in printed and "http://127.0.0.1:8101/api/docs/" in printed
    assert (ROOT / "docs" / "README.md").is_file()

    # A second run (the password was shown once) still prints the next steps, and no "password above"; a bare
    # port works too.
    again = up("8102")
    assert "password:" not in again and "Next steps:" in again and "on http://127.0.0.1:8102 " in again
    assert "the password above" not in again and "(your password; forgot it?" in again


@pytest.mark.django_db
def test_the_next_steps_tell_the_story_connect_and_the_readme_tell(site_guard, tmp_path):
    """One story: `connect claude-code --write --hooks`, whose `claude mcp add` lines (local scope, this site's
    data directory) are the ones `connect claude-code` itself prints, and the README's command."""
    printed = up("127.0.0.1:8101")
    assert f"{sys.executable} {ROOT / 'manage.py'} connect claude-code --write --hooks\n" in printed
    out = StringIO()
    (tmp_path / "proj").mkdir()
    call_command("connect", "claude-code", "--project", str(tmp_path / "proj"), stdout=out, stderr=StringIO())
    commands = out.getvalue().split("# or run:\n")[1].splitlines()
    assert commands and all(command.startswith("claude mcp add --scope local --env PILLBOX_HOME=")
                            for command in commands)
    for command in commands:
        assert f"       {command}\n" in printed
    readme = (ROOT / "README.md").read_text()
    assert "manage.py connect claude-code --write --hooks" in readme


@pytest.mark.django_db
def test_with_a_database_url_the_banner_names_the_database(site_guard, monkeypatch, settings):
    monkeypatch.setenv("DATABASE_URL", "postgres://db.internal/pillbox")
    first = up("127.0.0.1:8101").splitlines()[0]
    assert f"data in {settings.PILLBOX_HOME})" not in first and " database " in first


def test_a_busy_port_stops_up_before_any_banner(tmp_path):
    """Nothing is printed (or written) when the port is taken: one error line, a non-zero exit."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PILLBOX_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "PILLBOX_USER": "x"}
        env.pop("SITE_URL", None)
        done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "up", f"127.0.0.1:{port}"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"CommandError: Port {port} on 127.0.0.1 is already in use "
                                                "(another `up`?): stop that server, or give another port, e.g. "
                                                "`up 127.0.0.1:8101`."]
    assert not (tmp_path / "home" / "site_url").exists()


def test_the_hook_with_a_missing_home_creates_nothing(tmp_path):
    """A mistyped PILLBOX_HOME in the hook: one line, exit 0, and no directory or database anywhere."""
    env = {**os.environ, "PILLBOX_HOME": str(tmp_path / "typo" / "home"), "HOME": str(tmp_path / "h")}
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "recall"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [f"Pillbox: no data directory at {tmp_path / 'typo' / 'home'} (is "
                                        "PILLBOX_HOME right?); nothing to recall, nothing created."]
    assert sorted(path.name for path in tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_site_url_wins_and_a_disagreement_is_said(site_guard, monkeypatch):
    monkeypatch.setenv("SITE_URL", "https://pillbox.example.com")
    site_guard.SITE_URL = "https://pillbox.example.com"
    printed = up("127.0.0.1:8101")
    assert printed.startswith("Pillbox & Todos on https://pillbox.example.com ")
    assert "warning: SITE_URL is https://pillbox.example.com but this server listens on http://127.0.0.1:8101" \
        in printed
    assert not site_guard.SITE_URL_FILE.exists()
    with pytest.raises(CommandError, match="not an address"):
        up("localhost:http")


def test_stdio_processes_read_the_address_up_served_on(tmp_path):
    (tmp_path / "site_url").write_text("http://127.0.0.1:8101\n")
    env = {**os.environ, "PILLBOX_HOME": str(tmp_path)}
    env.pop("SITE_URL", None)
    shown = subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; "
         "django.setup(); from django.conf import settings; print(settings.SITE_URL)"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    assert shown.stdout.strip() == "http://127.0.0.1:8101"

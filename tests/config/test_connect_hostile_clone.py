"""`connect --write` in a repository someone else wrote: links it committed are never followed out of it, a file
that is no file is refused without hanging, and every file we write is made fresh and renamed into place."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.config.test_connect import backups, connect, git

PAYLOAD = '"$(touch {marker})" = 1\n'  # valid TOML, and a shell line once it runs as a script


def hostile_clone(project: Path, marker: Path) -> None:
    """What `git clone` of an attacker's repository gives: a committed config and a committed link beside it."""
    git(project, "init", "-q")
    git(project, "config", "user.email", "a@example.com")
    git(project, "config", "user.name", "a")
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text(PAYLOAD.format(marker=marker))
    os.symlink("../.git/hooks/post-commit", project / ".codex" / "config.toml.tmp")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "init")


def test_a_committed_tmp_link_cannot_plant_a_git_hook(places, tmp_path):
    """The hole: `.codex/config.toml.tmp -> ../.git/hooks/post-commit` turned the merged file into an executable
    hook that ran at the next commit. Now the link is never written through and no hook appears."""
    home, project = places
    marker = tmp_path / "pwned"
    hostile_clone(project, marker)
    said = connect("codex", "--scope", "project", "--write")
    assert "Wrote pillbox and todos" in said
    assert not (project / ".git" / "hooks" / "post-commit").exists()
    assert os.readlink(project / ".codex" / "config.toml.tmp") == "../.git/hooks/post-commit"  # left alone
    written = (project / ".codex" / "config.toml")
    assert "[mcp_servers.pillbox]" in written.read_text()
    assert not stat.S_IMODE(written.stat().st_mode) & 0o111  # never executable
    (project / "x").write_text("x")
    git(project, "add", "x")
    git(project, "commit", "-q", "-m", "next")
    assert not marker.exists()


def test_a_tmp_link_to_a_file_outside_the_repository_leaves_it_untouched(places, tmp_path):
    home, project = places
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    (project / ".claude").mkdir()
    os.symlink(outside, project / ".claude" / "settings.local.json.tmp")
    os.symlink(outside, project / ".claude" / "settings.json.tmp")
    connect("claude-code", "--write", "--hooks")
    connect("claude-code", "--write", "--hooks", "--scope", "project")
    assert outside.read_text() == "mine\n"
    hook = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert hook["hooks"]["SessionStart"]
    assert not [name for name in os.listdir(project / ".claude") if name.startswith(".settings")]  # no leftovers


@pytest.mark.parametrize("client,relative", [("claude-code", ".mcp.json"), ("cursor", ".cursor/mcp.json"),
                                             ("codex", ".codex/config.toml"), ("vscode", ".vscode/mcp.json")])
def test_a_target_that_is_a_link_is_refused_and_nothing_changes(places, tmp_path, client, relative):
    home, project = places
    outside = tmp_path / "outside.json"
    outside.write_text("{}\n")
    target = project / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, target)
    with pytest.raises(CommandError, match="is a symbolic link"):
        connect(client, "--scope", "project", "--write")
    assert outside.read_text() == "{}\n" and target.is_symlink()


def test_a_directory_that_is_a_link_is_refused(places, tmp_path):
    home, project = places
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, project / ".cursor")
    with pytest.raises(CommandError, match=r"\.cursor is a symbolic link"):
        connect("cursor", "--scope", "project", "--write")
    assert list(elsewhere.iterdir()) == []


def test_a_fifo_is_refused_rather_than_read_forever(places):
    home, project = places
    os.mkfifo(project / ".mcp.json")
    with pytest.raises(CommandError, match="not a regular file"):
        connect("claude-code", "--scope", "project", "--write")


def test_a_link_in_the_home_is_followed_only_within_the_home(places, tmp_path):
    """Dotfiles linked from a repository of one's own in the home are kept working, and the command says it
    followed the link; a link leading out of the home is refused."""
    home, project = places
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_text('{"keep": 1}')
    os.symlink(dotfiles / "claude.json", home / ".claude.json")
    err = StringIO()
    connect("claude-code", "--write", stderr=err)
    assert "followed it to" in err.getvalue()
    assert (home / ".claude.json").is_symlink()
    assert json.loads((dotfiles / "claude.json").read_text())["keep"] == 1
    assert "pillbox" in json.loads((dotfiles / "claude.json").read_text())["projects"][str(project)]["mcpServers"]

    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    os.symlink(outside, home / ".cursor")  # a file where a directory should be, out of the home
    with pytest.raises(CommandError, match="outside"):
        connect("cursor", "--write")
    assert outside.read_text() == "{}"


def test_no_backup_when_nothing_changes_and_only_the_last_few_kept(places):
    home, project = places
    (home / ".claude.json").write_text('{"keep": 1}')
    for _ in range(4):
        said = connect("claude-code", "--write")
    assert "nothing was changed" in said
    assert len(backups(home / ".claude.json")) == 1
    for number in range(5):  # the file changes each time: a backup each time, the last three kept
        (home / ".claude.json").write_text(json.dumps({"keep": number}))
        connect("claude-code", "--write")
    kept = backups(home / ".claude.json")
    assert len(kept) == 3
    assert [json.loads(path.read_text())["keep"] for path in kept] == [2, 3, 4]
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in kept)


def test_the_launcher_keeps_a_file_of_the_same_name_that_is_not_ours(places):
    home, project = places
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "pillbox-todos").write_text("#!/bin/sh\necho someone else's\n")
    out = StringIO()
    call_command("launcher", stdout=out, stderr=StringIO())
    assert "not ours, is kept as" in out.getvalue()
    [saved] = backups(bin_dir / "pillbox-todos")
    assert saved.read_text() == "#!/bin/sh\necho someone else's\n"
    out = StringIO()
    call_command("launcher", stdout=out, stderr=StringIO())  # ours now: nothing kept, nothing written
    assert "Already there" in out.getvalue() and len(backups(bin_dir / "pillbox-todos")) == 1
    assert subprocess.run([bin_dir / "pillbox-todos", "help"], capture_output=True).returncode == 0

"""Crash safety: a stdio server killed with SIGKILL while writes are in flight leaves both databases intact
(``PRAGMA integrity_check`` is ``ok``), keeps every write it acknowledged before dying, and the next server
writes on as if nothing happened.

The client pipelines requests, so at the moment of the kill the server is mid-way through more writes; an id
counts as acknowledged once its answer was read (the agent saw it)."""

from __future__ import annotations

import re
import signal
import sqlite3
from pathlib import Path

from tests.reliability.helpers import StdioServer, reply_of

AUTHOR = {"author_name": "Ada", "author_email": "ada@example.com"}
IN_FLIGHT = 8


def _short(text: str) -> str:
    match = re.search(r"^id: ([0-9a-f]{12})$", text, re.M)
    assert match, text
    return match.group(1)


def _ids(db: Path, table: str) -> set[str]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {row[0].replace("-", "")[:12] for row in conn.execute(f"SELECT id FROM pillbox_{table}")}


def _write_until_killed(
    home: Path, project: Path, prescription: str, round_: int, kill_after: int, acknowledged: dict[str, set[str]]
) -> None:
    """Keep IN_FLIGHT writes queued; after ``kill_after`` answers, SIGKILL the server with writes in flight."""
    server = StdioServer("pillbox", home=home, cwd=project, user="alice")
    pending: dict[int, str] = {}
    sent = 0

    def send() -> None:
        nonlocal sent
        if sent % 3 == 2:
            arguments = {"title": f"c{round_}-{sent}", "content": "x" * 2000, "compound": "crash"}
            pending[server.request_tool("capsule_store", arguments)] = "capsule"
        else:
            arguments = {
                "prescription_id": prescription,
                "title": f"p{sent}",
                "content": "y" * 4000,
                "compound": "crash",
                **AUTHOR,
            }
            pending[server.request_tool("pill_store", arguments)] = "pill"
        sent += 1

    try:
        for _ in range(IN_FLIGHT):
            send()
        for _ in range(kill_after):
            message = server.receive()
            reply = reply_of(message)
            assert not reply.is_error, reply.text
            acknowledged[pending.pop(message["id"])].add(_short(reply.text))
            send()
        server.process.send_signal(signal.SIGKILL)  # IN_FLIGHT writes are queued or running right now
        assert server.process.wait(timeout=10) == -signal.SIGKILL
    finally:
        server.close()


def test_sigkill_mid_write_loses_no_acknowledged_write(tmp_path):
    home, project = tmp_path / "home", tmp_path / "home" / "project"
    project.mkdir(parents=True)
    setup = StdioServer("pillbox", home=home, cwd=project, user="alice")
    try:
        bottle = _short(setup.call("bottle_create", {"name": "crash", "display_name": "Crash"}).text)
        prescription = _short(setup.call("prescription_open", {"bottle_id": bottle, "title": "Doomed", **AUTHOR}).text)
    finally:
        setup.close()

    acknowledged: dict[str, set[str]] = {"pill": set(), "capsule": set()}
    # Killed early, mid-way and late; each server starts on the files the previous one died writing.
    for round_, kill_after in enumerate((1, 37, 150)):
        _write_until_killed(home, project, prescription, round_, kill_after, acknowledged)
        assert acknowledged["pill"] <= _ids(project / ".pillbox" / "pillbox.db", "pill")
        assert acknowledged["capsule"] <= _ids(home / ".pillbox" / "pillbox.db", "capsule")

    survivor = StdioServer("pillbox", home=home, cwd=project, user="alice")
    try:
        after = survivor.call(
            "pill_store",
            {"prescription_id": prescription, "title": "after", "content": "ok", "compound": "crash", **AUTHOR},
        )
        assert not after.is_error, after.text
        listed = survivor.call("prescription_context", {"prescription_id": prescription, "limit": 1})
        assert "after" in listed.text
    finally:
        survivor.close()

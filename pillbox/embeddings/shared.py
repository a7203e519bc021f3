"""One bundled model per machine: a small process holds it, and every server of the same user asks it.

Each agent window starts its own stdio server; each would load its own onnxruntime, tokenizer and int8 weights
(about 70 MB apiece), so five open projects held five copies. The first server that needs meaning starts
``python -m pillbox.embeddings.shared`` detached; it loads the model once and answers on a Unix socket in a
directory only its user can enter. Servers keep one connection open for their life; the process leaves
``EMBEDDINGS_SHARED_IDLE`` seconds (600) after its last connection closed, so it goes soon after the last
window. It serves the pinned model only, and only its own user (the directory's mode and the peer's uid).

A request is ``E``, a 4-byte length and a JSON list of texts; the answer ``V``, a length and the unit float32
vectors (row after row), or ``X``, a length and a message. Vectors are the bundled model's own, computed in the
same batches, so a server gets what it would have computed itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from base.memory import release_memory
from base.private import private_dir
from pillbox.embeddings.embedders import BundledModel, ModelIntegrityError

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

PROTOCOL = 1  # in the socket's name: a server never talks to a process of another protocol or model
IDLE_SECONDS = 600.0
START_WAIT = 180.0  # the first process on a machine may spend tens of seconds making the int8 file
MAX_REQUEST = 8 * 1024 * 1024
MAX_TEXTS = 256
ALREADY_SERVING = 3  # exit status: another process holds the lock (and serves, or is about to)
INTEGRITY_FAILED = 2
HEADER = struct.Struct(">cI")
OFF = ("off", "0", "false", "no")


def enabled() -> bool:
    """Whether servers share one model process (``EMBEDDINGS_SHARED``, on by default where Unix sockets are)."""
    wanted = os.environ.get("EMBEDDINGS_SHARED", "on").strip().lower() not in OFF
    return wanted and os.name == "posix" and hasattr(socket, "AF_UNIX")


def _idle() -> float:
    try:
        return max(0.0, float(os.environ.get("EMBEDDINGS_SHARED_IDLE", "") or IDLE_SECONDS))
    except ValueError:
        return IDLE_SECONDS


def _owned_private_dir(path: Path) -> Path:
    """``path`` as a directory of ours that no one else may enter (made, or narrowed); OSError when it is a link
    or someone else's: the socket a server would talk to must be one only its user can have put there."""
    private_dir(path)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        why = "it is a link or a file, not a directory"
    elif info.st_uid != os.geteuid():
        why = (f"it belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}): another local user made it "
               "first")
    elif stat.S_IMODE(info.st_mode) & 0o077:
        why = f"others may enter it (mode {stat.S_IMODE(info.st_mode):o}) and it could not be narrowed"
    else:
        return path
    raise OSError(f"{path} is not a directory of this user's ({why}); set EMBEDDINGS_SOCKET_DIR to one of yours")


def socket_dir() -> Path:
    """``EMBEDDINGS_SOCKET_DIR``, else ``$XDG_RUNTIME_DIR/pillbox-todos``, else ``<tmp>/pillbox-todos-<uid>``."""
    configured = os.environ.get("EMBEDDINGS_SOCKET_DIR", "").strip()
    if configured:
        return _owned_private_dir(Path(configured))
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and Path(runtime).is_dir():
        return _owned_private_dir(Path(runtime) / "pillbox-todos")
    return _owned_private_dir(Path(tempfile.gettempdir()) / f"pillbox-todos-{os.geteuid()}")


def socket_path(model_key: str, model_digest: str) -> Path:
    tag = hashlib.sha256(f"{PROTOCOL}:{model_key}:{model_digest}".encode()).hexdigest()[:12]
    return socket_dir() / f"embedder-{tag}.sock"


def _send(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(HEADER.pack(kind, len(payload)) + payload)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the shared embedding process closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _receive(sock: socket.socket, limit: int) -> tuple[bytes, bytes]:
    kind, size = HEADER.unpack(_receive_exactly(sock, HEADER.size))
    if size > limit:
        raise ValueError(f"a message of {size} bytes is over the limit of {limit}")
    return kind, _receive_exactly(sock, size)


def _peer_uid(sock: socket.socket) -> int:
    _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return int(uid)


# ---------------------------------------------------------------- a server's side


class SharedModel:
    """The bundled model, asked of the shared process (started when none answers)."""

    def __init__(self, *, key: str, digest: str, floor: float, model_dir: Path, cache: Path) -> None:
        self.key = key
        self.floor = floor
        self.model_dir, self.cache = model_dir, cache
        self.path = socket_path(key, digest)
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()  # one request at a time on the connection

    def connect(self) -> SharedModel:
        """Connect now (starting the process if needed): loading the embedder means this, in the background."""
        with self._lock:
            self._connected()
        return self

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        payload = json.dumps(list(texts)).encode()
        with self._lock:
            for attempt in (1, 2):  # once more after the process went away (killed, or left while we connected)
                sock = self._connected()
                try:
                    _send(sock, b"E", payload)
                    kind, body = _receive(sock, MAX_REQUEST)
                    break
                except (ConnectionError, OSError):
                    sock.close()
                    self._sock = None
                    if attempt == 2:
                        raise
        if kind != b"V":
            raise RuntimeError(f"the shared embedding process refused the texts: {body.decode(errors='replace')}")
        vectors = np.frombuffer(body, dtype=np.float32)
        return vectors.reshape(len(texts), -1) if len(texts) else vectors.reshape(0, 0)

    def _connected(self) -> socket.socket:
        if self._sock is None:
            self._sock = _connect(self.path) or self._start()
        return self._sock

    def _start(self) -> socket.socket:
        log = self.path.with_suffix(".log")
        with log.open("ab") as errors:
            os.chmod(log, 0o600)
            process = subprocess.Popen(
                [sys.executable, "-m", "pillbox.embeddings.shared", str(self.model_dir), str(self.cache),
                 str(self.path)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, cwd="/",
                env=_child_env(), start_new_session=True, close_fds=True)
        deadline = time.monotonic() + START_WAIT
        while True:
            sock = _connect(self.path)
            if sock is not None:
                return sock
            code = process.poll()
            if code is not None and code != ALREADY_SERVING:
                message = _last_line(log) or f"it exited with status {code}"
                if code == INTEGRITY_FAILED:
                    raise ModelIntegrityError(message)
                raise RuntimeError(f"the shared embedding process did not start: {message}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the shared embedding process did not answer within {START_WAIT:.0f} s")
            time.sleep(0.02)


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    if _peer_uid(sock) != os.geteuid():  # the directory is ours alone, so this is belt and braces
        sock.close()
        raise OSError(f"{path} is served by another user; the shared embedding process is not used")
    return sock


def _child_env() -> dict[str, str]:
    """The server's environment, with this checkout first on the path: the process runs the server's code."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


# ---------------------------------------------------------------- the shared process


class _Service:
    def __init__(self, model: BundledModel, listener: socket.socket) -> None:
        self.model = model
        self.listener = listener
        self.lock = threading.Lock()
        self.clients = 0
        self.last_left = time.monotonic()

    def run(self, idle: float) -> None:
        self.listener.settimeout(min(1.0, idle) if idle else 0.05)
        while True:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                with self.lock:
                    if self.clients == 0 and time.monotonic() - self.last_left >= idle:
                        return
                continue
            if _peer_uid(conn) != os.geteuid():
                conn.close()
                continue
            with self.lock:
                self.clients += 1
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                while True:
                    try:
                        kind, body = _receive(conn, MAX_REQUEST)
                    except (ConnectionError, OSError, ValueError, struct.error):
                        return
                    _send(conn, *self.answer(kind, body))
        except OSError:
            pass
        finally:
            with self.lock:
                self.clients -= 1
                self.last_left = time.monotonic()

    def answer(self, kind: bytes, body: bytes) -> tuple[bytes, bytes]:
        try:
            texts = json.loads(body) if kind == b"E" else None
        except ValueError:
            texts = None
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or len(texts) > MAX_TEXTS:
            return b"X", f"a request is a JSON list of at most {MAX_TEXTS} texts".encode()
        if not texts:
            return b"V", b""
        try:
            vectors = self.model.embed(texts)
        except Exception as exc:  # one bad batch must not end the process the other servers use
            return b"X", f"{type(exc).__name__}: {exc}".encode()
        finally:
            if len(texts) > 1:
                release_memory()  # a batch's activations are large; glibc would keep them
        return b"V", vectors.astype("float32").tobytes()


def serve(model_dir: Path, cache: Path, path: Path, *, idle: float) -> int:
    """Hold the lock, load the model, answer until idle; the exit status says why it stopped."""
    with path.with_suffix(".lock").open("a") as lock:
        deadline = time.monotonic() + 5.0  # a process that is leaving still holds it for a moment
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return ALREADY_SERVING
                time.sleep(0.05)
        try:
            model = BundledModel(model_dir, 0.0, cache)
        except ModelIntegrityError as exc:
            print(exc, file=sys.stderr, flush=True)
            return INTEGRITY_FAILED
        release_memory()
        path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)
        try:
            listener.bind(str(path))
        finally:
            os.umask(previous)
        listener.listen(64)
        try:
            _Service(model, listener).run(idle)
        finally:
            path.unlink(missing_ok=True)
            listener.close()
    return 0


def _one_heap() -> None:
    """One malloc arena for the process: each connection's thread would otherwise get its own, each keeping
    what the model's runs freed."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 1)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc
        pass


def main(argv: Sequence[str]) -> int:
    _one_heap()
    model_dir, cache, path = (Path(arg) for arg in argv)
    logging.basicConfig(level=logging.WARNING)
    return serve(model_dir, cache, path, idle=_idle())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

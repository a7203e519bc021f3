"""A WSGI application served over ASGI that sees a request only once its whole body has arrived.

Granian's WSGI interface (and gunicorn's threads) hand a request to a thread as soon as its headers are in, and
the thread then waits for the body as it comes: a client sending one byte every few seconds holds a thread as
long as it likes, and a few such clients hold them all. Here the event loop reads the body, where a waiting
connection costs no thread, under one deadline for the whole body (``body_timeout``, answered 408) and a size cap
(413); only complete requests reach the pool of ``threads`` that runs the application. Responses are streamed
back as the application yields them.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import IO, Any

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

IN_MEMORY = 1 << 20  # bodies larger than this wait on disk


class BufferedWsgi:
    def __init__(self, app: WsgiApp, *, threads: int, body_timeout: float, max_body: int) -> None:
        self.app = app
        self.body_timeout = body_timeout
        self.max_body = max_body
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wsgi")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "http":
            body = await self._body(scope, receive, send)
            if body is not None:
                with body:
                    await self._respond(scope, body, receive, send)

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> IO[bytes] | None:
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > self.max_body:
            await _plain(send, 413, f"The request body is larger than {self.max_body} bytes.")
            return None
        body: IO[bytes] = SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115  # closed by the caller or here
        size = 0
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":  # the client left
                        body.close()
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        body.close()
                        await _plain(send, 413, f"The request body is larger than {self.max_body} bytes.")
                        return None
                    body.write(chunk)
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            body.close()
            await _plain(send, 408, f"The request body did not arrive within {self.body_timeout:g} seconds.")
            return None
        body.seek(0)
        return body

    async def _respond(self, scope: Scope, body: IO[bytes], receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        # Sending to a client that left raises nothing: without this, an endless stream would keep its thread.
        left = threading.Event()
        watch = asyncio.create_task(_until_disconnect(receive, left))
        try:
            await loop.run_in_executor(self.pool, self._run, scope, body, loop, send, left)
        finally:
            watch.cancel()

    def _run(
        self, scope: Scope, body: IO[bytes], loop: asyncio.AbstractEventLoop, send: Send, left: threading.Event
    ) -> None:
        """In a pool thread: the application's answer, each message sent through the loop as it is made, until
        the client leaves."""

        def deliver(*messages: Message) -> None:
            if left.is_set():
                raise _ClientLeft
            asyncio.run_coroutine_threadsafe(_send_all(send, messages), loop).result()

        start: Message = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            start.update(
                type="http.response.start",
                status=int(status.split(" ", 1)[0]),
                headers=[(name.lower().encode("latin1"), value.encode("latin1")) for name, value in headers],
            )

        result = self.app(_environ(scope, body), start_response)
        try:
            length = next((int(v) for n, v in start.get("headers", ()) if n == b"content-length"), None)
            sent, started = 0, False
            for chunk in result:
                if not chunk:
                    continue
                sent += len(chunk)
                done = length is not None and sent >= length
                message = {"type": "http.response.body", "body": chunk, "more_body": not done}
                deliver(*([] if started else [start]), message)
                started = True
                if done:
                    return
            deliver(*([] if started else [start]), {"type": "http.response.body", "body": b""})
        except _ClientLeft:
            return
        finally:
            if hasattr(result, "close"):
                result.close()  # Django's request_finished: the database connections go back


class _ClientLeft(Exception):
    pass


async def _until_disconnect(receive: Receive, left: threading.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        continue
    left.set()


async def _send_all(send: Send, messages: tuple[Message, ...]) -> None:
    for message in messages:
        await send(message)


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _header(scope: Scope, name: bytes) -> str:
    return next((value.decode("latin1") for key, value in scope.get("headers", ()) if key.lower() == name), "")


def _environ(scope: Scope, body: IO[bytes]) -> dict[str, Any]:
    """PEP 3333's environ for an ASGI HTTP scope."""
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode().decode("latin1"),
        "PATH_INFO": scope["path"].encode().decode("latin1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": (scope.get("client") or ("", 0))[0],
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin1").upper().replace("-", "_")
        key = name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"
        value = raw_value.decode("latin1")
        if key in environ:
            value = f"{environ[key]}{'; ' if key == 'HTTP_COOKIE' else ','}{value}"
        environ[key] = value
    return environ

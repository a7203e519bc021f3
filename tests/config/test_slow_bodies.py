"""Hole 5 of the fourth round: slow request bodies stalled the production server.

Sixteen unauthenticated connections sending a ``POST /mcp`` body one byte at a time kept every thread of the
README's server waiting for the rest, and another user's call timed out. Now the server reads bodies before any
thread sees the request, under ``REQUEST_BODY_TIMEOUT``: the other user is answered at once, and the slow senders
get 408 when their time is up.
"""

from __future__ import annotations

import asyncio
import select
import socket
import subprocess
import sys
import threading
import time

from tests.clients import ROOT, http_client, run
from tests.config.test_production import _env, start_readme_server

SLOW_SENDERS = 16
BODY_TIMEOUT = 4  # seconds: short, so that the test is quick
PACE = 0.25  # seconds between two bytes of a slow sender


def _slow_sender(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 4096\r\n\r\n{")
    return sock


def _drip_until_answered(senders: list[socket.socket], *, until: float) -> dict[socket.socket, bytes]:
    """Send each sender's next byte every ``PACE`` seconds until the server answers or drops it (or ``until``)."""
    answers: dict[socket.socket, bytes] = {}
    while len(answers) < len(senders) and time.monotonic() < until:
        waiting = [sock for sock in senders if sock not in answers]
        readable, _, _ = select.select(waiting, [], [], PACE)
        for sock in readable:
            try:
                answers[sock] = sock.recv(4096)
            except ConnectionError:
                answers[sock] = b""
        for sock in waiting:
            if sock not in answers:
                try:
                    sock.sendall(b" ")
                except ConnectionError:
                    answers[sock] = b""
    return answers


def test_slow_bodies_cannot_hold_the_readmes_production_server(tmp_path):
    env = _env(tmp_path, DJANGO_DEBUG="false", ALLOWED_HOSTS="127.0.0.1", SITE_URL="http://127.0.0.1",
               REQUEST_BODY_TIMEOUT=str(BODY_TIMEOUT))
    made = subprocess.run([sys.executable, "manage.py", "createkey", "prod", "--create"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout
    key = made.split("key: ")[1].strip()
    server, port = start_readme_server(env)
    senders: list[socket.socket] = []

    async def another_users_call() -> object:
        async with http_client(f"http://127.0.0.1:{port}/mcp", key=key) as client:
            return await client.call_tool("get_list_usage", {})

    try:
        run(another_users_call())  # the site's first MCP call loads what every later one uses
        started = time.monotonic()
        senders = [_slow_sender(port) for _ in range(SLOW_SENDERS)]
        asked = time.monotonic()
        usage = run(asyncio.wait_for(another_users_call(), timeout=BODY_TIMEOUT * 3))
        answered_in = time.monotonic() - asked
        assert usage.structured_content == {"count": 0, "maxTasks": 1200, "percentage": 0}
        # Answered while every slow sender was still within its time, not after they were cut off.
        assert time.monotonic() - started < BODY_TIMEOUT, f"answered only after {answered_in:.2f} s"

        answers = _drip_until_answered(senders, until=started + BODY_TIMEOUT + 5)
        cut_off_in = time.monotonic() - started
        held = SLOW_SENDERS - len(answers)
        assert not held, f"{held} slow senders still held after {cut_off_in:.1f} s"
        assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers.values()), set(answers.values())
        assert cut_off_in < BODY_TIMEOUT + 2
        print(f"answered in {answered_in:.2f} s; {len(answers)} slow senders cut off (408) after {cut_off_in:.2f} s")
    finally:
        for sock in senders:
            sock.close()
        server.terminate()
        server.wait(timeout=10)


# The adapter itself, in process: what the server above relies on.


def _http(body_parts: list[bytes], *, content_length: int | None = None, complete: bool = True) -> tuple[dict, object]:
    headers = [(b"content-length", str(content_length).encode())] if content_length is not None else []
    scope = {"type": "http", "method": "POST", "path": "/x", "query_string": b"", "headers": headers,
             "server": ("127.0.0.1", 8000), "client": ("192.0.2.9", 5000), "scheme": "http", "http_version": "1.1"}
    messages = [{"type": "http.request", "body": part, "more_body": n < len(body_parts) - 1 or not complete}
                for n, part in enumerate(body_parts)]

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # a client that never sends the rest
        raise AssertionError("unreachable")

    return scope, receive


def _serve(app: object, scope: dict, receive: object) -> list[dict]:
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    run(app(scope, receive, send))
    return sent


def test_buffered_wsgi_hands_over_the_whole_body_and_streams_the_answer():
    from base.buffered_wsgi import BufferedWsgi

    seen: dict = {}

    class Answer:
        closed = False

        def __iter__(self):
            yield b"one "
            yield b"two"

        def close(self) -> None:
            Answer.closed = True

    def app(environ, start_response):
        seen.update(body=environ["wsgi.input"].read(), addr=environ["REMOTE_ADDR"], path=environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Answer()

    scope, receive = _http([b"hel", b"lo"], content_length=5)
    sent = _serve(BufferedWsgi(app, threads=1, body_timeout=5, max_body=100), scope, receive)
    assert seen == {"body": b"hello", "addr": "192.0.2.9", "path": "/x"}
    assert [m["type"] for m in sent] == ["http.response.start"] + ["http.response.body"] * 3
    assert b"".join(m.get("body", b"") for m in sent) == b"one two" and Answer.closed


def test_buffered_wsgi_refuses_late_and_large_bodies_before_the_application_runs():
    from base.buffered_wsgi import BufferedWsgi

    def app(environ, start_response):
        raise AssertionError("the application must not see the request")

    buffered = BufferedWsgi(app, threads=1, body_timeout=0.05, max_body=10)
    late = _serve(buffered, *_http([b"{"], content_length=5, complete=False))
    assert late[0]["status"] == 408 and b"did not arrive within 0.05 seconds" in late[1]["body"]
    declared = _serve(buffered, *_http([], content_length=11))
    assert declared[0]["status"] == 413
    undeclared = _serve(buffered, *_http([b"x" * 6, b"y" * 6]))
    assert undeclared[0]["status"] == 413 and b"larger than 10 bytes" in undeclared[1]["body"]


def test_buffered_wsgi_ends_an_endless_stream_when_its_client_leaves():
    from base.buffered_wsgi import BufferedWsgi

    closed = threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])

        def events():
            try:
                while True:
                    yield b"data: tick\n\n"
            finally:
                closed.set()  # the thread is free again

        return events()

    async def scenario() -> int:
        gone = asyncio.Event()
        scope, _ = _http([])
        request = [{"type": "http.request", "body": b"", "more_body": False}]
        sent: list[dict] = []

        async def receive() -> dict:
            if request:
                return request.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)
            if len(sent) == 3:
                gone.set()

        await BufferedWsgi(app, threads=1, body_timeout=5, max_body=10)(scope, receive, send)
        return len(sent)

    assert run(scenario()) >= 3 and closed.is_set()

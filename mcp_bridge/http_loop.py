"""The event loop each HTTP request thread keeps for the SDK's dispatch, and running the tool beside it.

The MCP view is synchronous (it must work under WSGI, and Django's ORM is sync) while the SDK's dispatch is a
coroutine. asgiref's async_to_sync would make a new event loop in a new thread for every request, and handing
the tool to a thread pool costs two thread switches per call and lets those threads oversubscribe the cores.
Instead each request thread keeps one loop of its own, which runs nothing but that thread's current request: while
the tool runs, the loop has nothing else to do, so the tool runs right on the request thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_thread_loops = threading.local()


def run_here(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on the loop this thread keeps."""
    loop = getattr(_thread_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread_loops.loop = asyncio.new_event_loop()
    return loop.run_until_complete(coroutine)


def run_beside_loop(function: Callable[..., T], *args: Any) -> T:
    """Call ``function`` synchronously from a coroutine that ``run_here`` runs.

    Django refuses ORM calls on a thread whose event loop is running, because they would block every other task
    of that loop; the loop of ``run_here`` has no other task, so it is stepped aside for the call (the running
    loop is a per-thread marker, set back afterwards).
    """
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        return function(*args)
    finally:
        asyncio.events._set_running_loop(loop)

"""Telling the agent, once: what the imports of one tool call did, for the first lines of its answer, and a
file that could not be imported, told once per process."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from base.lru import BoundedLru
from pillbox.original.files import Counts, ImportFailed

logger = logging.getLogger("pillbox")


class News:
    """What the imports of one tool call did, for the first lines of its answer."""

    def __init__(self) -> None:
        self.counts = Counts()
        self.failures: list[str] = []

    def lines(self) -> list[str]:
        done = [f"imported from the original Pillbox: {self.counts.phrase()}"] if self.counts else []
        return done + [f"not imported from the original Pillbox: {failure}" for failure in self.failures]

    def before(self, text: str) -> str:
        lines = self.lines()
        return "\n".join(lines) + "\n\n" + text if lines else text

    def after(self, text: str) -> str:
        lines = self.lines()
        return text + "\n\n" + "\n".join(lines) if lines else text


_news: ContextVar[News | None] = ContextVar("pillbox_original_news", default=None)


@contextmanager
def announcements() -> Iterator[News]:
    """Collect what imports happen inside the block (outside one, they are only logged)."""
    news = News()
    token = _news.set(news)
    try:
        yield news
    finally:
        _news.reset(token)


def announce(counts: Counts) -> None:
    if (news := _news.get()) is not None:
        news.counts = news.counts + counts


# What a process has already said or checked, per file: bounded, as every in-process memory of a server is (a
# forgotten entry is only said or checked again).
_told: BoundedLru[str, bool] = BoundedLru(max_items=1024, max_bytes=1 << 20)


def announce_failure(error: ImportFailed) -> None:
    """A file that could not be imported while others were: told once per process (it is retried on every
    call, and an agent needs to hear it once, not in every answer)."""
    if error.message in _told:
        return
    _told.put(error.message, True, size=len(error.message))
    logger.warning("%s", error.message)
    if (news := _news.get()) is not None:
        news.failures.append(error.message)

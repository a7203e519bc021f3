"""Domain errors of the Todos app: each carries the one sentence an agent or a person reads."""

from __future__ import annotations


class TodoError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(TodoError):
    def __init__(self, message: str = "Todo not found") -> None:
        super().__init__(message)


class ValidationFailed(TodoError):
    """What is wrong with each invalid field, naming it, in one sentence."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class LimitReached(TodoError):
    pass


class BlockerConflict(ValidationFailed):
    """blockedBy names todos the owner does not have (or deleted), or would close a loop: wrong for the list as it
    stands now, not for any list (the REST API answers 409)."""


class Claimed(TodoError):
    """Someone else holds a live claim on the todo (the REST API answers 409). The sentence names the holder and
    the end of their lease, then ``hint``: what the caller can do instead. Never the lease token."""

    def __init__(self, key: str, holder: str, until: str, *, hint: str) -> None:
        super().__init__(f"Todo {key} is claimed by {holder} until {until}; {hint}")
        self.holder = holder
        self.until = until


class NotClaimable(TodoError):
    """The todo is done: there is nothing left to claim (the REST API answers 409)."""

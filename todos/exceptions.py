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

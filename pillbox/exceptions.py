"""Domain errors: each carries its error code (docs/errors.md), a sentence for the reader, and extra fields."""

from __future__ import annotations


class PillboxError(Exception):
    code = "internal_error"

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.message = message
        self.fields = {key: value for key, value in fields.items() if value is not None}


class NotFound(PillboxError):
    code = "not_found"


class WrongKind(NotFound):
    """The id names a record of another kind (a prescription's id given to pill_read)."""


class PrescriptionRequired(PillboxError):
    code = "prescription_required"


class ValidationFailed(PillboxError):
    """One line per field: ``fields`` maps a field name to what is wrong with it."""

    code = "validation_error"


class InvalidInput(PillboxError):
    code = "invalid_input"


class AmbiguousId(PillboxError):
    code = "ambiguous_id"


class AlreadyExists(PillboxError):
    code = "already_exists"


class DbNotFound(PillboxError):
    code = "db_not_found"


class CircularLink(PillboxError):
    code = "circular_link"


class NoBottleInDb(PillboxError):
    code = "no_bottle_in_db"


class IncompatibleDb(PillboxError):
    code = "incompatible_db"

"""A database to search and the rows of it the caller may see (``Target``), as the SQL that keeps to them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from django.db import connections

from pillbox.routers import is_local_alias
from pillbox.tokens import tag_of

if TYPE_CHECKING:
    from typing import TypeAlias

    # What the queries here pass their placeholders.
    SqlParam: TypeAlias = str | int | uuid.UUID | None


@dataclass(frozen=True)
class Target:
    """One database to search, and the rows of it the caller may see."""

    alias: str
    kind: str  # "pill" or "capsule"
    bottles: frozenset[uuid.UUID] = frozenset()
    owner_id: int | None = None
    include_superseded: bool = False  # rows a newer one supersedes (pillbox.superseding) are answered too

    @property
    def fts(self) -> str:
        return f"pillbox_{self.kind}_fts"

    @property
    def table(self) -> str:
        return f"pillbox_{self.kind}"

    @property
    def on_postgres(self) -> bool:
        return connections[self.alias].vendor == "postgresql"

    @cached_property
    def everything_reachable(self) -> bool:
        """True when every row in this database's pill index is one the caller may see (a project's own file).
        Asked once per search: the vocabulary, the strict check, the count and the ranking all want it."""
        if self.kind != "pill":
            return False
        with connections[self.alias].cursor() as cursor:
            cursor.execute(
                "SELECT EXISTS(SELECT 1 FROM pillbox_prescription WHERE deleted_at IS NOT NULL "
                f"OR bottle_id NOT IN ({marks(len(self.bottles))}))",
                [bottle.hex for bottle in sorted(self.bottles)],
            )
            row = cursor.fetchone()
        return not row[0]

    def shown_sql(self) -> tuple[str, str, list[SqlParam]]:
        """``scope_sql`` less the rows a newer one supersedes, unless they are asked for: the rows a search may
        answer. The vocabulary keeps to ``scope_sql``: a superseded row's words are still words of the memory."""
        joins, where, params = self.scope_sql()
        return joins, where if self.include_superseded else f"{where} AND m.superseded_by_id IS NULL", params

    def scope_sql(self) -> tuple[str, str, list[SqlParam]]:
        """Extra joins, conditions and parameters that keep to the caller's rows of table alias ``m``."""
        if self.kind == "pill":
            marks = ", ".join(["%s"] * len(self.bottles))
            # SQLite keeps UUIDs as 32 hex digits; PostgreSQL has a uuid type.
            bottles = sorted(self.bottles) if self.on_postgres else [bottle.hex for bottle in sorted(self.bottles)]
            return (
                "JOIN pillbox_prescription r ON r.id = m.prescription_id",
                f"m.deleted_at IS NULL AND r.deleted_at IS NULL AND r.bottle_id IN ({marks})",
                list(bottles),
            )
        return "", "m.deleted_at IS NULL AND m.owner_id = %s", [self.owner_id]

    @property
    def bottle_column(self) -> str:
        return "r.bottle_id" if self.kind == "pill" else "NULL"

    @property
    def scoped_index(self) -> bool:
        """Whether the SQLite index knows whose each word is (the global database's: see migration 0008)."""
        return not is_local_alias(self.alias)

    @cached_property
    def tags(self) -> list[str]:
        """What the index's words of the caller's rows begin with: in the global database, the tags of their
        bottles (pills) or of their owner (capsules); nothing in a project's file (``pillbox.tokens``). Every
        statement of a search asks: hashed once per target."""
        if not self.scoped_index:
            return [""]
        if self.kind == "capsule":
            return [tag_of(self.owner_id)]
        return [tag_of(bottle.hex) for bottle in sorted(self.bottles)]


def marks(count: int) -> str:
    return ", ".join(["%s"] * count)

"""A database to search and the rows of it the caller may see (``Target``), as the SQL that keeps to them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from django.db import connections

from pillbox.routers import is_local_alias
from pillbox.search.when import Window
from pillbox.tokens import tag_of

if TYPE_CHECKING:
    from datetime import datetime
    from typing import TypeAlias

    # What the queries here pass their placeholders.
    SqlParam: TypeAlias = str | int | uuid.UUID | datetime | None


@dataclass(frozen=True)
class Target:
    """One database to search, and the rows of it the caller may see."""

    alias: str
    kind: str  # "pill" or "capsule"
    bottles: frozenset[uuid.UUID] = frozenset()
    owner_id: int | None = None
    include_superseded: bool = False  # rows a newer one supersedes (pillbox.superseding) are answered too
    # Creation times the search keeps to (``pillbox.search.when``): a condition of every statement that reads
    # the rows, so rows outside it are never counted nor ranked.
    window: Window | None = None

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

    def shown_sql(self, *, windowed: bool = True) -> tuple[str, str, list[SqlParam]]:
        """``scope_sql`` less the rows a newer one supersedes, unless they are asked for: the rows a search may
        answer. The vocabulary keeps to ``scope_sql``: a superseded row's words are still words of the memory."""
        joins, where, params = self.scope_sql(windowed=windowed)
        return joins, where if self.include_superseded else f"{where} AND m.superseded_by_id IS NULL", params

    def scope_sql(self, *, windowed: bool = True) -> tuple[str, str, list[SqlParam]]:
        """Extra joins, conditions and parameters that keep to the caller's rows of table alias ``m`` (in the
        window, unless ``windowed`` is False: what is kept per scope, such as its vectors and its words)."""
        if self.kind == "pill":
            marks = ", ".join(["%s"] * len(self.bottles))
            # SQLite keeps UUIDs as 32 hex digits; PostgreSQL has a uuid type.
            bottles = sorted(self.bottles) if self.on_postgres else [bottle.hex for bottle in sorted(self.bottles)]
            joins = "JOIN pillbox_prescription r ON r.id = m.prescription_id"
            where = f"m.deleted_at IS NULL AND r.deleted_at IS NULL AND r.bottle_id IN ({marks})"
            params: list[SqlParam] = list(bottles)
        else:
            joins, where, params = "", "m.deleted_at IS NULL AND m.owner_id = %s", [self.owner_id]
        if windowed and self.window is not None:
            # Written as the ORM writes the column (SQLite: UTC text, which sorts as time does).
            adapt = connections[self.alias].ops.adapt_datetimefield_value
            bounds = ((self.window.start, "m.created_at >= %s"), (self.window.end, "m.created_at < %s"))
            for moment, condition in bounds:
                if moment is not None:
                    where += f" AND {condition}"
                    params.append(adapt(moment))
        return joins, where, params

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

"""How Pillbox answers an agent: plain `key: value` text, blank lines between records, no JSON.

Every function here is pure: it formats what the selectors and services already fetched.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pillbox.exceptions import PillboxError
from pillbox.ids import short
from pillbox.models import Bottle, Capsule, OwnedFile, Pill, Prescription, Registration
from pillbox.search.engine import MAX_TERMS
from pillbox.search.results import Found
from pillbox.search.scoring import CLIFF_LIMIT
from pillbox.search.when import Window
from pillbox.selectors import BottleContext, ListedBottle, PrescriptionContext
from pillbox.shaping import lines_kept, one_line

CONTEXT_SNIPPET = 300


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def day(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def lines(pairs: Iterable[tuple[str, object]]) -> str:
    return "\n".join(f"{key}: {value}" for key, value in pairs)


def author(name: str, email: str) -> str:
    if name and email:
        return f"{name} <{email}>"
    return name or email


# What a viewer who may not see the server's file system is shown instead of a path.
HIDDEN_PATH = "(on the server)"
PATH_FIELDS = ("db_path", "directory")


def visible(exc: PillboxError, *, hide_paths: bool) -> tuple[str, dict[str, object]]:
    """An error's message and fields; with ``hide_paths``, the server paths it names (fields, and the same words
    in the message) are replaced for a remote viewer who must not learn the server's layout."""
    message, fields = exc.message, dict(exc.fields)
    if hide_paths:
        for name in PATH_FIELDS:
            if name in fields:
                message = message.replace(str(fields[name]), HIDDEN_PATH)
                fields[name] = HIDDEN_PATH
    return message, fields


def error(exc: PillboxError, *, hide_paths: bool = False) -> str:
    message, fields = visible(exc, hide_paths=hide_paths)
    return lines([("error", exc.code), ("message", message), *fields.items()])


# A global bottle belongs to no project: the data directory it is kept in is not its directory.
NO_DIRECTORY = "(none: a global bottle)"


def shown_directory(directory: str, *, hide_paths: bool, scope: str = "local") -> str:
    if scope == "global":
        return NO_DIRECTORY
    return HIDDEN_PATH if hide_paths else one_line(directory, 4096)


def real_directory(entry: Registration) -> str:
    """Where a registered local bottle's file really is (the project holding its ``.pillbox``), not the directory
    its bottle row claims: a copied or crafted file claims anything."""
    if entry.scope == Bottle.SCOPE_LOCAL and entry.db_path:
        return str(Path(entry.db_path).parent.parent)
    return entry.directory


def bottle_created(bottle: Bottle, *, hide_paths: bool = False) -> str:
    return lines([
        ("id", short(bottle.id)), ("name", one_line(bottle.name)), ("display_name", one_line(bottle.display_name)),
        ("directory", shown_directory(bottle.directory, hide_paths=hide_paths, scope=bottle.scope)),
        ("scope", bottle.scope),
    ])


def bottle_context(context: BottleContext) -> str:
    if not context.prescriptions:
        return "No prescriptions found."
    blocks = []
    for rx in context.prescriptions:
        dates = day(rx.started_at) if rx.ended_at is None else f"{day(rx.started_at)} → {day(rx.ended_at)}"
        status = "open" if rx.ended_at is None else "closed"
        blocks.append(f"id: {short(rx.id)}\n[{status}] {one_line(rx.title)}  {dates}  {plural(rx.live_pills, 'pill')}")
    return "\n\n".join(blocks) + f"\n\n---\nprescriptions: {context.total}" + hidden(context.superseded, "pill")


def hidden(superseded: int, noun: str) -> str:
    """The line saying how many rows a newer one supersedes were left out of a context, if any."""
    if not superseded:
        return ""
    return (f"\n({plural(superseded, f'superseded {noun}')} hidden; {noun}_search with include_superseded: true "
            "shows them)")


HERE = "← this directory"


def bottle_list(bottles: list[ListedBottle], here: Path | None = None, *, hide_paths: bool = False) -> str:
    """``here`` is the working directory's database file: its bottle is marked so an agent in a sub-folder need
    not compare paths itself."""
    if not bottles:
        return "No bottles registered."
    blocks = [f"Bottles ({len(bottles)})"]
    for item in bottles:
        entry = item.registration
        mark = "●" if item.linked else "○"
        tail = "" if item.linked else " [unlinked]"
        if not item.read:
            tail += " [not read: the file there is not one you made or adopted, or it was refused]"
        if here is not None and entry.db_path and Path(entry.db_path) == here:
            tail += f"  {HERE}"
        # The name is what bottle_id takes besides the id (the display name is refused).
        directory = shown_directory(real_directory(entry), hide_paths=hide_paths, scope=entry.scope)
        blocks.append(
            f"{mark} {one_line(entry.display_name)} [{entry.scope}] {short(entry.bottle_id)}{tail}\n"
            f"  name: {one_line(entry.name)} · {directory}"
        )
    return "\n\n".join(blocks)


def bottle_linked(bottle: Bottle, db_path: str, created: bool, *, owned: OwnedFile | None = None,
                  resolved_from: Path | None = None) -> str:
    pairs: list[tuple[str, object]] = [
        ("status", "linked" if created else "already_linked"), ("bottle_id", short(bottle.id)),
        ("name", one_line(bottle.name)), ("display_name", one_line(bottle.display_name)),
        ("db_path", one_line(db_path, 4096)),
    ]
    if owned is not None and owned.origin == OwnedFile.ADOPTED:
        pairs.append(("origin", f"adopted (not made by your Pillbox here; its bottle named "
                                f"{one_line(owned.claimed_directory, 300) or 'no directory'})"))
    if resolved_from is not None:
        pairs.append(("note", f"the relative directory was resolved against the working directory {resolved_from}"))
    return lines(pairs)


def prescription_opened(rx: Prescription) -> str:
    return lines([("id", short(rx.id)), ("title", one_line(rx.title)), ("started_at", iso(rx.started_at))])


def prescription_closed(rx: Prescription) -> str:
    pairs: list[tuple[str, object]] = [("id", short(rx.id)), ("title", one_line(rx.title)),
                                       ("started_at", iso(rx.started_at))]
    if rx.ended_at is not None:
        pairs.append(("ended_at", iso(rx.ended_at)))
    return lines(pairs)


def prescription(rx: Prescription) -> str:
    pairs: list[tuple[str, object]] = [
        ("id", short(rx.id)), ("title", one_line(rx.title)), ("status", "open" if rx.ended_at is None else "closed"),
        ("started_at", iso(rx.started_at)),
    ]
    if rx.ended_at is not None:
        pairs.append(("ended_at", iso(rx.ended_at)))
    if who := author(rx.author_name, rx.author_email):
        pairs.append(("author", one_line(who)))
    return lines(pairs)


def flattened(content: str, width: int = CONTEXT_SNIPPET) -> str:
    flat = lines_kept(content).replace("\r\n", "\n").replace("\n", "\\n")
    return flat if len(flat) <= width else flat[:width] + "…"


def prescription_context(context: PrescriptionContext | None) -> str:
    if context is None:
        return ""
    rx = context.prescription
    if rx.ended_at is None:
        header = f"[open] {one_line(rx.title)}  started: {day(rx.started_at)}"
    else:
        header = f"[closed] {one_line(rx.title)}  started: {day(rx.started_at)} → {day(rx.ended_at)}"
    blocks = [f"id: {short(rx.id)}\n{header}"]
    blocks += [
        f"  id: {short(pill.id)} [{one_line(pill.compound)}] {one_line(pill.title)}\n  {flattened(pill.content)}"
        for pill in context.pills
    ]
    return "\n\n".join(blocks) + f"\n\n---\npills: {context.total}" + hidden(context.superseded, "pill")


def prescription_discarded(rx: Prescription, count: int | None) -> str:
    if count is None:
        return f"Prescription {short(rx.id)} was discarded already; nothing changed."
    return f"Prescription {short(rx.id)} discarded with its {plural(count, 'pill')}."


def superseding(supersedes: list[uuid.UUID] | None) -> list[tuple[str, object]]:
    """The ``supersedes`` line of a store or revise that was given the argument (``None``: it was not)."""
    if supersedes is None:
        return []
    if not supersedes:
        return [("supersedes", "none (every row it superseded is back in searches and contexts)")]
    return [("supersedes", ", ".join(short(pk) for pk in supersedes)
             + " (left out of searches and contexts; revise with supersedes: [] to bring them back)")]


def pill_stored(pill: Pill | Capsule, supersedes: list[uuid.UUID] | None = None) -> str:
    return lines([("id", short(pill.id)), ("title", pill.title), ("compound", pill.compound),
                  *superseding(supersedes or None)])


def pill_revised(pill: Pill | Capsule, supersedes: list[uuid.UUID] | None = None) -> str:
    return lines([("id", short(pill.id)), ("compound", pill.compound), ("title", pill.title),
                  *superseding(supersedes)])


def supersede_lines(record: Pill | Capsule, supersedes: Sequence[uuid.UUID]) -> list[tuple[str, object]]:
    """What a read says of superseding: the row that supersedes this one, the rows this one supersedes."""
    pairs: list[tuple[str, object]] = []
    if record.superseded_by_id is not None:
        pairs.append(("superseded by", short(record.superseded_by_id)))
    if supersedes:
        pairs.append(("supersedes", ", ".join(short(pk) for pk in supersedes)))
    return pairs


def discarded(record: Pill | Capsule) -> str:
    assert record.deleted_at is not None
    return lines([("id", short(record.id)), ("deleted_at", iso(record.deleted_at))])


def pill(record: Pill, supersedes: Sequence[uuid.UUID] = ()) -> str:
    pairs: list[tuple[str, object]] = [
        ("id", short(record.id)), ("prescription", short(record.prescription_id)),
        ("created", iso(record.created_at)), ("compound", one_line(record.compound)), ("title", one_line(record.title)),
    ]
    if who := author(record.author_name, record.author_email):
        pairs.append(("author", one_line(who)))
    pairs += supersede_lines(record, supersedes)
    return lines(pairs) + f"\ncontent:\n{lines_kept(record.content)}"


def capsule(record: Capsule, supersedes: Sequence[uuid.UUID] = ()) -> str:
    pairs = [("id", short(record.id)), ("created", iso(record.created_at)), ("compound", record.compound),
             ("title", record.title), *supersede_lines(record, supersedes)]
    return lines(pairs) + f"\ncontent:\n{record.content}"


def compounds(rows: list[tuple[str, int]]) -> str:
    if not rows:
        return "No compounds found."
    return "\n".join(f"- {name} ({count})" for name, count in rows)


def search_limits(found: Found) -> str:
    """What a search left out, in words: the terms past the cap, and a time budget run out."""
    notes = []
    if found.ignored_terms:
        notes.append(f"ignored_terms: {found.ignored_terms} (only the first {MAX_TERMS} distinct words of a query "
                     "are searched)")
    if found.partial:
        notes.append("partial: true (the search reached its time budget; these are the results found by then: "
                     "a shorter query finds more)")
    return "".join("\n" + note for note in notes)


def search_results(found: Found, *, noun: str, bottle_names: Mapping[uuid.UUID, str] | None,
                   current_bottle: str | None = None, superseded: Mapping[uuid.UUID, uuid.UUID] | None = None,
                   window: Window | None = None) -> str:
    """``superseded``: the shown rows a newer one supersedes (asked for with include_superseded), marked;
    ``window``: the time searched, and what it was read from (an argument, or the query's time words)."""
    timed = f"\ntime: {window.describe()}" if window is not None else ""
    if not found.hits:
        return f"No {noun}s found." + timed + search_limits(found)
    header = f"Found {plural(found.total, noun)}"
    if found.total > len(found.hits):
        header += f" (showing {len(found.hits)})"
    header += timed
    if found.match:
        header += f"\nmatch: {found.match}"
    if found.confidence:
        header += f"\nconfidence: {found.confidence}"
    if found.corrections:
        header += "\ncorrected: " + ", ".join(f"{typed} → {word}" for typed, word in found.corrections)
    header += search_limits(found)
    if found.used_fuzzy:
        header += "\nused_fuzzy: true"
    if found.used_semantic:
        header += "\nused_semantic: true"
    if current_bottle and len({hit.bottle_id for hit in found.hits}) > 1:
        # Pills of several bottles are shown: say which one ranked first for being the working directory's.
        header += f"\ncurrent_bottle: {current_bottle}"
    if found.more:
        header += f"\nmore: {found.more} weaker match{'' if found.more == 1 else 'es'} left out, far below the best; " \
                  f"a limit above {CLIFF_LIMIT} shows them"
    blocks = [header]
    for hit in found.hits:
        title = one_line(hit.title)
        if superseded and hit.id in superseded:
            title += f" (superseded by {short(superseded[hit.id])})"
        pairs: list[tuple[str, object]] = [("id", short(hit.id)), ("compound", one_line(hit.compound)),
                                           ("title", title)]
        if bottle_names is not None:
            name = bottle_names.get(hit.bottle_id, short(hit.bottle_id)) if hit.bottle_id else ""
            pairs.append(("bottle", one_line(name)))
        pairs.append(("snippet", lines_kept(hit.snippet)))
        blocks.append(lines(pairs))
    return "\n\n".join(blocks)

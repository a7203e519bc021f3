"""The 25 Pillbox tools: each reads its arguments, calls one service or selector, and formats the answer."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from django.db import DatabaseError

from mcp_bridge.arguments import read_arguments
from mcp_bridge.tools import Caller, Tool, ToolFailure, ToolSet
from pillbox import deadlines, selectors, services, superseding, texts, tidy_texts, tidying
from pillbox.access import Reach, hides_server_paths, reach_for
from pillbox.embeddings import loader
from pillbox.exceptions import PillboxError
from pillbox.global_db import GLOBAL
from pillbox.input_rules import (
    field_problems,
    problems_error,
    require_change,
    require_query_or_compound,
    unknown_arguments,
)
from pillbox.limits import COMPOUND_LIMIT, CONTENT_LIMIT, NAME_LIMIT
from pillbox.original.news import announcements
from pillbox.search import when
from pillbox.search.engine import timed_search
from pillbox.search.scoring import CLIFF_LIMIT
from pillbox.search.targets import Target


def _string(low: int, high: int, description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": low, "maxLength": high, "description": description}


def _limit(default: int, high: int, what: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": high, "default": default,
            "description": f"Most {what} to return (1-{high}, default {default})."}


ID = _string(8, 36, "The id as shown (12 hex digits), a full UUID, or any prefix of at least 8 hex digits.")
TITLE = _string(1, NAME_LIMIT, "Short descriptive title (1-255 characters).")
CONTENT = _string(1, CONTENT_LIMIT, "Full text, Markdown welcome (1-5000 characters).")
COMPOUND = _string(1, COMPOUND_LIMIT, "Free-text category, e.g. decision, bug, convention, todo (1-64 characters).")
AUTHOR_NAME = _string(1, NAME_LIMIT, "Name of the person the agent works for (git config user.name).")
AUTHOR_EMAIL = _string(1, NAME_LIMIT, "Email of the person the agent works for (git config user.email).")
BOTTLE_ID = _string(1, 255, "A bottle's id from bottle_list or bottle_create (12 hex digits, a full UUID or a "
                            "prefix of at least 8 hex digits), or the bottle's name.")
QUERY = _string(1, 1000, 'Words to look for; typos are tolerated. Operators and quotes are plain text.')
# What a search answer's lines mean (pill_search and capsule_search).
SEARCH_ANSWER = (
    "The answer's 'match:' line says how the first row matched your meaningful words: 'all words' (as typed), "
    "'corrected words' (all, some through a typo correction), 'some words', or 'meaning' (none: found by "
    "meaning alone). 'corrected: typed → word' names each correction used; used_fuzzy: true means a shown "
    "row matched only through one, used_semantic: true that a shown row was found by meaning alone. "
    f"'more: N weaker matches' counts rows left out far below the best (a limit above {CLIFF_LIMIT} shows "
    "them). 'confidence:' says how sure the server is that the first row answers the query: 'high' (every word "
    "matched in that row and no other shown, and the model finds it the closest in meaning; right 97-100 % of the "
    "time on the project benchmarks), 'medium' (every word matched, or meaning alone stands out), 'low' (a partial or "
    "meaning-only match: read it, and don't take it as the answer unchecked). "
    "'No pills found.' means nothing close to the query was stored, not a search failure; when the words find "
    "nothing, the closest rows in meaning are shown labelled low rather than answering that."
)
SUPERSEDED = ("A superseded {noun} is left out of {searches} by default, and kept: {noun}_read of it says "
              "'superseded by: <id>'.")


WHOSE = {"pill": "of the same bottle", "capsule": "yours"}


def _supersedes(noun: str, *, revise: bool = False) -> dict[str, Any]:
    undo = (f" The {noun}s it supersedes become exactly these: [] brings back every one it superseded; leaving the "
            "argument out leaves them as they are." if revise else "")
    return {"type": "array", "maxItems": superseding.MOST,
            "items": {**ID, "description": f"The id of a {noun} this one replaces."},
            "description": f"Ids of older {noun}s this one replaces ({WHOSE[noun]}): a decision changed, a fact "
                           "gone stale, the same lesson stored twice. "
                           + SUPERSEDED.format(noun=noun, searches="searches and contexts") + undo}


def _include_superseded(noun: str) -> dict[str, Any]:
    return {"type": "boolean", "default": False,
            "description": f"Also answer {noun}s that a newer {noun} supersedes, each marked '(superseded by <id>)' "
                           "in its title line."}


SINCE = _string(1, 64, "Only pills created from this moment on: an ISO date (2026-11-01), a date-time "
                       "(2026-11-01T09:30, Z or an offset welcome), or a span back from now (7d, 2w, 3m, 12h, 1y).")
UNTIL = _string(1, 64, "Only pills created before this moment: as since; a date includes that whole day.")
TIME_ZONE = _string(1, 64, "Your IANA time zone (Europe/Paris), for what a day, a week or a month is in since, "
                           "until and the query's time words; default: the server's.")
# How a search keeps to a time (pill_search and capsule_search).
SEARCH_TIME = (
    "Time: since and until keep to the pills created in that window, inside the search itself (rows outside it "
    "are never ranked); time words in the query are read the same way and taken out of the words searched: "
    "'yesterday', 'today', 'last week', 'this month', 'since Monday', 'in March', 'in March 2026', "
    "'before 2026-11-01', 'after the 3rd', '3 days ago', 'a few days ago', 'in the last 7 days', 'this morning', "
    "'last weekend', 'between March and May' (weeks begin on Monday; a month or weekday needs its preposition: "
    "'in March', 'since Monday'). The answer's "
    "'time:' line gives the window used (its end excluded) and what it was read from; since/until win over the "
    "query's time words, and the line says so. A query of time words alone (what did we do yesterday?) lists "
    "that window's pills, newest first. Time words naming a time nothing was written in (a date the memory's "
    "text speaks of: 'in March 2023') are searched as words over every time instead, and the line says so."
)
FUZZY = {"type": "boolean", "default": False,
         "description": "Expand every word to similar indexed words at once (typo-tolerant), instead of only "
                        "when the strict pass finds nothing."}

TOOLS: list[Tool] = []


def tool(
    name: str,
    description: str,
    properties: dict[str, dict[str, Any]],
    required: Collection[str] = (),
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., str]], Callable[..., str]]:
    schema = {"type": "object", "properties": properties, "required": list(required)}

    def decorate(function: Callable[..., str]) -> Callable[..., str]:
        def handler(caller: Caller, arguments: dict[str, Any]) -> str:
            values, problems = read_arguments(schema, arguments, multiline=("content",))
            problems += field_problems(values)
            # Hook (original Pillbox import): an import made while answering is said once, in this answer.
            with announcements() as news:
                try:
                    if problems:
                        raise problems_error(name, problems, arguments)
                    if unknown := unknown_arguments(name, schema, arguments):
                        raise unknown
                    return news.before(function(reach_for(caller), **values))
                except PillboxError as exc:
                    raise ToolFailure(news.after(texts.error(exc, hide_paths=hides_server_paths(caller)))) from None
                except DatabaseError as exc:
                    if not deadlines.interrupted(exc):
                        raise
                    raise ToolFailure(news.after(texts.error(deadlines.stopped()))) from None

        TOOLS.append(Tool(name=name, description=description, input_schema=schema, handler=handler,
                          read_only=read_only, destructive=destructive, idempotent=idempotent))
        return function

    return decorate


# ---------------------------------------------------------------- pills


@tool(
    "pill_store",
    "Store a memory entry (pill) in an open prescription: a decision, a bug and its fix, a convention, a "
    "finding worth keeping for the next session. Returns the new pill's id. Keep one idea per pill; content "
    "over 5000 characters must be split into several pills. When it replaces older pills, name them in "
    "supersedes.",
    {"prescription_id": {**ID, "description": "An open prescription's id (prescription_open returns one)."},
     "title": TITLE, "content": CONTENT, "compound": COMPOUND, "author_name": AUTHOR_NAME,
     "author_email": AUTHOR_EMAIL, "supersedes": _supersedes("pill")},
    ["prescription_id", "title", "content", "compound", "author_name", "author_email"],
)
def pill_store(reach: Reach, supersedes: list[str] | None = None, **values: str) -> str:
    pill = services.pill_store(reach=reach, supersedes=supersedes or (), **values)
    return texts.pill_stored(pill, selectors.supersedes(pill) if supersedes else None)


@tool("pill_read", "Read one pill in full: its prescription, date, compound, title, author and whole content; "
      "'superseded by: <id>' when a newer pill replaces it, 'supersedes:' the pills it replaces.",
      {"id": ID}, ["id"], read_only=True)
def pill_read(reach: Reach, id: str) -> str:
    pill, alias = selectors.pill_get(reach=reach, pill_id=id)
    services.count_view(type(pill), alias, pill.pk)
    return texts.pill(pill, selectors.supersedes(pill))


@tool(
    "pill_revise",
    "Change a pill's title, content or compound, or the pills it supersedes (give at least one). Its "
    "prescription must be open; prescription_reopen reopens a closed one.",
    {"id": ID, "title": TITLE, "content": CONTENT, "compound": COMPOUND,
     "supersedes": _supersedes("pill", revise=True)}, ["id"], idempotent=True,
)
def pill_revise(reach: Reach, id: str, supersedes: list[str] | None = None, **changes: str) -> str:
    require_change("pill_revise", changes, supersedes)
    pill = services.pill_revise(reach=reach, pill_id=id, changes=changes, supersedes=supersedes)
    return texts.pill_revised(pill, None if supersedes is None else selectors.supersedes(pill))


@tool("pill_discard", "Discard (archive) a pill: it disappears from search and context but is kept for people "
      "to restore. Its prescription must be open. Pills it superseded come back into search and context.",
      {"id": ID}, ["id"], destructive=True, idempotent=True)
def pill_discard(reach: Reach, id: str) -> str:
    return texts.discarded(services.pill_discard(reach=reach, pill_id=id))


@tool(
    "pill_search",
    "Search pills by words and by meaning, across every bottle you can reach (or one bottle). Ask in plain "
    "words or a whole sentence ('where are login sessions stored?'): rows close in meaning are found even "
    "without a shared word. Prefixes match ('auth' finds 'authentication'), accents and case are ignored, "
    "best matches first. " + SEARCH_ANSWER + " " + SEARCH_TIME + " Give a query, a compound, a time (since, "
    "until), or several; a compound alone lists that compound, newest first. A query's first 32 distinct words "
    "are searched (ignored_terms says how many more were not). "
    + SUPERSEDED.format(noun="pill", searches="the answer"),
    {"query": QUERY, "bottle_id": BOTTLE_ID, "compound": COMPOUND, "limit": _limit(20, 100, "pills"),
     "fuzzy": FUZZY, "include_superseded": _include_superseded("pill"), "since": SINCE, "until": UNTIL,
     "time_zone": TIME_ZONE},
    read_only=True,
)
def pill_search(reach: Reach, limit: int, fuzzy: bool, include_superseded: bool, query: str | None = None,
                bottle_id: str | None = None, compound: str | None = None, **time: str) -> str:
    wanted = timed_query(query, compound, **time)
    dbs = selectors.narrowed_dbs(reach, bottle_id)
    targets = [Target(alias=alias, kind="pill", bottles=frozenset(bottles), include_superseded=include_superseded,
                      window=wanted.window)
               for alias, bottles in dbs.items()]
    current = current_bottle(reach)
    found, window = timed_search(targets, wanted, query, compound=compound, limit=limit, fuzzy=fuzzy,
                                 current=frozenset([current.bottle_id]) if current else frozenset(),
                                 cut=limit <= CLIFF_LIMIT)
    marks = selectors.superseded_marks(reach=reach, kind="pill", ids=[hit.id for hit in found.hits]) \
        if include_superseded else None
    return texts.search_results(found, noun="pill", bottle_names=selectors.bottle_names(reach),
                                current_bottle=current.name if current else None, superseded=marks,
                                window=window)


def timed_query(query: str | None, compound: str | None, **time: str) -> when.Recall:
    """The window a search keeps to and the words left to search; something to look for is required."""
    wanted = when.recall(query, since=time.get("since"), until=time.get("until"), time_zone=time.get("time_zone"))
    require_query_or_compound(query, compound, timed=wanted.window is not None)
    return wanted


def current_bottle(reach: Reach) -> Any:
    """The registered bottle of the caller's working directory: the one whose database the walk up found (the
    same bottle bottle_list marks)."""
    if reach.current_path is None:
        return None
    here = reach.current_path
    return next((entry for entry in reach.registrations if entry.db_path and Path(entry.db_path) == here), None)


@tool(
    "pill_compounds",
    "List the compounds (categories) in use with how many live pills each has, most used first, over every "
    "bottle you can reach or one bottle. Useful before searching by compound.",
    {"bottle_id": BOTTLE_ID, "limit": _limit(50, 200, "compounds")},
    read_only=True,
)
def pill_compounds(reach: Reach, limit: int, bottle_id: str | None = None) -> str:
    return texts.compounds(selectors.pill_compounds(reach=reach, bottle_id=bottle_id, limit=limit))


@tool(
    "pill_duplicates",
    "Find pills of one bottle that say the same thing (the same lesson stored twice, reworded a little, re-ordered "
    "or with a typo fixed) and propose a tidy-up: each group names the pill to keep (the most read, else the "
    "newest) and how each other pill matched it. Pills that differ in a number, a version, a name or a negation "
    "are never grouped. Changes nothing: it answers a plan id for pill_tidy. Superseded and discarded pills are "
    "left out.",
    {"bottle_id": BOTTLE_ID,
     "by_meaning": {"type": "boolean", "default": False,
                    "description": "Also group pills that say the same in other words (the embedding model, above a "
                                   "measured similarity). Off by default: by text only."}},
    ["bottle_id"], read_only=True, idempotent=True,
)
def pill_duplicates(reach: Reach, bottle_id: str, by_meaning: bool) -> str:
    return tidy_texts.plan(tidying.duplicates_plan(reach=reach, bottle_id=bottle_id, by_meaning=by_meaning))


@tool(
    "pill_tidy",
    "Apply a plan from pill_duplicates, all its groups or those named, in one transaction: each group's keeper "
    "supersedes the other pills of its group (they leave search and context; nothing is deleted). Refused, "
    "changing nothing, when a pill of the plan changed since it was made. Answers a tidy id for pill_tidy_undo.",
    {"plan_id": {**ID, "description": "The plan id pill_duplicates answered."},
     "groups": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 1000,
                "description": "Group numbers of the plan to apply (default: every group)."}},
    ["plan_id"], destructive=True,
)
def pill_tidy(reach: Reach, plan_id: str, groups: list[int] | None = None) -> str:
    numbers = None if groups is None else [int(number) for number in groups]  # 2.0 is an integer in JSON
    return tidy_texts.applied(tidying.tidy_apply(reach=reach, plan_id=plan_id, groups=numbers))


@tool(
    "pill_tidy_undo",
    "Undo a tidy: every pill it superseded is superseded exactly as before it (usually by none) again. Refused, "
    "changing nothing, when it was undone already or a pill was superseded otherwise since.",
    {"tidy_id": {**ID, "description": "The tidy id pill_tidy answered."}}, ["tidy_id"],
)
def pill_tidy_undo(reach: Reach, tidy_id: str) -> str:
    return tidy_texts.undone(tidying.tidy_undo(reach=reach, tidy_id=tidy_id))


# ---------------------------------------------------------------- capsules


@tool(
    "capsule_store",
    "Store a capsule: memory shared by all your projects (conventions, workflows, facts about your "
    "environment), kept in the global database. Returns the new capsule's id. When it replaces older capsules, "
    "name them in supersedes.",
    {"title": TITLE, "content": CONTENT, "compound": COMPOUND, "supersedes": _supersedes("capsule")},
    ["title", "content", "compound"],
)
def capsule_store(reach: Reach, supersedes: list[str] | None = None, **values: str) -> str:
    capsule = services.capsule_store(reach=reach, supersedes=supersedes or (), **values)
    return texts.pill_stored(capsule, selectors.supersedes(capsule) if supersedes else None)


@tool("capsule_read", "Read one capsule in full; 'superseded by: <id>' when a newer capsule replaces it, "
      "'supersedes:' the capsules it replaces.", {"id": ID}, ["id"], read_only=True)
def capsule_read(reach: Reach, id: str) -> str:
    capsule = selectors.capsule_get(reach=reach, capsule_id=id)
    services.count_view(type(capsule), GLOBAL, capsule.pk)
    return texts.capsule(capsule, selectors.supersedes(capsule))


@tool("capsule_revise", "Change a capsule's title, content or compound, or the capsules it supersedes (give at "
      "least one).", {"id": ID, "title": TITLE, "content": CONTENT, "compound": COMPOUND,
                      "supersedes": _supersedes("capsule", revise=True)}, ["id"], idempotent=True)
def capsule_revise(reach: Reach, id: str, supersedes: list[str] | None = None, **changes: str) -> str:
    require_change("capsule_revise", changes, supersedes)
    capsule = services.capsule_revise(reach=reach, capsule_id=id, changes=changes, supersedes=supersedes)
    return texts.pill_revised(capsule, None if supersedes is None else selectors.supersedes(capsule))


@tool("capsule_discard", "Discard (archive) a capsule; people can restore it. Capsules it superseded come back.",
      {"id": ID}, ["id"], destructive=True, idempotent=True)
def capsule_discard(reach: Reach, id: str) -> str:
    return texts.discarded(services.capsule_discard(reach=reach, capsule_id=id))


@tool(
    "capsule_search",
    "Search your capsules (shared, cross-project memory) by words and by meaning: ask in plain words or a "
    "whole sentence; prefixes match, accents and case are ignored. " + SEARCH_ANSWER.replace("pills", "capsules")
    + " " + SEARCH_TIME.replace("pills", "capsules") + " Give a query, a compound, a time (since, until), or "
    "several. A query's first 32 distinct words are searched (ignored_terms says how many more were not). "
    + SUPERSEDED.format(noun="capsule", searches="the answer and the session start"),
    {"query": QUERY, "compound": COMPOUND, "limit": _limit(20, 100, "capsules"), "fuzzy": FUZZY,
     "include_superseded": _include_superseded("capsule"), "since": SINCE, "until": UNTIL, "time_zone": TIME_ZONE},
    read_only=True,
)
def capsule_search(reach: Reach, limit: int, fuzzy: bool, include_superseded: bool, query: str | None = None,
                   compound: str | None = None, **time: str) -> str:
    wanted = timed_query(query, compound, **time)
    target = Target(alias=GLOBAL, kind="capsule", owner_id=reach.user.pk, include_superseded=include_superseded,
                    window=wanted.window)
    found, window = timed_search([target], wanted, query, compound=compound, limit=limit, fuzzy=fuzzy,
                                 cut=limit <= CLIFF_LIMIT)
    marks = selectors.superseded_marks(reach=reach, kind="capsule", ids=[hit.id for hit in found.hits]) \
        if include_superseded else None
    return texts.search_results(found, noun="capsule", bottle_names=None, superseded=marks, window=window)


@tool("capsule_compounds", "List the compounds of your capsules with their counts, most used first.",
      {"limit": _limit(50, 200, "compounds")}, read_only=True)
def capsule_compounds(reach: Reach, limit: int) -> str:
    return texts.compounds(selectors.capsule_compounds(reach=reach, limit=limit))


# ---------------------------------------------------------------- prescriptions


@tool(
    "prescription_open",
    "Open a new prescription (a work session) in a bottle; pills are stored in it. Always opens a new one: to "
    "continue an open one, find its id with bottle_context. Several may be open at once.",
    {"bottle_id": BOTTLE_ID, "title": _string(1, 255, "What this session is about."), "author_name": AUTHOR_NAME,
     "author_email": AUTHOR_EMAIL},
    ["bottle_id", "title", "author_name", "author_email"],
)
def prescription_open(reach: Reach, **values: str) -> str:
    return texts.prescription_opened(services.prescription_open(reach=reach, **values))


@tool("prescription_close", "Close a prescription when its work is done. Closing a closed one changes nothing.",
      {"id": ID}, ["id"], idempotent=True)
def prescription_close(reach: Reach, id: str) -> str:
    return texts.prescription_closed(services.prescription_close(reach=reach, prescription_id=id))


@tool("prescription_reopen", "Reopen a closed prescription so its pills can be added to, revised or discarded. "
      "Reopening an open one changes nothing.", {"id": ID}, ["id"], idempotent=True)
def prescription_reopen(reach: Reach, id: str) -> str:
    return texts.prescription(services.prescription_reopen(reach=reach, prescription_id=id))


@tool("prescription_read", "Read a prescription: title, status (open/closed), dates and author.",
      {"id": ID}, ["id"], read_only=True)
def prescription_read(reach: Reach, id: str) -> str:
    rx, alias = selectors.prescription_get(reach=reach, prescription_id=id)
    services.count_view(type(rx), alias, rx.pk)
    return texts.prescription(rx)


@tool(
    "prescription_context",
    "The pills of one prescription, newest first: id, compound, title and the first 300 characters of each "
    "(newlines shown as \\n). Use after bottle_context to dig into a session; pill_read gives a whole pill. "
    "An unknown prescription gives an empty answer; another kind of id (a bottle's, a pill's) is refused "
    "with not_found saying which kind it is.",
    {"prescription_id": ID, "limit": _limit(30, 200, "pills")}, ["prescription_id"], read_only=True,
)
def prescription_context(reach: Reach, prescription_id: str, limit: int) -> str:
    context = selectors.prescription_context(reach=reach, prescription_id=prescription_id, limit=limit)
    if context is not None:
        services.count_view(type(context.prescription), context_alias(reach, context), context.prescription.pk)
    return texts.prescription_context(context)


def context_alias(reach: Reach, context: selectors.PrescriptionContext) -> str:
    return context.prescription._state.db or GLOBAL


@tool("prescription_discard", "Discard (archive) a prescription together with all its pills, and close it. "
      "People can restore them.", {"id": ID}, ["id"], destructive=True, idempotent=True)
def prescription_discard(reach: Reach, id: str) -> str:
    rx, count = services.prescription_discard(reach=reach, prescription_id=id)
    return texts.prescription_discarded(rx, count)


# ---------------------------------------------------------------- bottles


@tool(
    "bottle_create",
    "Create a bottle (a project's memory). scope local (default) keeps it in .pillbox/pillbox.db in the "
    "directory the agent works in, next to the code; scope global keeps it in the global database (the only "
    "choice for remote agents). The directory is never an argument. Inside a directory tree that already has "
    "a bottle it is refused unless nested is true. Returns the bottle's id.",
    {"name": _string(1, 255, "Slug: lowercase letters, digits and single hyphens, usually the folder name."),
     "display_name": _string(1, 255, "Human-readable name."),
     "scope": {"type": "string", "enum": ["local", "global"], "default": "local",
               "description": "local (next to the code, default) or global."},
     "nested": {"type": "boolean", "default": False,
                "description": "Create a local bottle even though a parent directory already holds one (a "
                               "separate memory for a sub-project). Without it that is refused with "
                               "already_exists naming the enclosing bottle."}},
    ["name", "display_name"],
)
def bottle_create(reach: Reach, name: str, display_name: str, scope: str, nested: bool) -> str:
    bottle = services.bottle_create(reach=reach, name=name, display_name=display_name, scope=scope, nested=nested)
    return texts.bottle_created(bottle, hide_paths=reach.hide_paths)


@tool(
    "bottle_context",
    "Index of a bottle's prescriptions, newest first: id, open/closed, title, dates and pill count. Use at the "
    "start of a session to see what work exists; prescription_context shows one prescription's pills.",
    {"bottle_id": BOTTLE_ID, "limit": _limit(30, 200, "prescriptions")}, ["bottle_id"], read_only=True,
)
def bottle_context(reach: Reach, bottle_id: str, limit: int) -> str:
    context = selectors.bottle_context(reach=reach, bottle_id=bottle_id, limit=limit)
    services.count_view(type(context.bottle), context.bottle._state.db or GLOBAL, context.bottle.pk)
    return texts.bottle_context(context)


@tool("bottle_list", "List your bottles with scope, id, name (bottle_id takes the id or the name) and directory "
      "(a global bottle has none). ● the database is there; ○ [unlinked] its file no longer exists; [not read: …] "
      "the file there is not one you made or adopted (bottle_vinculate adopts it) or it was refused; '← this "
      "directory' marks the bottle of the directory you work in (found upwards, as git finds .git).", {},
      read_only=True)
def bottle_list(reach: Reach) -> str:
    return texts.bottle_list(selectors.bottle_list(reach=reach), here=reach.current_path, hide_paths=reach.hide_paths)


@tool(
    "bottle_vinculate",
    "Link an existing local bottle (a directory holding .pillbox/pillbox.db, e.g. made by another user of "
    "this machine) into your registry. Answers status: linked, or already_linked, and the directory it "
    "resolved. A memory your Pillbox did not make on this machine (one committed in a cloned repository, "
    "another user's) is adopted by this call, and only by it or by the person running `pillbox-todos adopt`: "
    "until then it is not read, searched or registered. Adopt one only when the person you work for asked you "
    "to, after they looked at it; the answer's origin line says it was adopted.",
    {"directory": _string(1, 4096, "The directory holding .pillbox/pillbox.db: absolute, or relative to the "
                                   "working directory (default: the working directory itself).")},
    idempotent=True,
)
def bottle_vinculate(reach: Reach, directory: str | None = None) -> str:
    bottle, registration, created, owned = services.bottle_vinculate(reach=reach, directory=directory)
    base = reach.caller.workdir
    relative = directory is not None and base is not None and not Path(directory).expanduser().is_absolute()
    return texts.bottle_linked(bottle, registration.db_path, created, owned=owned,
                               resolved_from=base.resolve() if relative and base is not None else None)


TOOLSET = ToolSet(
    name="pillbox",
    version="0.1.0",
    instructions=(
        "Pillbox is long-term memory for coding agents. A bottle is a project; a prescription is a work session "
        "in it; pills are the memory entries written during a session; capsules are memory shared by all "
        "projects. Start with bottle_list (or bottle_create), read bottle_context, open a prescription, store "
        "pills as you learn things worth keeping, search with pill_search, and close the prescription at the end. "
        "When a new pill replaces older ones (a changed decision, a stale fact), name them in supersedes: searches "
        "and contexts then leave them out."
    ),
    tools=tuple(TOOLS),
    internal_error_text="error: internal_error\nmessage: Something went wrong on the server; it has been logged. "
                        "Try again, and report it if it keeps happening.",
    warm_up=loader.preload,
)

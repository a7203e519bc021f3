"""How the tidy-up answers an agent (pill_duplicates, pill_tidy, pill_tidy_undo): plain `key: value` text, pure."""

from __future__ import annotations

from pillbox.ids import short
from pillbox.models import Tidy
from pillbox.shaping import one_line
from pillbox.texts import day, lines, plural
from pillbox.tidying import Member, Plan


def _member(member: Member) -> str:
    read = f", read {plural(member.views, 'time')}" if member.views else ""
    return f"{short(member.id)} · {one_line(member.title, 120)} · {day(member.created_at)}{read} — {member.why}"


def plan(found: Plan) -> str:
    how = "by text and by meaning" if found.by_meaning and found.meaning_note is None else "by text"
    header: list[tuple[str, object]] = [("bottle", one_line(found.bottle.name)),
                                        ("looked_at", f"{plural(found.looked_at, 'pill')} ({how})")]
    if found.meaning_note:
        header.append(("meaning", found.meaning_note))
    if found.record is None:
        return lines(header) + "\n\nNo duplicates found: nothing to tidy."
    header += [("plan", short(found.record.id)), ("groups", len(found.groups)),
               ("would_supersede", plural(sum(len(group.others) for group in found.groups), "pill"))]
    blocks = [lines(header)]
    for group in found.groups:
        rows = [f"group: {group.number}", f"keep: {_member(group.keeper)}"]
        rows += [f"supersede: {_member(other)}" for other in group.others]
        blocks.append("\n".join(rows))
    blocks.append(f"Nothing has changed. pill_tidy with plan_id {short(found.record.id)} applies it (all groups, or "
                  "those named in groups); each keeper then supersedes the rest of its group, and pill_tidy_undo "
                  "brings them back.")
    return "\n\n".join(blocks)


def applied(tidy: Tidy) -> str:
    return lines([
        ("tidy", short(tidy.id)), ("plan", short(tidy.plan_id)),
        ("groups", ", ".join(map(str, tidy.group_numbers))),
        ("superseded", f"{plural(len(tidy.after), 'pill')}, each by its group's keeper; nothing was deleted"),
        ("undo", f"pill_tidy_undo with tidy_id {short(tidy.id)}"),
    ])


def undone(tidy: Tidy) -> str:
    return lines([
        ("tidy", short(tidy.id)), ("status", "undone"),
        ("restored", f"{plural(len(tidy.before), 'pill')}, each superseded as before the tidy (by none, unless it "
                     "was then)"),
    ])

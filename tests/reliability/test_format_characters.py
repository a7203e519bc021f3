"""Hole 6 of the fourth round (in part): Unicode format characters in ids, tags, names and ``by``.

A right-to-left override (U+202E) or a zero-width space (U+200B) was taken in a todo's id, its tags and a claimer's
name, and shown reversed or not at all; Pillbox took them in bottle names and compounds. Now every such field
refuses them, naming the character and where it is (counted from 1), through the SDK's client over stdio, and
the free text of names, descriptions and contents keeps them (emoji are joined with U+200D).
"""

from __future__ import annotations

from tests.clients import run, stdio_client, text_of
from tests.todos.helpers import call, ids, put

RLO, ZWSP, BOM, ZWJ = "\u202e", "\u200b", "\ufeff", "\u200d"
FAMILY = f"\U0001f468{ZWJ}\U0001f469{ZWJ}\U0001f467"


def _invisible(field: str, code: str, position: int) -> str:
    return f"{field} must not contain an invisible formatting character (U+{code}) at position {position}"


def test_todos_refuse_format_characters_in_ids_tags_and_claimers_over_stdio(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> dict[str, str]:
        async with stdio_client("todos", home=home, cwd=cwd, user="alice", name=f"Claude{ZWSP} Code") as client:
            answers = {
                "id": await call(client, "put_todo", id=f"pay{RLO}lacipyt", name="Pay", description=""),
                "tags": await call(client, "put_todo", id="pay", name="Pay", description="", tags=[f"urgent{ZWSP}"]),
                "links": await call(client, "put_todo", id="pay", name="Pay", description="", links=[f"{BOM}root"]),
                "blockedBy": await call(client, "put_todo", id="pay", name="Pay", description="",
                                        blockedBy=[f"a{ZWSP}"]),
                "tag": await call(client, "list_todos", tag=f"ur{RLO}gent"),
                "under": await call(client, "list_todos", under=f"ro{ZWSP}ot"),
            }
            assert await ids(client) == []  # nothing was written by a refused call
            await put(client, "family-trip", f"Plan the {FAMILY} trip", f"Who: {FAMILY}")
            answers["by"] = await call(client, "claim_todo", id="family-trip", by=f"bo{ZWSP}b")
            # The client's own name (Claude<U+200B> Code) becomes a claimer without the invisible character.
            claimed = await call(client, "claim_todo", id="family-trip")
            assert not claimed.is_error, claimed.text
            got = await call(client, "get_todo", id="family-trip")
            return {field: answer.text for field, answer in answers.items()} | {
                "claimedBy": claimed.data["claimedBy"], "name": got.data["name"]
            }

    answers = run(scenario())
    assert answers.pop("claimedBy") == "Claude-Code"
    assert answers.pop("name") == f"Plan the {FAMILY} trip"  # free text keeps its joiners
    assert answers == {
        "id": _invisible("id", "202E", 4),
        "tags": _invisible("tags item 0", "200B", 7),
        "links": _invisible("links item 0", "FEFF", 1),
        "blockedBy": _invisible("blockedBy item 0", "200B", 2),
        "tag": _invisible("tag", "202E", 3),
        "under": _invisible("under", "200B", 3),
        "by": _invisible("by", "200B", 3),
    }


def test_pillbox_refuses_format_characters_in_ids_and_names_over_stdio(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> dict[str, str]:
        async with stdio_client("pillbox", home=home, cwd=cwd, PILLBOX_HOME=str(home / ".pillbox")) as client:

            async def text(tool: str, **arguments: object) -> str:
                return text_of(await client.call_tool(tool, arguments))

            answers = {
                "name": await text("bottle_create", name=f"deploy{RLO}", display_name="Deploy", scope="global"),
                "display_name": await text("bottle_create", name="deploy", display_name=f"De{ZWSP}ploy",
                                           scope="global"),
                "compound": await text("capsule_store", title="Habit", content="Use UTC.", compound=f"con{ZWSP}v"),
                "id": await text("capsule_read", id=f"0123{ZWSP}4567"),
                "bottle_id": await text("pill_search", query="deploy", bottle_id=f"{BOM}deploy"),
                "listed": await text("bottle_list"),
            }
            stored = await text("capsule_store", title=f"The {FAMILY} rule", content=f"For {FAMILY}: UTC.",
                                compound="convention")
            answers["kept"] = await text("capsule_read", id=stored.split("id: ")[1].split()[0])
            return answers

    answers = run(scenario())
    for field, code, position in (("name", "202E", 7), ("display_name", "200B", 3), ("compound", "200B", 4),
                                  ("id", "200B", 5), ("bottle_id", "FEFF", 1)):
        assert answers[field].startswith("error: validation_error\n"), answers[field]
        assert f"\n{_invisible(f'{field}:', code, position)}" in answers[field], answers[field]
    assert "deploy" not in answers["listed"]  # the refused bottle was not made
    assert f"The {FAMILY} rule" in answers["kept"] and f"For {FAMILY}: UTC." in answers["kept"]

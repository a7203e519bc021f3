"""The compact and tree views: sub-tasks under their parent, and a ranking or an order no view regroups."""

from __future__ import annotations

from typing import Any

from mcp.client import Client

from tests.todos.helpers import TODO_KEYS, ids, put
from tests.todos.planning.common import ok


async def scenario_views(client: Client) -> None:
    await put(client, "vw-root", "Remodel the basement", "All of it", priority="high", deadlineAt="2030-03-01")
    await put(client, "vw-walls", "Drywall", "Four walls", links=["vw-root"], deadlineAt="2030-02-01T17:30:00Z")
    await put(client, "vw-paint", "Paint the walls", links=["vw-walls", "vw-root"], tags=["diy"])
    await put(client, "vw-light", "Lighting", priority="low", links=["vw-root"], blockedBy=["vw-walls"])
    await put(client, "vw-done", "Buy tools", links=["vw-root"])
    await ok(client, "complete_todo", id="vw-done")
    default = await ok(client, "list_todos", under="vw-root", includeCompleted=True)
    compact = await ok(client, "list_todos", under="vw-root", includeCompleted=True, view="compact")
    assert compact.text == "\n".join(
        [
            "vw-root · high · 2030-03-01 · Remodel the basement",
            "  vw-walls · medium · 2030-02-01 17:30 · Drywall",
            "    vw-paint · medium · - · Paint the walls #diy",
            "  vw-light · low · - · Lighting [blocked by vw-walls]",
            "  vw-done · medium · - · Buy tools [done]",
        ]
    )
    # The same todos as JSON travel in structured content, for programs.
    assert compact.structured == {"todos": default.data}
    assert len(compact.text) * 3 <= len(default.text)
    tree = await ok(client, "list_todos", under="vw-root", includeCompleted=True, view="tree")
    assert [todo["id"] for todo in tree.data] == ["vw-root"]
    root = tree.data[0]
    assert list(root) == [*TODO_KEYS, "subtasks"]
    assert [child["id"] for child in root["subtasks"]] == ["vw-walls", "vw-light", "vw-done"]
    walls = root["subtasks"][0]
    assert [child["id"] for child in walls["subtasks"]] == ["vw-paint"] and "subtasks" not in walls["subtasks"][0]
    assert walls["subtasks"][0]["tags"] == ["diy"] and root["subtasks"][1]["blockedBy"] == ["vw-walls"]
    assert tree.structured == {"todos": tree.data}
    # A search lists its hits in rank order in every view; a sub-task names its parent when both were found.
    found = await ok(client, "search_todos", query="walls", under="vw-root", view="compact")
    ranked = await ids(client, "search_todos", query="walls", under="vw-root")
    assert [line.split(" · ")[0] for line in found.text.splitlines()] == ranked == ["vw-paint", "vw-walls"]
    assert found.text.splitlines()[0].endswith("#diy (in: Drywall)")
    deleted = await ok(client, "delete_todo", id="vw-light")
    assert deleted.data["blockedBy"] == ["vw-walls"]
    shown = await ok(client, "list_todos", under="vw-root", includeDeleted=True, view="compact")
    assert shown.text.splitlines()[-1] == "  vw-light · low · - · Lighting [deleted]"
    assert (await ok(client, "list_todos", under="vw-done", view="compact")).text == "No todos."


async def scenario_ranked_views(client: Client) -> None:
    """The best match stays first in compact and tree: a sub-task found before its parent is not moved under it."""
    await put(client, "rk-root", "Ship version two", "Tag it, then announce the notes")
    await put(client, "rk-notes", "Write the release notes", "What changed since one", links=["rk-root"])
    await put(client, "rk-other", "Release checklist", "Notes for next time")
    ranked = await ids(client, "search_todos", query="relase notes", under="rk-root")
    assert ranked[0] == "rk-notes" and "rk-root" in ranked  # the sub-task ranks before its parent
    compact = (await ok(client, "search_todos", query="relase notes", under="rk-root", view="compact")).text
    assert [line.split(" · ")[0] for line in compact.splitlines()] == ranked
    assert compact.splitlines()[0].endswith("Write the release notes (in: Ship version two)")
    tree = await ok(client, "search_todos", query="relase notes", under="rk-root", view="tree")
    assert [todo["id"] for todo in tree.data] == ranked and not any("subtasks" in todo for todo in tree.data)
    everywhere = await ok(client, "search_todos", query="relase notes", view="compact")
    assert [line.split(" · ")[0] for line in everywhere.text.splitlines()] == \
        await ids(client, "search_todos", query="relase notes")


def _tree_edges(nodes: list[dict[str, Any]], parent: str | None = None) -> list[tuple[str | None, str]]:
    """(parent id, id) for every node of a tree answer, depth first, checking each node is a Todo plus subtasks."""
    edges: list[tuple[str | None, str]] = []
    for node in nodes:
        extra = [key for key in node if key not in TODO_KEYS]
        assert set(extra) <= {"tags", "blockedBy", "subtasks"} and list(node)[: len(TODO_KEYS)] == TODO_KEYS
        assert node.get("subtasks", [None]) != []  # present only when not empty
        edges.append((parent, node["id"]))
        edges += _tree_edges(node.get("subtasks", []), node["id"])
    return edges


async def scenario_tree_on_search_and_next(client: Client) -> None:
    """view "tree" on search_todos and next_todos: the same todos as the JSON, nested under the parents found."""
    await put(client, "tr-house", "Paint the house", "Outside first", priority="low")
    await put(client, "tr-walls", "Paint the walls", links=["tr-house"], priority="high")
    await put(client, "tr-trim", "Paint the trim", links=["tr-walls", "tr-house"], tags=["detail"])
    await put(client, "tr-shop", "Buy brushes", links=["tr-house"])
    await put(client, "tr-dry", "Let it dry", links=["tr-house"], priority="high", blockedBy=["tr-walls"])
    # search_todos: the hits in rank order, in the tree view too (a ranking is not regrouped under parents;
    # each hit's links still name its parent).
    flat = await ok(client, "search_todos", query="paint", under="tr-house")
    tree = await ok(client, "search_todos", query="paint", under="tr-house", view="tree")
    assert {todo["id"] for todo in flat.data} == {"tr-house", "tr-walls", "tr-trim"}
    assert tree.data == flat.data and _tree_edges(tree.data) == [(None, todo["id"]) for todo in flat.data]
    trim = {todo["id"]: todo for todo in tree.data}["tr-trim"]
    assert trim["links"] == ["tr-walls", "tr-house"] and trim["tags"] == ["detail"]
    # Only the sub-task was found: it is a root of the answer (its parent is not in it), with no subtasks key.
    alone = await ok(client, "search_todos", query="trim", under="tr-house", view="tree")
    assert [todo["id"] for todo in alone.data] == ["tr-trim"] and list(alone.data[0]) == [*TODO_KEYS, "tags"]
    assert (await ok(client, "search_todos", query="zqxjv wqpfz", under="tr-house", view="tree")).text == "[]"
    # next_todos: tr-house and tr-walls wait on their pending sub-tasks, tr-dry is blocked: none is next. tr-trim
    # takes the place of tr-walls (high) before tr-shop; each is a root of the tree, its parent not in the answer.
    order = ["tr-trim", "tr-shop"]
    assert await ids(client, "next_todos", under="tr-house") == order
    nested = (await ok(client, "next_todos", under="tr-house", view="tree")).data
    assert _tree_edges(nested) == [(None, "tr-trim"), (None, "tr-shop")]
    # Once tr-trim is done, tr-walls has no pending sub-task left: it is next again, and the tree nests nothing.
    await ok(client, "complete_todo", id="tr-trim")
    assert await ids(client, "next_todos", under="tr-house") == ["tr-walls", "tr-shop"]
    cut = (await ok(client, "next_todos", under="tr-house", view="tree", limit=1)).data
    assert _tree_edges(cut) == [(None, "tr-walls")]
    await ok(client, "reopen_todo", id="tr-trim")
    assert (await ok(client, "next_todos", under="tr-shop", tag="detail", view="tree")).text == "[]"

"""Sub-tasks under their root: a todo's first link to another todo of the same section is its parent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from todos.models import Todo


@dataclass
class Node:
    todo: Todo
    children: list[Node] = field(default_factory=list)


def todo_tree(todos: Sequence[Todo]) -> list[Node]:
    """Roots in the order given, each with its sub-tasks (in the order given) under it.

    Links are written by agents, so they may form a cycle (a → b → a); the todo where a cycle is found is
    shown as a root, so every todo appears exactly once.
    """
    keys = {todo.key for todo in todos}
    parent = {}
    for todo in todos:
        found = next((link for link in todo.links if link != todo.key and link in keys), None)
        if found is not None:
            parent[todo.key] = found
    for key in list(parent):
        seen = {key}
        step = parent.get(key)
        while step is not None:
            if step in seen:
                del parent[key]
                break
            seen.add(step)
            step = parent.get(step)
    nodes = {todo.key: Node(todo) for todo in todos}
    roots = []
    for todo in todos:
        if todo.key in parent:
            nodes[parent[todo.key]].children.append(nodes[todo.key])
        else:
            roots.append(nodes[todo.key])
    return roots

"""Sub-tasks under their root: a todo's first link to another todo of the same section is its parent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from todos.models import Todo
from todos.planning import parents


@dataclass
class Node:
    todo: Todo
    children: list[Node] = field(default_factory=list)


def todo_tree(todos: Sequence[Todo]) -> list[Node]:
    """Roots in the order given, each with its sub-tasks (in the order given) under it.

    Links are written by agents, so they may form a cycle (a → b → a); the todo where a cycle is found is
    shown as a root, so every todo appears exactly once.
    """
    parent = parents({todo.key: todo.links for todo in todos})
    nodes = {todo.key: Node(todo) for todo in todos}
    roots = []
    for todo in todos:
        if todo.key in parent:
            nodes[parent[todo.key]].children.append(nodes[todo.key])
        else:
            roots.append(nodes[todo.key])
    return roots

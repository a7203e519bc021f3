"""The ``start_workspace`` prompt: a root todo for a premise, then the sub-tasks the user names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from mcp_bridge.tools import Prompt, PromptArgument, ToolFailure
from todos import rules

PREMISE_MAX = 2000


def start_workspace(arguments: Mapping[str, str]) -> list[tuple[Literal["user", "assistant"], str]]:
    premise = arguments.get("premise")
    if not isinstance(premise, str) or not premise.strip():
        raise ToolFailure("premise is required")
    if problem := rules.text_problem("premise", premise, low=1, high=PREMISE_MAX, multiline=True):
        raise ToolFailure(problem)
    text = (
        f"Let's start a workspace for this premise:\n\n{premise.strip()}\n\n"
        "1. Create the root todo with put_todo. Give it a short, descriptive kebab-case id derived from the "
        "premise (lowercase words joined by hyphens, e.g. `remodel-basement`), a name that states the goal, "
        "and a description that records the premise.\n"
        "2. Show me the root todo's id.\n"
        "3. Ask me for the sub-tasks. Create each one with put_todo, with its own kebab-case id and "
        '`links: ["<root id>"]` so it hangs under the root todo.\n'
        "4. Other agents and I may work on this list too: take each todo to work on with claim_next (with "
        '`under: "<root id>"`): it claims the next free todo for you in one call, so no two agents take the same '
        "one. Keep the leaseToken it answers: renew the claim with claim_todo on long work, and complete_todo the "
        "todo when done or release_todo it if you stop, passing that leaseToken. A todo another agent holds is "
        "theirs: leave it, unless I ask you to take it over (force: true)."
    )
    return [("user", text)]


PROMPTS = (
    Prompt(
        name="start_workspace",
        title="Start a workspace",
        description="Start a workspace from a premise: create a root todo, show its id, then add the "
        "sub-tasks the user names, each linked to the root.",
        arguments=(
            PromptArgument(
                name="premise", description='The goal of the workspace, e.g. "we are going to remodel the basement".'
            ),
        ),
        render=start_workspace,
    ),
)

"""Who an agent is when it claims and writes: its claimer name (``by``, else what the connection or its credential
tells), the lease token it presents (``leaseToken``, else the one this stdio connection was answered), and
``force``. The schemas of those arguments, shared by the claims tools and the writes."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from accounts.models import ApiKey
from mcp_bridge.tools import Caller, ToolFailure
from todos import rules
from todos.leases import Holder
from todos.models import Todo

BY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": rules.CLAIMER_MAX,
    "pattern": r"^\S+$",
    "description": "A short name for yourself that tells you apart from the user's other agents, e.g. "
    "`claude-code@shop` or `codex-task-42`; use the same one for every claim. Default: your MCP client's name "
    "(over HTTP: the name of the API key or OAuth client you connect with).",
}
LEASE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 100,
    "pattern": r"^\S+$",
    "description": "The leaseToken your claim_todo or claim_next answered: it proves the claim is yours. Not "
    "needed on the same stdio connection that claimed with the same by.",
}
FORCE_SCHEMA: dict[str, Any] = {
    "type": "boolean",
    "default": False,
    "description": "Go ahead on a todo another agent holds, ending their claim (the answer's endedClaim names "
    "them). Only when the user asks you to or the holder is surely gone.",
}
HOLDER_FIELDS: dict[str, Any] = {"leaseToken": LEASE_SCHEMA, "force": FORCE_SCHEMA}
NO_NAME = (
    "by is required here: neither this connection nor its credential tells a name for you; pass by, a short name "
    "for yourself (e.g. claude-code@shop, the same for every claim), or have the user name the API key (account "
    "page, or pillbox-todos createkey NAME --label L)"
)

# One stdio process serves one connection of one user: the lease tokens its claims were answered are kept here, so
# the same ``by`` on this connection renews, releases and writes as the holder without repeating the token. Over
# HTTP nothing is kept: requests stand alone, and the token must be presented.
STDIO_LEASES_MAX = 1000
_stdio_leases: OrderedDict[tuple[int, str], tuple[str, str]] = OrderedDict()


def _credential_name(caller: Caller) -> str | None:
    """The name of the API key or the OAuth client the caller connected with, as a claimer; None when unnamed."""
    credential = caller.credential
    name = None
    if credential is not None and credential.api_key_id is not None:
        name = ApiKey.objects.filter(pk=credential.api_key_id).values_list("name", flat=True).first()
    elif credential is not None and credential.application_id is not None:
        from oauth2_provider.models import get_application_model

        application = get_application_model().objects.filter(pk=credential.application_id).first()
        name = application.name if application is not None else None
    return rules.claimer_name(name) if name else None


def claimer(caller: Caller, values: Mapping[str, Any], *, required: bool = True) -> str | None:
    """``by`` as given; else over HTTP the credential's name, then the MCP client's; else (when required) a
    refusal saying what to send."""
    if values.get("by") is not None:
        given: str = values["by"]
        return given
    client = rules.claimer_name(caller.client_name) if caller.client_name else None
    name = (_credential_name(caller) or client) if caller.transport == "http" else client
    if name is None and required:
        raise ToolFailure(NO_NAME)
    return name


def required_claimer(caller: Caller, values: Mapping[str, Any]) -> str:
    name = claimer(caller, values)
    assert name is not None
    return name


def lease_token(caller: Caller, values: Mapping[str, Any], key: str, *, by: str | None = None) -> str | None:
    """The token presented, else the one this stdio connection's claim of ``key`` was answered (by ``by``, when
    given)."""
    if values.get("leaseToken"):
        token: str = values["leaseToken"]
        return token
    if caller.transport != "stdio":
        return None
    kept = _stdio_leases.get((caller.user.pk, key))
    return kept[1] if kept is not None and (by is None or kept[0] == by) else None


def holder(caller: Caller, values: Mapping[str, Any], key: str) -> Holder:
    return Holder(token=lease_token(caller, values, key), force=bool(values.get("force")))


def remember(caller: Caller, todo: Todo, by: str) -> None:
    """Keep the token a new lease answered, on a stdio connection."""
    token = getattr(todo, "lease_token", None)
    if caller.transport == "stdio" and token:
        _stdio_leases[(caller.user.pk, todo.key)] = (by, token)
        _stdio_leases.move_to_end((caller.user.pk, todo.key))
        while len(_stdio_leases) > STDIO_LEASES_MAX:
            _stdio_leases.popitem(last=False)

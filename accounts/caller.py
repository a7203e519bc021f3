"""Who is calling: the authenticated user behind one request to an agent interface, and what authenticated them.

The accounts' concept, shared by every interface that authenticates an agent: the MCP bridge hands a ``Caller``
to each tool, the REST API keeps it as ``request.auth``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.http import HttpRequest

    class PersonRequest(HttpRequest):
        """A request from a signed-in person: a view behind login_required, or the admin (staff only)."""

        user: User


@dataclass(frozen=True)
class Credential:
    """What authenticated a caller, so that anything handed out to it (a /list link) dies with it."""

    kind: Literal["api_key", "oauth", "stdio", "session"]
    api_key_id: int | None = None
    application_id: int | None = None
    access_token_id: int | None = None


@dataclass(frozen=True)
class Caller:
    """The authenticated user behind one request from an agent (MCP or REST API), and where their agent works.

    ``workdir`` is the process directory for stdio (or the client's first root), ``PILLBOX_ROOT`` over HTTP,
    or ``None`` when there is no working directory. ``presented_key`` is the API key the request carried
    (never shown back unless the caller presented it).
    """

    user: User
    transport: Literal["stdio", "http"]
    workdir: Path | None = None
    request: HttpRequest | None = None
    presented_key: str | None = None
    presented_uid: str | None = None
    credential: Credential | None = None
    # The name the MCP client gave itself (clientInfo.name) when the connection tells it: the handshake over stdio,
    # each request's envelope over HTTP at 2026-07-28. A stateless HTTP request of an older version carries none.
    client_name: str | None = None

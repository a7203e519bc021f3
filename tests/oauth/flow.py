"""Driving the real OAuth flow: the SDK's OAuthClientProvider as the MCP client, httpx2 as the person's browser."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.oauth.urls import REDIRECT_URI

PASSWORD = "correct horse battery staple"
INPUT = re.compile(r"<input\b[^>]*>", re.IGNORECASE)
ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class OAuthSite:
    url: str

    def resource(self, path: str) -> str:
        return self.url + path


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def form_inputs(page: str) -> dict[str, str]:
    """name -> value of every <input> with a name (hidden fields, the CSRF token)."""
    inputs = {}
    for tag in INPUT.findall(page):
        attributes = {key.lower(): html.unescape(value) for key, value in ATTRIBUTE.findall(tag)}
        if "name" in attributes and attributes.get("type", "text") in ("hidden", "text"):
            inputs[attributes["name"]] = attributes.get("value", "")
    return inputs


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


@dataclass
class Browser:
    """A person at a browser: signs in on the branded login page, then allows (or denies) on the consent page."""

    site: str
    username: str
    password: str = PASSWORD
    allow: bool = True
    pages: list[str] = field(default_factory=list)

    async def authorize(self, authorization_url: str) -> httpx2.Response:
        """Open the authorization URL as a signed-in user and answer the consent page: the response is the
        authorization server's redirect back to the client."""
        async with httpx2.AsyncClient(base_url=self.site, timeout=30) as http:
            await self.sign_in(http, next_url=authorization_url)
            consent = await http.get(authorization_url)
            assert consent.status_code == 200, consent.text
            self.pages.append(consent.text)
            data = form_inputs(consent.text)
            if self.allow:
                data["allow"] = "true"
            return await http.post(authorization_url, data=data)

    async def sign_in(self, http: httpx2.AsyncClient, *, next_url: str = "/") -> None:
        parts = urlsplit(next_url)
        next_path = parts.path + (f"?{parts.query}" if parts.query else "")
        login = await http.get("/accounts/login/", params={"next": next_path})
        assert login.status_code == 200, login.text
        self.pages.append(login.text)
        data = form_inputs(login.text)
        data.update(username=self.username, password=self.password, next=next_path)
        signed_in = await http.post("/accounts/login/", data=data)
        assert signed_in.status_code == 302, signed_in.text
        assert signed_in.headers["location"] == next_path


def client_metadata(**overrides: Any) -> OAuthClientMetadata:
    values: dict[str, Any] = {
        "client_name": "SDK test client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    values.update(overrides)
    return OAuthClientMetadata(**values)


@dataclass
class SdkRun:
    storage: MemoryStorage
    requests: list[tuple[str, str, int]]  # (method, path, status) of every HTTP exchange, in order
    result: Any


async def call_with_oauth(
    url: str,
    tool: str,
    browser: Browser,
    *,
    arguments: dict[str, Any] | None = None,
    storage: MemoryStorage | None = None,
    client_metadata_url: str | None = None,
) -> SdkRun:
    """Connect the SDK client to the MCP endpoint at ``url`` with OAuth and call ``tool``."""
    storage = storage or MemoryStorage()
    codes: list[AuthorizationCodeResult] = []
    exchanges: list[tuple[str, str, int]] = []

    async def redirect_handler(authorization_url: str) -> None:
        response = await browser.authorize(authorization_url)
        assert response.status_code == 302, response.text
        params = query_of(response.headers["location"])
        codes.append(AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss")))

    async def callback_handler() -> AuthorizationCodeResult:
        return codes.pop()

    async def record(response: httpx2.Response) -> None:
        exchanges.append((response.request.method, response.request.url.path, response.status_code))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=client_metadata(),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            result = await client.call_tool(tool, arguments or {})
    return SdkRun(storage=storage, requests=exchanges, result=result)

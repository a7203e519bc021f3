"""One policy for OAuth clients, applied wherever DOT validates an application.

Every path that creates or changes a client — dynamic registration (RFC 7591), its update endpoint (RFC 7592
``PUT /o/register/<id>/``), client ID metadata documents, the admin — ends in ``Application.full_clean()``.
``install()`` (from ``AccountsConfig.ready``) extends DOT's ``Application.clean`` with this policy, so none of those
paths can store what the policy refuses:

- redirect URIs: ``https``; ``http`` only on a loopback host (RFC 8252 native apps); a private-use scheme only if
  the operator listed it in ``OAUTH_REDIRECT_URI_SCHEMES`` (``cursor``, ``vscode`` by default); never a fragment,
  whitespace or control characters;
- grant types: the authorization code (refresh tokens come with it); no client credentials, password, implicit
  or device grants.

The JSON views add one check the model cannot make: DOT joins the ``redirect_uris`` array with spaces, so an
element holding a space would become two URIs; ``metadata_problem`` refuses such an element first.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from oauth2_provider.settings import oauth2_settings

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
GRANT_TYPES = {"authorization_code", "refresh_token"}
RESPONSE_TYPES = {"code"}


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI, or None."""
    if not uri or any(character.isspace() or ord(character) < 32 or ord(character) == 127 for character in uri):
        return f"redirect URI {uri!r} must be one URI without whitespace or control characters"
    try:
        parts = urlsplit(uri)
        hostname = parts.hostname
    except ValueError:
        return f"redirect URI {uri!r} is not a valid URI"
    scheme = parts.scheme.lower()
    if "#" in uri:
        return f"redirect URI {uri!r} must not have a fragment"
    if scheme == "https":
        return None if hostname else f"redirect URI {uri!r} has no host"
    if scheme == "http":
        if hostname in LOOPBACK_HOSTS:
            return None
        return f"redirect URI {uri!r}: http is only allowed for loopback hosts (127.0.0.1, ::1, localhost)"
    private = {value.lower() for value in oauth2_settings.ALLOWED_REDIRECT_URI_SCHEMES} - {"http", "https"}
    if scheme in private:
        return None
    return f"redirect URI {uri!r}: use https, http on a loopback host, or one of: {', '.join(sorted(private))}"


def metadata_problem(data: Any) -> str | None:
    """Why RFC 7591 client metadata (a registration or an update) is refused, or None."""
    if not isinstance(data, dict):
        return "the request body must be a JSON object"
    grant_types = data.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list) and set(map(str, grant_types)) - GRANT_TYPES:
        return "grant_types: only authorization_code (and refresh_token) are supported"
    response_types = data.get("response_types", ["code"])
    if isinstance(response_types, list) and set(map(str, response_types)) - RESPONSE_TYPES:
        return "response_types: only code is supported"
    redirect_uris = data.get("redirect_uris", [])
    if isinstance(redirect_uris, list):
        for uri in redirect_uris:
            if isinstance(uri, str) and (problem := redirect_uri_problem(uri)):
                return problem
    return None


def application_errors(application: Any) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for uri in (application.redirect_uris or "").split():
        if problem := redirect_uri_problem(uri):
            errors.setdefault("redirect_uris", []).append(problem)
    if application.authorization_grant_type != application.GRANT_AUTHORIZATION_CODE:
        errors.setdefault("authorization_grant_type", []).append(
            "only the authorization code grant (with refresh tokens) is allowed"
        )
    return errors


def install() -> None:
    from oauth2_provider.models import get_application_model

    Application = get_application_model()
    if getattr(Application.clean, "client_policy", False):
        return
    dot_clean = Application.clean

    def clean(self: Any) -> None:
        errors: dict[str, list[Any]] = {}
        try:
            dot_clean(self)
        except ValidationError as error:
            errors = error.update_error_dict({})
        for field, messages in application_errors(self).items():
            errors.setdefault(field, []).extend(messages)
        if errors:
            raise ValidationError(errors)

    clean.client_policy = True  # type: ignore[attr-defined]  # a mark: install() runs once however often called
    Application.clean = clean

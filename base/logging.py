"""Secrets never reach a log line: a filter for every handler that rewrites credentials before they are written.

Credentials travel in places that loggers print: the request line of ``django.server`` (``GET /mcp?uid=…&key=…``),
the URL of a ``/list?t=…`` link, an ``Authorization`` header or a key quoted in an exception message. The filter
renders each record's message (and its trace) once, replaces every credential value by ``[scrubbed]`` and hands
the record on with the scrubbed text as its message, so whichever formatter comes next never sees the original.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

SCRUBBED = "[scrubbed]"

# Query/form parameters that carry a credential: API keys, OAuth tokens and codes, /list link tokens (``t``).
_CREDENTIAL_NAMES = frozenset(
    {"key", "api_key", "apikey", "token", "access_token", "refresh_token", "id_token", "client_secret", "password",
     "code", "code_verifier", "registration_access_token", "t"}
)
# Any ``name=value`` pair: the name is judged after percent-decoding, since servers decode it (``k%65y=`` is
# ``key=``, ``%74=`` is ``t=``), so the scrubber must see what the server saw.
_PARAMETER = re.compile(r"(?<![\w%.-])([\w%.+-]{1,64})(=|%3D|%3d)([^&\s\"'<>;,]+)")
# ``Authorization: Bearer xyz`` as a header line, a dict entry ('Authorization': 'Bearer xyz') or a WSGI key.
_AUTHORIZATION = re.compile(
    r"(?i)((?:HTTP_)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?([^\s\"',}]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})")
# An API key anywhere (keys are made as ``pbx_`` + 43 URL-safe characters).
_API_KEY = re.compile(r"\bpbx_[A-Za-z0-9_-]{8,}")


def _decoded_name(name: str) -> str:
    # Decoded repeatedly: a doubly encoded name (``k%2565y``) is decoded twice by some proxies and frameworks.
    for _ in range(3):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return name.strip().lower()


def _scrub_parameter(match: re.Match[str]) -> str:
    if _decoded_name(match.group(1)) not in _CREDENTIAL_NAMES:
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{SCRUBBED}"


def scrub(text: str) -> str:
    """``text`` with every credential value replaced by ``[scrubbed]``."""
    text = _PARAMETER.sub(_scrub_parameter, text)
    text = _AUTHORIZATION.sub(lambda m: f"{m.group(1)}{m.group(2) + ' ' if m.group(2) else ''}{SCRUBBED}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {SCRUBBED}", text)
    return _API_KEY.sub(f"pbx_{SCRUBBED}", text)


class ScrubSecrets(logging.Filter):
    """Attach to handlers (a logger's filters do not see records propagated from its children)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: leave it for logging to report
            return True
        scrubbed = scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True

"""Secrets never reach a log line: a filter for every handler that rewrites credentials before they are written.

Credentials travel in places that loggers print: the request line of ``django.server`` (``GET /mcp?uid=…&key=…``),
the URL of a ``/list?t=…`` link, an ``Authorization`` header or a key quoted in an exception message. The filter
renders each record's message (and its trace) once, replaces every credential value by ``[scrubbed]`` and hands
the record on with the scrubbed text as its message, so whichever formatter comes next never sees the original.
"""

from __future__ import annotations

import logging
import re

SCRUBBED = "[scrubbed]"

# Query/form parameters that carry a credential: API keys, OAuth tokens and codes, /list link tokens (``t``).
_PARAMETER = re.compile(
    r"(?i)(?<![\w-])(key|api_key|apikey|token|access_token|refresh_token|id_token|client_secret|password|code|t)"
    r"(=|%3D)([^&\s\"'<>;,]+)"
)
# ``Authorization: Bearer xyz`` as a header line, a dict entry ('Authorization': 'Bearer xyz') or a WSGI key.
_AUTHORIZATION = re.compile(
    r"(?i)((?:HTTP_)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?([^\s\"',}]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})")
# An API key anywhere (keys are made as ``pbx_`` + 43 URL-safe characters).
_API_KEY = re.compile(r"\bpbx_[A-Za-z0-9_-]{8,}")


def scrub(text: str) -> str:
    """``text`` with every credential value replaced by ``[scrubbed]``."""
    text = _PARAMETER.sub(lambda m: f"{m.group(1)}{m.group(2)}{SCRUBBED}", text)
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

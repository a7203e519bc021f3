"""Markdown written by agents, turned into HTML a person's browser can show safely.

Agents write descriptions and pills; anything they write may have come from a web page or a file the agent
read, so it is untrusted. Markdown passes raw HTML through, so the rendered HTML is sanitised with nh3
(an allowlist: no script, no event attributes, only http(s)/mailto and relative links). Images are dropped:
a page opened by a ``?uid=&key=`` link should not fetch from hosts an agent chose.
"""

from __future__ import annotations

import markdown as markdown_lib
import nh3
from django.utils.safestring import SafeString, mark_safe

EXTENSIONS = ["fenced_code", "tables", "sane_lists", "nl2br"]
TAGS = nh3.ALLOWED_TAGS - {"img", "map", "area"}
ATTRIBUTES = {**nh3.ALLOWED_ATTRIBUTES, "a": {"href", "title", "hreflang"}, "code": {"class"}}
ATTRIBUTES.pop("img", None)
URL_SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str) -> SafeString:
    html = markdown_lib.markdown(text, extensions=EXTENSIONS, output_format="html")
    clean = nh3.clean(
        html,
        tags=TAGS,
        clean_content_tags={"script", "style"},
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitised just above

"""The forms people fill in: they read and check what the page sent; the services do the writing."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from todos import rules
from todos.models import Priority
from todos.timestamps import BadInstant, parse_instant

LINK_SPLIT = re.compile(r"[\s,]+")


def _control_character(text: str, *, multiline: bool) -> str | None:
    for char in text:
        if multiline and char in "\n\t":
            continue
        if unicodedata.category(char) == "Cc":
            return f"U+{ord(char):04X}"
    return None


class TextField(forms.CharField):
    """Browsers send CRLF line ends; agents write LF. Control characters are refused, as the tools refuse them."""

    def __init__(self, *, multiline: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("strip", not multiline)
        super().__init__(**kwargs)
        self.multiline = multiline

    def to_python(self, value: object) -> str | None:
        text = super().to_python(value)
        return text.replace("\r\n", "\n").replace("\r", "\n") if self.multiline and text is not None else text

    def validate(self, value: str) -> None:
        super().validate(value)
        if value and not value.strip():
            raise ValidationError("must not be blank")
        if bad := _control_character(value, multiline=self.multiline):
            raise ValidationError(f"must not contain the control character {bad}")


class TodoForm(forms.Form):
    id = forms.CharField(max_length=128, required=False, strip=True, help_text="Leave empty to make one from the name.")
    name = TextField(max_length=255)
    description = TextField(max_length=20_000, required=False, multiline=True)
    priority = forms.ChoiceField(choices=Priority.choices, required=False)
    deadline = forms.CharField(required=False, help_text="UTC")
    links = forms.CharField(required=False, max_length=20_000)
    tags = forms.CharField(required=False, max_length=2_000)

    def clean_priority(self) -> str:
        return self.cleaned_data["priority"] or Priority.MEDIUM

    def clean_deadline(self) -> datetime | None:
        text = self.cleaned_data["deadline"].strip()
        if not text:
            return None
        try:
            return parse_instant(text)
        except BadInstant:
            raise ValidationError("must be a date or a date and time, like 2026-12-31 or 2026-12-31T17:00") from None

    def clean_links(self) -> list[str]:
        return [link for link in LINK_SPLIT.split(self.cleaned_data["links"]) if link]

    def clean_tags(self) -> list[str]:
        # People type `#backend, UI`; the list keeps `backend` and `ui`, as the tools store them.
        tags = [tag.lstrip("#") for tag in LINK_SPLIT.split(self.cleaned_data["tags"]) if tag.lstrip("#")]
        if problems := rules.tags_problems(tags):
            raise ValidationError(problems[0].replace("tags item", "tag", 1))
        return rules.normal_tags(tags)


class MemoryForm(forms.Form):
    """A pill's or a capsule's editable fields, with the limits the MCP tools enforce."""

    title = TextField(max_length=255)
    compound = TextField(max_length=64)
    content = TextField(max_length=5000, multiline=True)


class KeyForm(forms.Form):
    name = TextField(max_length=100, required=False)


class RepairForm(forms.Form):
    directory = TextField(max_length=4096)

"""Template helpers for the people's pages: Markdown, short ids, names read from a file shaped to one line, where a
bottle's file really is, and the values of a todo's edit form."""

from __future__ import annotations

import uuid
from datetime import datetime

from django import template
from django.utils.safestring import SafeString

from pillbox.ids import short
from pillbox.models import Registration
from pillbox.shaping import one_line
from pillbox.texts import real_directory
from todos.models import Todo
from webui.forms import TodoForm
from webui.markdown import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    return render_markdown(text or "")


@register.filter(name="short_id")
def short_id(value: uuid.UUID) -> str:
    return short(value)


@register.filter(name="one_line")
def one_line_filter(text: str) -> str:
    """A name, a title or a path read from a project's file (anyone's to write): one line, no control or format
    character (U+202E would reverse what follows it on the page)."""
    return one_line(str(text or ""), 4096)


@register.filter(name="real_directory")
def real_directory_filter(entry: Registration) -> str:
    return real_directory(entry)


@register.filter
def utc_input(moment: datetime | None) -> str:
    """The value an <input type="datetime-local"> shows, in UTC (the page says so)."""
    return moment.strftime("%Y-%m-%dT%H:%M") if moment else ""


@register.simple_tag
def todo_fields(todo: Todo, edit_form: TodoForm | None, failed: str) -> dict[str, object]:
    """What the todo's edit form shows: what the person typed when their edit was refused, else the todo."""
    if edit_form is not None and failed == todo.key:
        data = edit_form.data
        return {
            "name": data.get("name", ""),
            "description": data.get("description", ""),
            "priority": data.get("priority", ""),
            "deadline": data.get("deadline", ""),
            "links": data.get("links", ""),
            "tags": data.get("tags", ""),
            "errors": edit_form.errors,
            "open": True,
        }
    return {
        "name": todo.name,
        "description": todo.description,
        "priority": todo.priority,
        "deadline": utc_input(todo.deadline_at),
        "links": ", ".join(todo.links),
        "tags": ", ".join(todo.tags),
        "errors": {},
        "open": False,
    }

"""The memory browser's tidy-up of a bottle: the plan of its duplicates (pillbox.tidying), applied by a person (all
groups or those ticked) and undone. Nothing is applied by showing the page; every change is a CSRF-protected POST."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from pillbox import ids, tidying
from pillbox.exceptions import NotFound, PillboxError
from webui.memory_views import _back, _found, _reach

if TYPE_CHECKING:
    from accounts.caller import PersonRequest


@login_required
def tidy_page(request: PersonRequest, bottle_id: str) -> HttpResponse:
    reach = _reach(request)
    by_meaning = request.GET.get("by") == "meaning"
    plan = _found(tidying.duplicates_plan, reach=reach, bottle_id=bottle_id, by_meaning=by_meaning)
    context = {"plan": plan, "by_meaning": by_meaning,
               "tidies": tidying.tidy_list(reach=reach, bottle_id=plan.bottle.id)}
    return render(request, "webui/memory_tidy.html", context)


@login_required
@require_POST
def tidy_apply(request: PersonRequest, bottle_id: str) -> HttpResponse:
    reach = _reach(request)
    here = reverse("memory-tidy", args=[bottle_id])
    chosen = request.POST.getlist("group")
    try:
        numbers = [int(number) for number in chosen]
    except ValueError:
        raise Http404 from None
    if not numbers:
        messages.error(request, "Tick at least one group to apply; nothing was changed.")
        return _back(here)
    try:
        tidy = tidying.tidy_apply(reach=reach, plan_id=request.POST.get("plan", ""), groups=numbers)
    except NotFound as exc:
        raise Http404(exc.message) from None
    except PillboxError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Tidied: {len(tidy.after)} pill{'s' if len(tidy.after) != 1 else ''} superseded "
                                  f"by their group's keeper (tidy {ids.short(tidy.id)}). Undo brings them back.")
    return _back(here)


@login_required
@require_POST
def tidy_undo(request: PersonRequest, bottle_id: str, tidy_id: str) -> HttpResponse:
    reach = _reach(request)
    try:
        tidy = tidying.tidy_undo(reach=reach, tidy_id=tidy_id)
    except NotFound as exc:
        raise Http404(exc.message) from None
    except PillboxError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Tidy {ids.short(tidy.id)} undone: its pills are back as they were.")
    return _back(reverse("memory-tidy", args=[bottle_id]))

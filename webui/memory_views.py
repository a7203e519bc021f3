"""The memory browser under /pillbox/: bottles → prescriptions → pills, capsules, and search.

Every page builds the person's reach the way an HTTP agent's is built (their registry; local bottles read
from their own files), so a person sees exactly the bottles their agents can reach and no one else's. Reads
here do not bump the ``views`` counters: those count what agents read, and are shown to people as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from mcp_bridge.tools import Caller
from pillbox import curation, selectors, services, superseding
from pillbox.access import Reach, reach_for
from pillbox.exceptions import AmbiguousId, NotFound, PillboxError, ValidationFailed
from pillbox.global_db import GLOBAL
from pillbox.models import Capsule, Pill
from pillbox.search.engine import timed_search
from pillbox.search.targets import Target
from pillbox.search.when import Window, recall
from pillbox.texts import author
from webui.forms import MemoryForm, RepairForm

if TYPE_CHECKING:
    from accounts.caller import PersonRequest

T = TypeVar("T")
CHART_DAYS = 60
CHART_MIN_DAYS = 14
SEARCH_LIMIT = 50


def _reach(request: PersonRequest) -> Reach:
    return reach_for(Caller(user=request.user, transport="http", workdir=None))


def _found(read: Callable[..., T], **arguments: object) -> T:
    """A record the person can reach, else 404: another user's record looks exactly like a missing one."""
    try:
        return read(**arguments)
    except (NotFound, ValidationFailed, AmbiguousId) as exc:
        raise Http404(exc.message) from None


def _show_discarded(request: HttpRequest) -> bool:
    return request.GET.get("show") == "discarded"


def _back(url: str) -> HttpResponse:
    return HttpResponseRedirect(url, status=303)


# ---------------------------------------------------------------- bottles


@login_required
def bottles(request: PersonRequest) -> HttpResponse:
    reach = _reach(request)
    context = {
        "summaries": selectors.bottle_summaries(reach=reach),
        "capsule_count": len(selectors.capsule_list(reach=reach)),
        "can_repair": reach.is_staff,
    }
    return render(request, "webui/memory_bottles.html", context)


@login_required
@require_POST
def registration_action(request: PersonRequest, registration_id: int, verb: str) -> HttpResponse:
    home = reverse("memory-bottles")
    if verb == "unregister":
        _found(curation.registration_unregister, user=request.user, registration_id=registration_id)
        messages.success(request, "Bottle removed from your list; its database file was left untouched.")
        return _back(home)
    if verb != "repair":
        raise Http404
    # Pointing a registry entry at a path reads the server's file system: that is the operator's, as for
    # bottle_vinculate over HTTP.
    if not request.user.is_staff:
        raise Http404
    form = RepairForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the directory the bottle moved to.")
        return _back(home)
    try:
        curation.registration_repair(
            user=request.user, registration_id=registration_id, directory=form.cleaned_data["directory"]
        )
    except NotFound as exc:
        raise Http404(exc.message) from None
    except PillboxError as exc:
        messages.error(request, exc.message)
        return _back(home)
    messages.success(request, "Bottle linked again.")
    return _back(home)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    height: float
    day: date
    count: int


def pills_chart(
    per_day: list[tuple[date, int]], *, today: date, width: int = 720, height: int = 120
) -> dict[str, Any] | None:
    """An inline SVG bar chart of pills per day: the last ``CHART_DAYS`` days up to today, or up to the last
    day with pills when the bottle has been quiet longer than that."""
    if not per_day:
        return None
    counts = dict(per_day)
    last = max(counts)
    end = today if (today - last).days < CHART_DAYS else last
    start = max(min(counts), end - timedelta(days=CHART_DAYS - 1))
    start = min(start, end - timedelta(days=CHART_MIN_DAYS - 1))
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    top = max(counts.get(day, 0) for day in days) or 1
    plot = height - 18
    step = width / len(days)
    bars = []
    for index, day in enumerate(days):
        count = counts.get(day, 0)
        if count:
            bar_height = max(2.0, (plot - 14) * count / top)
            bars.append(
                Bar(
                    x=round(index * step + step * 0.15, 2),
                    y=round(plot - bar_height, 2),
                    height=round(bar_height, 2),
                    day=day,
                    count=count,
                )
            )
    return {
        "bars": bars,
        "bar_width": round(step * 0.7, 2),
        "width": width,
        "height": height,
        "plot": plot,
        "start": start,
        "end": end,
        "top": top,
        "total": sum(counts.get(day, 0) for day in days),
    }


@login_required
def bottle(request: PersonRequest, bottle_id: str) -> HttpResponse:
    reach = _reach(request)
    page = _found(selectors.bottle_page, reach=reach, bottle_id=bottle_id, include_discarded=_show_discarded(request))
    context = {
        "page": page,
        "chart": pills_chart(page.pills_per_day, today=timezone.now().date()),
        "show_discarded": _show_discarded(request),
        "compounds": selectors.pill_compounds(reach=reach, bottle_id=page.bottle.id.hex, limit=12),
    }
    return render(request, "webui/memory_bottle.html", context)


# ---------------------------------------------------------------- prescriptions


@login_required
def prescription(request: PersonRequest, prescription_id: str) -> HttpResponse:
    page = _found(
        selectors.prescription_page,
        reach=_reach(request),
        prescription_id=prescription_id,
        include_discarded=_show_discarded(request),
    )
    return render(request, "webui/memory_prescription.html", {"page": page, "show_discarded": _show_discarded(request)})


PRESCRIPTION_ACTIONS = {
    "close": (services.prescription_close, "Prescription closed."),
    "reopen": (services.prescription_reopen, "Prescription reopened: its pills can be changed again."),
    "discard": (services.prescription_discard, "Prescription discarded with its pills; you can restore it."),
    "restore": (curation.prescription_restore, "Prescription restored with the pills discarded with it."),
    "purge": (curation.prescription_purge, "Prescription and its pills deleted for good."),
}


@login_required
@require_POST
def prescription_action(request: PersonRequest, prescription_id: str, verb: str) -> HttpResponse:
    if verb not in PRESCRIPTION_ACTIONS:
        raise Http404
    reach = _reach(request)
    page = _found(selectors.prescription_page, reach=reach, prescription_id=prescription_id)
    action, done = PRESCRIPTION_ACTIONS[verb]
    try:
        action(reach=reach, prescription_id=page.prescription.id.hex)
    except PillboxError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, done)
    if verb == "purge":
        return _back(reverse("memory-bottle", args=[page.bottle.id.hex]))
    return _back(reverse("memory-prescription", args=[page.prescription.id.hex]))


# ---------------------------------------------------------------- pills


def _pill_form_initial(record: Pill | Capsule) -> MemoryForm:
    return MemoryForm(initial={"title": record.title, "compound": record.compound, "content": record.content})


@login_required
def pill(request: PersonRequest, pill_id: str) -> HttpResponse:
    page = _found(selectors.pill_page, reach=_reach(request), pill_id=pill_id)
    return render(request, "webui/memory_pill.html", _pill_context(page, _pill_form_initial(page.pill)))


def _pill_context(page: selectors.PillPage, form: MemoryForm) -> dict[str, object]:
    return {"page": page, "form": form, "author": author(page.pill.author_name, page.pill.author_email)}


@login_required
@require_POST
def pill_action(request: PersonRequest, pill_id: str, verb: str) -> HttpResponse:
    reach = _reach(request)
    page = _found(selectors.pill_page, reach=reach, pill_id=pill_id)
    pill_hex = page.pill.id.hex
    here = reverse("memory-pill", args=[pill_hex])
    try:
        if verb == "edit":
            form = MemoryForm(request.POST)
            if not form.is_valid():
                return render(request, "webui/memory_pill.html", _pill_context(page, form), status=400)
            services.pill_revise(reach=reach, pill_id=pill_hex, changes=form.cleaned_data)
            messages.success(request, "Pill saved.")
        elif verb == "discard":
            services.pill_discard(reach=reach, pill_id=pill_hex)
            messages.success(request, "Pill discarded: agents no longer see it. You can restore it.")
        elif verb == "restore":
            curation.pill_restore(reach=reach, pill_id=pill_hex)
            messages.success(request, "Pill restored.")
        elif verb == "bringback":
            superseding.pill_bring_back(reach=reach, pill_id=pill_hex)
            messages.success(request, "Pill brought back: no pill supersedes it now, so agents see it again.")
        elif verb == "purge":
            curation.pill_purge(reach=reach, pill_id=pill_hex)
            messages.success(request, "Pill deleted for good.")
            return _back(reverse("memory-prescription", args=[page.prescription.id.hex]))
        else:
            raise Http404
    except PillboxError as exc:
        messages.error(request, exc.message)
    return _back(here)


# ---------------------------------------------------------------- capsules


@login_required
def capsules(request: PersonRequest) -> HttpResponse:
    reach = _reach(request)
    compound = request.GET.get("compound") or None
    context = {
        "capsules": selectors.capsule_list(reach=reach, compound=compound, include_discarded=_show_discarded(request)),
        "compounds": selectors.capsule_compounds(reach=reach, limit=200),
        "compound": compound,
        "show_discarded": _show_discarded(request),
    }
    return render(request, "webui/memory_capsules.html", context)


@login_required
def capsule(request: PersonRequest, capsule_id: str) -> HttpResponse:
    found = _found(selectors.capsule_find_any, reach=_reach(request), capsule_id=capsule_id)
    return render(request, "webui/memory_capsule.html", {"capsule": found, "form": _pill_form_initial(found),
                                                         "supersedes": selectors.supersedes(found)})


@login_required
@require_POST
def capsule_action(request: PersonRequest, capsule_id: str, verb: str) -> HttpResponse:
    reach = _reach(request)
    found = _found(selectors.capsule_find_any, reach=reach, capsule_id=capsule_id)
    capsule_hex = found.id.hex
    try:
        if verb == "edit":
            form = MemoryForm(request.POST)
            if not form.is_valid():
                return render(request, "webui/memory_capsule.html", {"capsule": found, "form": form}, status=400)
            services.capsule_revise(reach=reach, capsule_id=capsule_hex, changes=form.cleaned_data)
            messages.success(request, "Capsule saved.")
        elif verb == "discard":
            services.capsule_discard(reach=reach, capsule_id=capsule_hex)
            messages.success(request, "Capsule discarded: agents no longer see it. You can restore it.")
        elif verb == "restore":
            curation.capsule_restore(reach=reach, capsule_id=capsule_hex)
            messages.success(request, "Capsule restored.")
        elif verb == "bringback":
            superseding.capsule_bring_back(reach=reach, capsule_id=capsule_hex)
            messages.success(request, "Capsule brought back: no capsule supersedes it now, so agents see it again.")
        elif verb == "purge":
            curation.capsule_purge(reach=reach, capsule_id=capsule_hex)
            messages.success(request, "Capsule deleted for good.")
            return _back(reverse("memory-capsules"))
        else:
            raise Http404
    except PillboxError as exc:
        messages.error(request, exc.message)
    return _back(reverse("memory-capsule", args=[capsule_hex]))


# ---------------------------------------------------------------- search


@login_required
def search_page(request: PersonRequest) -> HttpResponse:
    """Pills and capsules by words and meaning, as an agent's search finds them; time words in the query ('last
    week', 'in March') and the Since/Until fields keep to the rows created then, in the server's time zone."""
    reach = _reach(request)
    query = (request.GET.get("q") or "").strip()[:1000]
    compound = (request.GET.get("compound") or "").strip()[:64] or None
    since = (request.GET.get("since") or "").strip()[:64] or None
    until = (request.GET.get("until") or "").strip()[:64] or None
    scope = request.GET.get("in") if request.GET.get("in") in ("pills", "capsules") else "all"
    fuzzy = request.GET.get("fuzzy") == "on"
    pills = capsules_found = None
    window: Window | None = None
    try:
        wanted = recall(query or None, since=since, until=until)
    except ValidationFailed as exc:
        messages.error(request, exc.message)
        wanted = None
    if wanted is not None and (query or compound or wanted.window):
        if scope in ("all", "pills"):
            targets = [
                Target(alias=alias, kind="pill", bottles=frozenset(bottles), window=wanted.window)
                for alias, bottles in selectors.narrowed_dbs(reach, None).items()
            ]
            pills, window = timed_search(targets, wanted, query or None, compound=compound, limit=SEARCH_LIMIT,
                                         fuzzy=fuzzy)
        if scope in ("all", "capsules"):
            target = Target(alias=GLOBAL, kind="capsule", owner_id=reach.user.pk, window=wanted.window)
            capsules_found, capsule_window = timed_search([target], wanted, query or None, compound=compound,
                                                          limit=SEARCH_LIMIT, fuzzy=fuzzy)
            window = window if scope == "all" and window is not None else capsule_window
    names = selectors.bottle_names(reach)
    context = {
        "query": query,
        "compound": compound or "",
        "since": since or "",
        "until": until or "",
        "window": window.describe() if window is not None else "",
        "scope": scope,
        "fuzzy": fuzzy,
        "pills": pills,
        "capsules": capsules_found,
        "pill_hits": [(hit, names.get(hit.bottle_id, "") if hit.bottle_id else "") for hit in pills.hits]
        if pills
        else [],
        "used_fuzzy": any(found is not None and found.used_fuzzy for found in (pills, capsules_found)),
        "used_semantic": any(found is not None and found.used_semantic for found in (pills, capsules_found)),
    }
    return render(request, "webui/memory_search.html", context)

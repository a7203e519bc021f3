"""The account page: the person's uid, their API keys, and the OAuth applications they authorised."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.devices import devices_revoke
from accounts.models import ApiKey
from accounts.services import account_for, apikey_create, apikey_revoke
from todos.access import link_revoke, live_links
from webui.forms import KeyForm
from webui.oauth_grants import authorisation_revoke, authorisations

if TYPE_CHECKING:
    from accounts.caller import PersonRequest


def _account_context(request: PersonRequest, **extra: object) -> dict[str, object]:
    return {
        "account": account_for(request.user),
        "keys": ApiKey.objects.filter(user=request.user).order_by("revoked_at", "-created_at"),
        "apps": authorisations(user=request.user),
        "links": live_links(user=request.user),
        "key_form": KeyForm(),
        **extra,
    }


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
def account_page(request: PersonRequest) -> HttpResponse:
    return _no_store(render(request, "webui/account_detail.html", _account_context(request)))


@login_required
@require_POST
def key_create(request: PersonRequest) -> HttpResponse:
    form = KeyForm(request.POST)
    if not form.is_valid():
        return render(request, "webui/account_detail.html", _account_context(request, key_form=form), status=400)
    key, raw = apikey_create(user=request.user, name=form.cleaned_data["name"])
    # Shown in this response only: nothing keeps the key, so a reload or the back button cannot show it again.
    return _no_store(render(request, "webui/account_detail.html", _account_context(request, new_key=key, raw_key=raw)))


@login_required
@require_POST
def key_revoke(request: PersonRequest, key_id: int) -> HttpResponse:
    if not ApiKey.objects.filter(user=request.user, pk=key_id).exists():
        raise Http404("No such key.")
    if apikey_revoke(user=request.user, key_id=key_id):
        messages.success(request, "Key revoked. Links to your list made before now no longer open it.")
    return HttpResponseRedirect(reverse("account"), status=303)


@login_required
@require_POST
def app_revoke(request: PersonRequest, application_id: int) -> HttpResponse:
    if not authorisation_revoke(user=request.user, application_id=application_id):
        raise Http404("That application holds no access to your account.")
    messages.success(request, "Access revoked: that application must ask you again to connect.")
    return HttpResponseRedirect(reverse("account"), status=303)


@login_required
@require_POST
def link_revoke_view(request: PersonRequest, link_id: int) -> HttpResponse:
    if not link_revoke(user=request.user, link_id=link_id):
        raise Http404("No such live link.")
    messages.success(request, "Link revoked: it no longer opens your list.")
    return HttpResponseRedirect(reverse("account"), status=303)


@login_required
@require_POST
def sign_out_everywhere(request: PersonRequest) -> HttpResponse:
    """Every browser that signed in as the user is signed out and must pass the login limits again, this one too."""
    devices_revoke(user=request.user)
    logout(request)
    messages.success(request, "Signed out everywhere: every browser must sign in again.")
    return HttpResponseRedirect(reverse("login"), status=303)

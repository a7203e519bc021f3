"""The memory browser and the account page through Django's test client: login required, another user's
records are 404, POSTs need CSRF, and every action goes through the Pillbox and accounts services."""

from __future__ import annotations

import re
import shutil
from datetime import date, timedelta

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from accounts.models import ApiKey
from accounts.services import hash_key
from pillbox.models import Capsule, Pill, Prescription, Registration
from tests.webui.conftest import logged_in, make_memory
from webui.memory_views import pills_chart


def _pages(memory) -> list[str]:
    return [
        f"/pillbox/bottles/{memory.bottle.hex}/",
        f"/pillbox/prescriptions/{memory.open_rx.hex}/",
        f"/pillbox/pills/{memory.pill.hex}/",
        f"/pillbox/capsules/{memory.capsule.hex}/",
    ]


def _posts(memory) -> list[str]:
    return [
        f"/pillbox/pills/{memory.pill.hex}/discard",
        f"/pillbox/pills/{memory.pill.hex}/purge",
        f"/pillbox/prescriptions/{memory.open_rx.hex}/close",
        f"/pillbox/prescriptions/{memory.open_rx.hex}/purge",
        f"/pillbox/capsules/{memory.capsule.hex}/discard",
        f"/pillbox/capsules/{memory.capsule.hex}/purge",
    ]


def test_memory_pages_need_a_login(alice, alice_memory):
    for url in ["/pillbox/", "/pillbox/capsules/", "/pillbox/search?q=stripe", "/account/", *_pages(alice_memory)]:
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), url
    for url in _posts(alice_memory):
        assert Client().post(url)["Location"].startswith("/accounts/login/")
    assert Pill.objects.filter(pk=alice_memory.pill).exists()


def test_memory_pages_show_another_users_records_as_missing(alice, bob, alice_memory):
    client = logged_in(bob)
    for url in _pages(alice_memory):
        assert client.get(url).status_code == 404, url
    for url in _posts(alice_memory):
        assert client.post(url, {"title": "x", "compound": "x", "content": "x"}).status_code == 404, url
    registration = Registration.objects.get(user=alice.user, name="webshop")
    assert client.post(f"/pillbox/registrations/{registration.pk}/unregister").status_code == 404
    assert Pill.objects.get(pk=alice_memory.pill).deleted_at is None
    assert Capsule.objects.get(pk=alice_memory.capsule).deleted_at is None
    assert Registration.objects.filter(pk=registration.pk).exists()
    listing = client.get("/pillbox/").content.decode()
    assert "Web shop" not in listing and "No bottles yet" in listing
    assert "Stripe" not in client.get("/pillbox/search", {"q": "stripe webhooks"}).content.decode()


def test_memory_posts_need_csrf(alice, alice_memory):
    client = logged_in(alice, enforce_csrf=True)
    for url in _posts(alice_memory):
        assert client.post(url).status_code == 403, url
    assert Pill.objects.get(pk=alice_memory.pill).deleted_at is None


def test_bottles_page_lists_local_and_global_and_marks_unlinked(alice, alice_memory, tmp_path):
    client = logged_in(alice)
    html = client.get("/pillbox/").content.decode()
    assert "Web shop" in html and "Toolbox" in html and "unlinked" not in html.split("<tbody>")[1]
    # The local bottle is read from its own file: its prescription and pill counts come from there.
    local_row = re.search(r'data-bottle="toolbox">(.*?)</tr>', html, re.S)[1]
    assert re.findall(r'<td class="num">(\d+)</td>', local_row)[:2] == ["1", "1"]
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "toolbox", moved)
    html = client.get("/pillbox/").content.decode()
    assert 'class="badge unlinked"' in html and "Repair the path" not in html  # repair is for the operator


def test_operator_repairs_an_unlinked_bottle_and_unregisters_one(operator, tmp_path):
    memory = make_memory(operator, local_dir=tmp_path / "toolbox")
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "toolbox", moved)
    client = logged_in(operator)
    assert "Repair the path" in client.get("/pillbox/").content.decode()
    registration = Registration.objects.get(user=operator.user, name="toolbox")
    url = f"/pillbox/registrations/{registration.pk}/repair"
    client.post(url, {"directory": str(tmp_path / "nowhere")})
    assert "There is no .pillbox/pillbox.db" in client.get("/pillbox/").content.decode()
    client.post(url, {"directory": str(moved)})
    html = client.get("/pillbox/").content.decode()
    assert 'class="badge unlinked"' not in html
    assert client.get(f"/pillbox/bottles/{memory.local_bottle.hex}/").status_code == 200
    client.post(f"/pillbox/registrations/{registration.pk}/unregister")
    assert not Registration.objects.filter(pk=registration.pk).exists()
    assert (moved / ".pillbox" / "pillbox.db").is_file()


def test_bottle_page_shows_prescriptions_chart_and_discarded_on_request(alice, alice_memory):
    client = logged_in(alice)
    Prescription.objects.filter(pk=alice_memory.open_rx).update(views=7)
    html = client.get(f"/pillbox/bottles/{alice_memory.bottle.hex}/").content.decode()
    assert "Checkout rewrite" in html and "Initial design" in html
    assert '<span class="badge open">open</span>' in html and '<span class="badge closed">closed</span>' in html
    assert '<rect class="bar"' in html and "3 pills from" in html
    assert '<td class="num">7</td>' in html  # agents' reads, shown to people
    client.post(f"/pillbox/prescriptions/{alice_memory.open_rx.hex}/discard")
    assert "Checkout rewrite" not in client.get(f"/pillbox/bottles/{alice_memory.bottle.hex}/").content.decode()
    shown = client.get(f"/pillbox/bottles/{alice_memory.bottle.hex}/?show=discarded").content.decode()
    assert "Checkout rewrite" in shown and "badge discarded" in shown
    client.post(f"/pillbox/prescriptions/{alice_memory.open_rx.hex}/restore")
    assert Pill.objects.get(pk=alice_memory.pill).deleted_at is None


def test_pill_page_renders_edits_discards_restores_and_purges(alice, alice_memory):
    client = logged_in(alice)
    url = f"/pillbox/pills/{alice_memory.pill.hex}/"
    html = client.get(url).content.decode()
    assert "<strong>confirm</strong>" in html and "We **confirm** orders" in html  # rendered and raw
    assert alice_memory.pill.hex[:12] in html and "Ada Lovelace &lt;ada@example.com&gt;" in html
    response = client.post(
        url + "edit", {"title": "Stripe webhooks only", "compound": "decision", "content": "Line one\r\nline two"}
    )
    assert response.status_code == 303
    pill = Pill.objects.get(pk=alice_memory.pill)
    assert (pill.title, pill.content) == ("Stripe webhooks only", "Line one\nline two")
    response = client.post(url + "edit", {"title": "", "compound": "decision", "content": "x" * 5001})
    assert response.status_code == 400 and "at most 5000 characters" in response.content.decode()
    client.post(url + "discard")
    assert Pill.objects.get(pk=alice_memory.pill).deleted_at is not None
    assert "discarded" in client.get(url).content.decode()
    client.post(url + "restore")
    assert Pill.objects.get(pk=alice_memory.pill).deleted_at is None
    client.post(url + "purge")
    assert not Pill.objects.filter(pk=alice_memory.pill).exists()
    assert client.get(url).status_code == 404


def test_pill_edit_is_refused_while_its_prescription_is_closed(alice, alice_memory):
    client = logged_in(alice)
    url = f"/pillbox/pills/{alice_memory.closed_pill.hex}/"
    assert "edit-refused" in client.get(url).content.decode()
    client.post(url + "edit", {"title": "Changed", "compound": "decision", "content": "Changed"})
    assert "is closed" in client.get(url).content.decode()
    assert Pill.objects.get(pk=alice_memory.closed_pill).title == "Django monolith"
    html = client.get(url).content.decode()
    assert "Purge for good" not in html and "cannot be edited, discarded or purged" in html
    client.post(url + "purge")  # a hand-made POST is refused the same way
    assert "before purging" in client.get(url).content.decode()
    assert Pill.objects.filter(pk=alice_memory.closed_pill).exists()
    client.post(f"/pillbox/prescriptions/{alice_memory.closed_rx.hex}/reopen")
    client.post(url + "edit", {"title": "Changed", "compound": "decision", "content": "Changed"})
    assert Pill.objects.get(pk=alice_memory.closed_pill).title == "Changed"


def test_capsules_filter_edit_discard_restore_purge(alice, alice_memory):
    client = logged_in(alice)
    html = client.get("/pillbox/capsules/", {"compound": "convention"}).content.decode()
    assert "Commit messages" in html and "Laptop has 2 cores" not in html
    url = f"/pillbox/capsules/{alice_memory.capsule.hex}/"
    client.post(url + "edit", {"title": "Imperative commits", "compound": "convention", "content": "Add X."})
    assert Capsule.objects.get(pk=alice_memory.capsule).title == "Imperative commits"
    client.post(url + "discard")
    assert "Imperative commits" not in client.get("/pillbox/capsules/").content.decode()
    assert "Imperative commits" in client.get("/pillbox/capsules/", {"show": "discarded"}).content.decode()
    client.post(url + "restore")
    assert Capsule.objects.get(pk=alice_memory.capsule).deleted_at is None
    client.post(url + "purge")
    assert not Capsule.objects.filter(pk=alice_memory.capsule).exists()


def test_search_finds_pills_and_capsules_and_flags_typos(alice, alice_memory):
    client = logged_in(alice)
    html = client.get("/pillbox/search", {"q": "webhooks"}).content.decode()
    assert "Payments go through Stripe webhooks" in html and "fuzzy-note" not in html
    html = client.get("/pillbox/search", {"q": "webhoks"}).content.decode()
    assert "Payments go through Stripe webhooks" in html and "fuzzy-note" in html
    html = client.get("/pillbox/search", {"q": "imperativ", "in": "capsules"}).content.decode()
    assert "Commit messages in the imperative" in html and "Payments" not in html
    html = client.get("/pillbox/search", {"q": "kebab"}).content.decode()
    assert "Flags are kebab-case" in html and "toolbox" in html  # a local bottle's pill, named by its bottle


def test_search_keeps_to_the_time_its_words_or_fields_name(alice, alice_memory):
    old = timezone.now() - timedelta(days=40)
    Pill.objects.filter(pk=alice_memory.pill).update(created_at=old)
    client = logged_in(alice)
    html = client.get("/pillbox/search", {"q": "stripe webhooks last week"}).content.decode()
    # Nothing was written last week: the words are searched over every time, and the time line says so.
    assert "Payments go through Stripe webhooks" in html and "nothing was written then" in html
    html = client.get("/pillbox/search", {"q": "cart totals this week"}).content.decode()
    assert "Cart totals drift by a cent" in html and '(from &quot;this week&quot;)' in html
    html = client.get("/pillbox/search", {"q": "webhooks", "since": "7d"}).content.decode()
    assert "Payments go through Stripe webhooks" not in html and "time: since " in html and "(from since)" in html
    html = client.get("/pillbox/search", {"q": "webhooks", "until": (old + timedelta(days=1)).date().isoformat()})
    assert "Payments go through Stripe webhooks" in html.content.decode()
    # A time alone lists what was written then; a time that cannot be read is said, and nothing is searched.
    html = client.get("/pillbox/search", {"q": "today", "in": "pills"}).content.decode()
    assert "Cart totals drift by a cent" in html and "Payments go through Stripe webhooks" not in html
    html = client.get("/pillbox/search", {"q": "webhooks", "since": "soonish"}).content.decode()
    assert "since cannot be read as a time" in html and "Payments go through Stripe webhooks" not in html


def test_pills_chart_spans_recent_days():
    today = date(2026, 6, 30)
    chart = pills_chart([(today - timedelta(days=3), 2), (today, 4)], today=today)
    assert chart["end"] == today and (today - chart["start"]).days == 13 and chart["top"] == 4
    assert [bar.count for bar in chart["bars"]] == [2, 4] and chart["total"] == 6
    old = pills_chart([(date(2020, 1, 1), 1)], today=today)
    assert old["end"] == date(2020, 1, 1)
    assert pills_chart([], today=today) is None


def test_account_page_makes_a_key_shown_once_and_revokes_it(alice, bob):
    client = logged_in(alice)
    html = client.get("/account/").content.decode()
    assert alice.user.account.uid in html and alice.key not in html
    response = client.post("/account/keys/new", {"name": "laptop"})
    raw = re.search(r'id="new-key">(pbx_[^<]+)<', response.content.decode())[1]
    key = ApiKey.objects.get(user=alice.user, name="laptop")
    assert key.key_hash == hash_key(raw) and raw not in client.get("/account/").content.decode()
    bobs_key = ApiKey.objects.get(user=bob.user)
    assert client.post(f"/account/keys/{bobs_key.pk}/revoke").status_code == 404
    assert ApiKey.objects.get(pk=bobs_key.pk).revoked_at is None
    epoch = alice.user.account.link_epoch
    assert client.post(f"/account/keys/{key.pk}/revoke").status_code == 303
    key.refresh_from_db()
    alice.user.account.refresh_from_db()
    assert key.revoked_at is not None and alice.user.account.link_epoch == epoch + 1
    assert Client(enforce_csrf_checks=True).post("/account/keys/new").status_code in (302, 403)
    csrf_client = logged_in(alice, enforce_csrf=True)
    assert csrf_client.post("/account/keys/new", {"name": "forged"}).status_code == 403


def test_account_page_lists_and_revokes_authorised_applications(alice, bob):
    app = Application.objects.create(
        name="Claude Desktop",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/cb",
    )
    later = timezone.now() + timedelta(hours=1)
    access = AccessToken.objects.create(user=alice.user, application=app, token="a1", expires=later, scope="mcp")
    RefreshToken.objects.create(user=alice.user, application=app, token="r1", access_token=access)
    Grant.objects.create(
        user=alice.user,
        application=app,
        code="g1",
        expires=later,
        redirect_uri="http://127.0.0.1/cb",
        code_challenge="x",
        code_challenge_method="S256",
    )
    AccessToken.objects.create(user=bob.user, application=app, token="b1", expires=later, scope="mcp")
    client = logged_in(alice)
    assert "Claude Desktop" in client.get("/account/").content.decode()
    assert (
        "Claude Desktop"
        not in logged_in(bob, enforce_csrf=False).get("/account/").content.decode().split("Connected applications")[0]
    )
    assert client.post(f"/account/apps/{app.pk}/revoke").status_code == 303
    assert not AccessToken.objects.filter(user=alice.user).exists()
    assert not Grant.objects.filter(user=alice.user).exists()
    assert RefreshToken.objects.get(user=alice.user).revoked is not None
    assert AccessToken.objects.filter(user=bob.user).exists()
    assert "No application has access" in client.get("/account/").content.decode()
    assert client.post(f"/account/apps/{app.pk}/revoke").status_code == 404


@pytest.mark.parametrize("url", ["/pillbox/pills/0123/", "/pillbox/pills/zzzzzzzzzz/", "/pillbox/pills/--------/"])
def test_malformed_ids_are_404(alice, url):
    assert logged_in(alice).get(url).status_code == 404

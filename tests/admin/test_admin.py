"""The admin for operators: every model's pages load, discarded rows are shown and marked, the actions go
through the services, and API keys show only their hash."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from accounts.devices import password_stamp
from accounts.models import Account, ApiKey, LoginDevice
from pillbox import services as pillbox_services
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration
from tests.api.conftest import make_memory, reach_of
from todos import services as todo_services
from todos.models import Todo

MODELS = [Account, ApiKey, LoginDevice, Todo, Bottle, Prescription, Pill, Capsule, Registration]


@pytest.fixture
def world(alice, bob):
    memory = make_memory(alice)
    make_memory(bob, "bobs")
    LoginDevice.objects.create(user=alice.user, token_hash="0" * 64, password_stamp=password_stamp(alice.user),
                               address="192.0.2.1", user_agent="Firefox")
    todo_services.todo_put(owner=alice.user, key="buy-milk", name="Buy milk", description="")
    todo_services.todo_put(owner=alice.user, key="old", name="Old", description="")
    todo_services.todo_delete(owner=alice.user, key="old")
    pillbox_services.capsule_discard(reach=reach_of(alice), capsule_id=memory.capsule.id.hex)
    pillbox_services.pill_discard(reach=reach_of(alice), pill_id=memory.pill.id.hex)
    return memory


@pytest.fixture
def staff(operator) -> Client:
    client = Client()
    client.force_login(operator.user)
    return client


def _url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_admin_changelist_search_filters_and_change_form_load(staff, world, model):
    assert model in admin.site._registry
    changelist = staff.get(_url(model, "changelist"))
    assert changelist.status_code == 200
    assert staff.get(_url(model, "changelist"), {"q": "a"}).status_code == 200
    for spec in admin.site._registry[model].list_filter:
        name = spec if isinstance(spec, str) else getattr(spec, "parameter_name", None)
        if isinstance(name, str) and "__" not in name:
            assert staff.get(_url(model, "changelist"), {name: "yes"}).status_code in (200, 302)
    row = model.objects.order_by("pk").first()
    assert staff.get(_url(model, "change", row.pk)).status_code == 200


def test_admin_shows_discarded_and_deleted_rows_marked(staff, world):
    pills = staff.get(_url(Pill, "changelist")).content.decode()
    assert "Stateless JWT" in pills and "✗ discarded" in pills
    assert staff.get(_url(Pill, "changelist"), {"discarded": "yes"}).context["cl"].result_count == 1
    assert "✗ discarded" in staff.get(_url(Capsule, "changelist")).content.decode()
    todos = staff.get(_url(Todo, "changelist"), {"state": "deleted"})
    assert todos.context["cl"].result_count == 1 and "✗ deleted" in todos.content.decode()


def test_admin_api_keys_show_the_hash_never_the_key(staff, alice, world):
    key = ApiKey.objects.get(user=alice.user)
    page = staff.get(_url(ApiKey, "change", key.pk)).content.decode()
    assert key.key_hash in page and alice.key not in page
    assert alice.key not in staff.get(_url(ApiKey, "changelist")).content.decode()
    assert staff.get(_url(ApiKey, "add")).status_code == 403


def test_admin_revoke_keys_action(staff, alice, world):
    key = ApiKey.objects.get(user=alice.user)
    staff.post(_url(ApiKey, "changelist"), {"action": "revoke", "_selected_action": [key.pk]})
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
    assert Account.objects.get(user=alice.user).link_epoch == 1


def test_admin_todo_delete_and_restore_actions(staff, alice, world):
    todo = Todo.objects.get(owner=alice.user, key="buy-milk")
    staff.post(_url(Todo, "changelist"), {"action": "delete_todos", "_selected_action": [todo.pk]})
    deleted = Todo.objects.get(pk=todo.pk)
    assert deleted.deleted_at is not None and deleted.updated_at > todo.updated_at
    staff.post(_url(Todo, "changelist"), {"action": "restore_todos", "_selected_action": [todo.pk]})
    assert Todo.objects.get(pk=todo.pk).deleted_at is None


def test_admin_pill_discard_restore_and_the_closed_prescription_rule(staff, world):
    pill, old = world.pill, world.old_pill
    staff.post(_url(Pill, "changelist"), {"action": "restore", "_selected_action": [pill.pk]})
    assert Pill.objects.get(pk=pill.pk).deleted_at is None
    staff.post(_url(Pill, "changelist"), {"action": "discard", "_selected_action": [pill.pk]})
    assert Pill.objects.get(pk=pill.pk).deleted_at is not None
    refused = staff.post(_url(Pill, "changelist"), {"action": "discard", "_selected_action": [old.pk]}, follow=True)
    assert "is closed" in refused.content.decode()
    assert Pill.objects.get(pk=old.pk).deleted_at is None


def test_admin_prescription_discard_and_restore_take_pills_along(staff, world):
    rx = world.closed
    staff.post(_url(Prescription, "changelist"), {"action": "discard", "_selected_action": [rx.pk]})
    assert Pill.objects.get(pk=world.old_pill.pk).deleted_at is not None
    staff.post(_url(Prescription, "changelist"), {"action": "restore", "_selected_action": [rx.pk]})
    assert Prescription.objects.get(pk=rx.pk).deleted_at is None
    assert Pill.objects.get(pk=world.old_pill.pk).deleted_at is None


def test_admin_capsule_restore_and_discard_as_its_owner(staff, world):
    capsule = world.capsule
    staff.post(_url(Capsule, "changelist"), {"action": "restore", "_selected_action": [capsule.pk]})
    assert Capsule.objects.get(pk=capsule.pk).deleted_at is None
    staff.post(_url(Capsule, "changelist"), {"action": "discard", "_selected_action": [capsule.pk]})
    assert Capsule.objects.get(pk=capsule.pk).deleted_at is not None


def test_admin_delete_is_the_purge(staff, world):
    pill = world.pill
    staff.post(_url(Pill, "changelist"), {"action": "delete_selected", "_selected_action": [pill.pk], "post": "yes"})
    assert not Pill.objects.filter(pk=pill.pk).exists()


def test_admin_refuses_people_who_are_not_staff(alice, world):
    client = Client()
    client.force_login(alice.user)
    for model in MODELS:
        response = client.get(_url(model, "changelist"))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_memory_lists_say_where_local_memory_lives_and_link_to_it(staff, operator, alice, world, settings):
    """The admin reads the global database; a curator whose memory is in a project's own file is told so on each
    memory list, with the count of local bottles and a link to the memory browser that reaches them."""
    for number, owner in enumerate((operator.user, operator.user, alice.user)):
        Registration.objects.create(user=owner, bottle_id=f"{number:032x}", name=f"project-{number}",
                                    display_name=f"Project {number}", scope=Bottle.SCOPE_LOCAL,
                                    db_path=f"/code/project-{number}/.pillbox/pillbox.db",
                                    directory=f"/code/project-{number}")
    for model in (Bottle, Prescription, Pill):
        page = staff.get(_url(model, "changelist")).content.decode()
        assert "This list holds the global database only. Local bottles (3 registered, 2 of them yours)" in page
        assert f'<a href="{reverse("memory-bottles")}">memory browser</a>' in page
    # A global bottle belongs to no project: the data directory it is kept in is not shown as its directory.
    bottles = staff.get(_url(Bottle, "changelist")).content.decode()
    assert "(none: a global bottle)" in bottles and str(settings.PILLBOX_HOME) not in bottles

"""The Pillbox tools over HTTP: who may touch the server's file system (local bottles, bottle_vinculate), what
two users see of each other, and id prefixes shared by rows of two databases."""

from __future__ import annotations

import uuid

from asgiref.sync import sync_to_async

from pillbox.models import Bottle, Capsule, Pill, Prescription
from tests.clients import http_client, run
from tests.pillbox.scenario import (
    AUTHOR,
    PILLBOX_TOOLS,
    caller_for,
    fields,
    hit_ids,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    local_db,
    new_bottle,
    open_prescription,
    records,
    short_id,
    site_fixture,  # noqa: F401 (a fixture)
    store,
)
from tests.pillbox.scenario import http_session as http

# ---------------------------------------------------------------- HTTP: who may touch the file system


@sync_to_async
def full(model: type, short: str) -> str:
    """The whole UUID (with dashes) of a row of the global database."""
    return str(model.objects.get(id__gte=uuid.UUID(short.ljust(32, "0")), id__lte=uuid.UUID(short.ljust(32, "f"))).id)


def test_tools_http_lists_the_25_tools_in_every_client_mode(site, alice):
    async def scenario(mode: str) -> None:
        async with http_client(site + "/pillbox/mcp", key=alice.key, mode=mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == PILLBOX_TOOLS
            assert tools["pill_read"].annotations.read_only_hint is True
            assert tools["pill_discard"].annotations.destructive_hint is True
            assert tools["prescription_close"].annotations.idempotent_hint is True
            assert tools["pill_store"].input_schema["properties"]["content"]["maxLength"] == 5000
            assert tools["bottle_create"].input_schema["properties"]["scope"]["enum"] == ["local", "global"]
            call = caller_for(client)
            name = f"mode-{mode.replace('-', '')}"
            created = await call("bottle_create", name=name, display_name=f"Mode {mode}", scope="global")
            assert created.fields["name"] == name and created.fields["scope"] == "global"
            assert f"● Mode {mode} [global] {created.fields['id']}" in (await call("bottle_list")).ok

    for mode in ("auto", "legacy", "2026-07-28"):
        run(scenario(mode))


def test_bottle_create_over_http_refuses_local_bottles_to_non_staff(site, alice, operator, settings,
                                                                    tmp_path, local_bottles_over_http):
    settings.PILLBOX_ROOT = tmp_path.resolve()

    async def scenario() -> None:
        async with http(site, alice.key) as call:
            for args in ({}, {"scope": "local"}):
                refused = await call("bottle_create", name="mine", display_name="Mine", **args)
                assert refused.code == "validation_error" and 'scope: "global"' in refused.message
            link = await call("bottle_vinculate", directory=str(tmp_path))
            assert link.code == "validation_error" and 'scope: "global"' in link.message
            assert (await call("bottle_vinculate")).code == "validation_error"
            made = await call("bottle_create", name="mine", display_name="Mine", scope="global")
            # A remote non-staff agent is never told where the server keeps its data (a global bottle has no
            # directory to show anyone).
            assert made.fields["scope"] == "global" and made.fields["directory"] == "(none: a global bottle)"
            assert str(settings.PILLBOX_HOME) not in made.ok
            rx = await open_prescription(call, made.fields["id"])
            pill = await store(call, rx, "Remote pill", "Stored by a remote agent.")
            assert fields((await call("pill_read", id=pill)).ok)["title"] == "Remote pill"
        assert not (tmp_path / ".pillbox").exists()

        async with http(site, operator.key) as call:
            made = await call("bottle_create", name="on-server", display_name="On server")
            assert made.fields["scope"] == "local" and made.fields["directory"] == str(tmp_path.resolve())
            assert local_db(tmp_path).is_file()

    run(scenario())


def test_bottle_create_over_http_without_pillbox_root_refuses_local_even_to_staff(site, operator, settings):
    settings.PILLBOX_ROOT = None

    async def scenario() -> None:
        async with http(site, operator.key) as call:
            refused = await call("bottle_create", name="nowhere", display_name="Nowhere")
            assert refused.code == "validation_error" and 'scope: "global"' in refused.message
            assert (await call("bottle_vinculate", directory="/tmp")).code == "validation_error"
            assert (await call("bottle_create", name="nowhere", display_name="Nowhere", scope="global")).is_error \
                is False

    run(scenario())


def test_tools_http_two_users_see_nothing_of_each_other(site, alice, bob):
    async def scenario() -> None:
        async with http(site, alice.key) as a, http(site, bob.key) as b:
            bottle = await new_bottle(a, "secret-project")
            rx = await open_prescription(a, bottle, "Alice's session")
            pill = await store(a, rx, "Alice's password policy", "Rotate every 90 days.", "security")
            capsule = short_id((await a("capsule_store", title="Alice's editor", content="Vim with tabs",
                                        compound="environment")).fields["id"])
            before = {
                "rx": (await a("prescription_read", id=rx)).ok, "pill": (await a("pill_read", id=pill)).ok,
                "capsule": (await a("capsule_read", id=capsule)).ok,
            }
            full_ids = {"bottle": await full(Bottle, bottle), "rx": await full(Prescription, rx),
                        "pill": await full(Pill, pill), "capsule": await full(Capsule, capsule)}

            assert (await b("bottle_list")).ok == "No bottles registered."
            assert (await b("pill_compounds")).ok == "No compounds found."
            assert (await b("capsule_compounds")).ok == "No compounds found."
            for query in ("password", "policy rotate", "alice", "90"):
                assert (await b("pill_search", query=query)).ok == "No pills found."
                assert (await b("pill_search", query=query, fuzzy=True)).ok == "No pills found."
            assert (await b("pill_search", compound="security")).ok == "No pills found."
            assert (await b("capsule_search", query="editor vim")).ok == "No capsules found."
            assert (await b("capsule_search", compound="environment")).ok == "No capsules found."

            spellings = (lambda s, f: s, lambda s, f: s[:8], lambda s, f: f, lambda s, f: f.replace("-", "").upper())
            for spelling in spellings:
                bid, rid = spelling(bottle, full_ids["bottle"]), spelling(rx, full_ids["rx"])
                pid, cid = spelling(pill, full_ids["pill"]), spelling(capsule, full_ids["capsule"])
                for tool, args in (
                    ("bottle_context", {"bottle_id": bid}), ("pill_compounds", {"bottle_id": bid}),
                    ("pill_search", {"bottle_id": bid, "query": "password"}),
                    ("prescription_open", {"bottle_id": bid, "title": "Intrusion", **AUTHOR}),
                    ("prescription_read", {"id": rid}), ("prescription_close", {"id": rid}),
                    ("prescription_reopen", {"id": rid}), ("prescription_discard", {"id": rid}),
                    ("pill_read", {"id": pid}), ("pill_revise", {"id": pid, "title": "Owned"}),
                    ("pill_discard", {"id": pid}),
                    ("capsule_read", {"id": cid}), ("capsule_revise", {"id": cid, "title": "Owned"}),
                    ("capsule_discard", {"id": cid}),
                ):
                    assert (await b(tool, **args)).code == "not_found", (tool, args)
                assert (await b("prescription_context", prescription_id=rid)).ok == ""
                intrusion = await b("pill_store", prescription_id=rid, title="Injected", content="x",
                                    compound="security", **AUTHOR)
                assert intrusion.code in ("prescription_required", "not_found")

            # Bob may use the same bottle name: names are unique per user.
            assert (await b("bottle_create", name="secret-project", display_name="Bob's", scope="global")).fields[
                "name"] == "secret-project"
            assert (await b("bottle_vinculate")).code == "validation_error"

            assert (await a("prescription_read", id=rx)).ok == before["rx"]
            assert (await a("pill_read", id=pill)).ok == before["pill"]
            assert (await a("capsule_read", id=capsule)).ok == before["capsule"]
            assert hit_ids((await a("pill_search", query="password")).ok) == [pill]
            assert (await a("bottle_list")).ok.startswith("Bottles (1)")

    run(scenario())


def test_tools_http_local_bottle_reachable_only_through_the_registry(site, operator, settings, tmp_path,
                                                                    local_bottles_over_http):
    """Over HTTP nothing is registered implicitly: a second staff user working in the same PILLBOX_ROOT
    reaches the bottle there only after bottle_vinculate."""
    from tests.conftest import make_person

    other = make_person("root2", staff=True)
    project = (tmp_path / "project").resolve()
    project.mkdir()
    settings.PILLBOX_ROOT = project

    async def scenario() -> None:
        async with http(site, operator.key) as a, http(site, other.key) as b:
            bottle = await new_bottle(a, "server-project", scope="local")
            rx = await open_prescription(a, bottle)
            pill = await store(a, rx, "Server-side fact", "The cache lives in Redis.", "fact")
            assert (await b("bottle_list")).ok == "No bottles registered."
            assert (await b("bottle_context", bottle_id=bottle)).code == "not_found"
            assert (await b("pill_read", id=pill)).code == "not_found"
            assert (await b("pill_search", query="redis")).ok == "No pills found."
            again = await b("bottle_create", name="other-name", display_name="Other")
            assert again.code == "already_exists"
            linked = await b("bottle_vinculate")
            assert linked.ok == (f"status: linked\nbottle_id: {bottle}\nname: server-project\n"
                                 f"display_name: Server Project\ndb_path: {local_db(project)}\norigin: adopted (not "
                                 f"made by your Pillbox here; its bottle named {project})")
            assert (await b("bottle_vinculate", directory=str(project))).fields["status"] == "already_linked"
            assert hit_ids((await b("pill_search", query="redis")).ok) == [pill]
            assert fields((await b("pill_read", id=pill)).ok)["title"] == "Server-side fact"

    run(scenario())


# ---------------------------------------------------------------- id prefixes across databases


def test_tools_prefix_matching_rows_in_two_databases_is_ambiguous(site, operator, settings, tmp_path,
                                                                 local_bottles_over_http):
    """Ids are monotonic within one database only: a local bottle and a global one made in the same ~65 s share
    their first 8 hex digits. Asking for the global one by that prefix must not silently answer the local one."""
    settings.PILLBOX_ROOT = tmp_path.resolve()

    async def scenario() -> None:
        async with http(site, operator.key) as call:
            # Made back to back, a 65 s window boundary falls before the local bottle or after it, not both.
            before = await new_bottle(call, "there-before")
            local = await new_bottle(call, "here", scope="local")
            after = await new_bottle(call, "there-after")
            far = before if before[:8] == local[:8] else after
            assert far[:8] == local[:8]
            rx = await open_prescription(call, far, "Global work")
            answer = await call("bottle_context", bottle_id=far[:8])
            assert answer.is_error, f"asked for {far}, got the context of another bottle:\n{answer.text}"
            assert answer.code == "ambiguous_id"
            assert {local, far} <= {c[:12] for c in answer.error_fields["candidates"].split(", ")}
            assert rx  # the global bottle does have a prescription the answer above should have led to

    run(scenario())


def test_bottle_vinculate_keeps_names_unique_among_reachable_bottles(site, operator, settings, tmp_path,
                                                                   local_bottles_over_http):
    from tests.conftest import make_person

    other = make_person("root2", staff=True)
    theirs_dir = (tmp_path / "theirs").resolve()
    theirs_dir.mkdir()
    settings.PILLBOX_ROOT = theirs_dir

    async def scenario() -> None:
        async with http(site, operator.key) as mine, http(site, other.key) as theirs:
            local = await new_bottle(theirs, "shared", scope="local")
            await store(theirs, await open_prescription(theirs, local), "Cache in their project", "Local cache")
            own = await new_bottle(mine, "shared")
            await store(mine, await open_prescription(mine, own), "Cache in my global bottle", "Global cache")
            linked = await mine("bottle_vinculate", directory=str(theirs_dir))
            if linked.is_error:
                assert linked.code == "already_exists" and "shared" in linked.message
                return
            found = await mine("pill_search", query="cache")
            names = [record["bottle"] for record in records(found.ok)[1:]]
            assert len(names) == 2 and len(set(names)) == 2, found.text

    run(scenario())

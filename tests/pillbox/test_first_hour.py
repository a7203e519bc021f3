"""What an agent stumbled on in its first hour, end to end over HTTP and stdio through the SDK client: where am I
(the current bottle marked), accidental nested bottles, a bottle's name as its id, wrong-kind ids, unknown
arguments, relative directories, and snippets cut on word boundaries.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from tests.clients import run
from tests.pillbox.scenario import (
    Call,
    fields,
    fresh_home,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    open_prescription,
    records,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    store,
)
from tests.pillbox.scenario import http_session as http

OpenIn = Callable[[Path], AbstractAsyncContextManager[Call]]


@pytest.fixture(params=[pytest.param("http", marks=pytest.mark.django_db(transaction=True)), "stdio"])
def open_in(request, tmp_path) -> tuple[OpenIn, Path]:
    """A session opener for a working directory, and the project directory (under which sub-folders live)."""
    project = tmp_path / "home" / "code" / "proj"
    if request.param == "http":
        project.mkdir(parents=True)
        operator = request.getfixturevalue("operator")
        request.getfixturevalue("local_bottles_over_http")
        url = request.getfixturevalue("site")
        settings = request.getfixturevalue("settings")

        def over_http(directory: Path) -> AbstractAsyncContextManager[Call]:
            settings.PILLBOX_ROOT = directory.resolve()  # the HTTP caller's working directory
            return http(url, operator.key)

        return over_http, project.resolve()
    home = fresh_home(tmp_path)
    project.mkdir(parents=True)
    return (lambda directory: stdio_session(home, directory)), project.resolve()


def test_where_am_i_nesting_names_and_wrong_kinds(open_in):
    opener, project = open_in
    deep = project / "src" / "deep"
    deep.mkdir(parents=True)

    async def scenario() -> None:
        async with opener(project) as call:
            made = await call("bottle_create", name="inventory-api", display_name="Inventory API")
            bottle = made.fields["id"]
            other = (await call("bottle_create", name="notes", display_name="Notes", scope="global")).fields["id"]
        async with opener(deep) as call:
            # 8: from a sub-folder, the bottle of the directory is marked; the global one is not.
            listing = (await call("bottle_list")).ok
            assert f"Inventory API [local] {bottle}  ← this directory\n" in listing
            assert f"Notes [global] {other}\n" in listing and listing.count("← this directory") == 1

            # 9: a second bottle inside the tree is refused, naming the enclosing one and the way out.
            nested = await call("bottle_create", name="deep", display_name="Deep")
            assert nested.code == "already_exists"
            assert nested.error_fields["name"] == "inventory-api" and nested.error_fields["bottle_id"] == bottle
            assert nested.error_fields["directory"] == str(project) and "nested: true" in nested.message
            assert not (deep / ".pillbox").exists()
            on_purpose = await call("bottle_create", name="deep", display_name="Deep", nested=True)
            assert on_purpose.fields["directory"] == str(deep.resolve())
            assert (deep / ".pillbox" / "pillbox.db").is_file()

            # 10: a bottle's name wherever a bottle id is taken.
            rx = await open_prescription(call, "inventory-api", "Named, not numbered")
            pill = await store(call, rx, "Cache headers", "ETag on every GET.", "decision")
            by_name = (await call("bottle_context", bottle_id="inventory-api")).ok
            assert by_name == (await call("bottle_context", bottle_id=bottle)).ok and rx in by_name
            assert (await call("pill_compounds", bottle_id="inventory-api")).ok == "- decision (1)"
            assert [r["id"] for r in records((await call("pill_search", query="etag", bottle_id="inventory-api")).ok)
                    if "id" in r] == [pill]
            assert (await call("bottle_context", bottle_id="no-such-bottle")).code == "not_found"

            # 10: a wrong-kind id says what kind of id it is.
            wrong = await call("pill_read", id=rx)
            assert wrong.code == "not_found" and wrong.error_fields["kind"] == "prescription"
            assert "prescription_read" in wrong.message
            context = await call("prescription_context", prescription_id=bottle)
            assert context.code == "not_found" and context.error_fields["kind"] == "bottle"
            assert "bottle_context" in context.message
            assert (await call("prescription_context", prescription_id="0123456789ab")).ok == ""
            assert (await call("bottle_context", bottle_id=pill)).error_fields["kind"] == "pill"
            assert (await call("capsule_read", id=pill)).error_fields["kind"] == "pill"
            stored = await call("pill_store", prescription_id=bottle, title="t", content="c", compound="k",
                                author_name="A", author_email="a@example.com")
            assert stored.error_fields["kind"] == "bottle"

            # 11: unknown arguments are refused, naming the argument and the accepted ones.
            typo = await call("pill_search", qeury="etag")
            assert typo.code == "invalid_input" and "'qeury'" in typo.message
            assert typo.error_fields["accepted"] == ("query, bottle_id, compound, limit, fuzzy, include_superseded, "
                                                     "since, until, time_zone")
            assert (await call("bottle_list", verbose=True)).code == "invalid_input"

            # 11: a relative directory is resolved against the working directory, and the answer says so.
            linked = await call("bottle_vinculate", directory="../..")
            assert linked.fields["db_path"] == str(project / ".pillbox" / "pillbox.db")
            assert linked.fields["note"] == f"the relative directory was resolved against the working directory {deep}"
            assert "note" not in (await call("bottle_vinculate", directory=str(project))).fields

            # 12: snippets cut on word boundaries and mark every cut.
            words = " ".join(f"filler{n}" for n in range(40))
            content = f"`settings.py` reads os.environ[\"SECRET\"] first. {words} then the `config/loader.py` module"
            await store(call, rx, "Where the secret is read", content, "finding")
            snippet = fields((await call("pill_search", query="loader")).ok.split("\n\n")[1])["snippet"]
            assert snippet.startswith("…filler") and snippet.endswith("`config/loader.py` module")
            head = fields((await call("pill_search", query="secret read environ")).ok.split("\n\n")[1])["snippet"]
            assert head.startswith('`settings.py` reads os.environ["SECRET"] first.') and head.endswith("…")
            listed = await call("pill_search", compound="finding")
            shown = fields(listed.ok.split("\n\n")[1])["snippet"]
            assert shown.endswith("…") and content.startswith(shown.removesuffix("…"))

    run(scenario())

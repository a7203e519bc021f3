"""pill_search and capsule_search end to end over HTTP, through the SDK's own client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.clients import run
from tests.conftest import make_person
from tests.pillbox.scenario import (
    Call,
    fields,
    hit_ids,
    http_session,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    new_bottle,
    open_prescription,
    records,
    site_fixture,  # noqa: F401 (a fixture)
    store,
)

Pill = tuple[str, str] | tuple[str, str, str]  # title, content[, compound]


async def stock(call: Call, name: str, *pills: Pill) -> tuple[str, list[str]]:
    """A global bottle holding ``pills`` (stored in order, so the last is the newest); its id and theirs."""
    bottle = await new_bottle(call, name)
    rx = await open_prescription(call, bottle)
    return bottle, [await store(call, rx, *pill) for pill in pills]


def search_as(site: str, key: str, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def go() -> None:
        async with http_session(site, key) as call:
            await scenario(call)

    run(go())


def header(text: str) -> str:
    """The answer's header lines, less its confidence line (asserted on its own in test_recall_confidence.py)."""
    return "\n".join(line for line in text.split("\n\n")[0].split("\n") if not line.startswith("confidence: "))


def test_search_prefix_finds_longer_words_and_names_the_bottle(site, alice):
    async def scenario(call: Call) -> None:
        _, (auth, other) = await stock(call, "web-app", ("Authentication flow", "OAuth with PKCE", "decision"),
                                       ("Unrelated", "Nothing to see"))
        for query in ("auth", "AUTH", "authent", "authentication"):
            found = await call("pill_search", query=query)
            assert found.ok == (f"Found 1 pill\nmatch: all words\nconfidence: medium\n\nid: {auth}\n"
                                f"compound: decision\ntitle: Authentication flow\nbottle: web-app\n"
                                f"snippet: {fields(found.text)['snippet']}"), query
            assert "PKCE" in fields(found.text)["snippet"]
        longer = await call("pill_search", query="authentications")
        # An inflection of a stored word matches it as written: no correction is claimed.
        assert header(longer.ok) == "Found 1 pill\nmatch: all words" and hit_ids(longer.text) == [auth]
        assert hit_ids((await call("pill_search", query="pkce")).ok) == [auth]
        assert hit_ids((await call("pill_search", query="decision")).ok) == [auth]  # compound is indexed too

    search_as(site, alice.key, scenario)


def test_search_ignores_accents_and_case_both_ways(site, alice):
    async def scenario(call: Call) -> None:
        _, (cafe, resume) = await stock(call, "accents", ("Café au lait", "Morning ritual"),
                                        ("Resume parsing", "Read the uploaded CV"))
        for query in ("cafe", "café", "CAFÉ", "Cafe"):
            assert hit_ids((await call("pill_search", query=query)).ok) == [cafe], query
        for query in ("résumé", "RÉSUMÉ", "resume"):
            assert hit_ids((await call("pill_search", query=query)).ok) == [resume], query
        for query in ("cafe", "résumé"):
            assert "used_fuzzy" not in (await call("pill_search", query=query)).ok, query

    search_as(site, alice.key, scenario)


def test_search_ranks_pills_matching_more_words_first(site, alice):
    async def scenario(call: Call) -> None:
        _, (both, one, none) = await stock(
            call, "ranking",
            ("Retry policy", "Exponential backoff for the payment webhook"),
            ("Retry budget", "Linear backoff for the search indexer"),
            ("Logging", "Structured logs for every worker"),
        )
        for query in ("payment backoff", "backoff payment", "payment-backoff", "payment/backoff"):
            found = await call("pill_search", query=query)
            assert header(found.ok) == "Found 2 pills\nmatch: all words", query
            assert hit_ids(found.text) == [both, one], query
        # Either word alone is enough to be found (OR).
        assert hit_ids((await call("pill_search", query="indexer payment")).ok) in ([one, both], [both, one])
        assert none not in (await call("pill_search", query="payment backoff")).text

    search_as(site, alice.key, scenario)


def test_search_weights_a_title_match_above_a_content_match(site, alice):
    async def scenario(call: Call) -> None:
        _, (in_content, in_title) = await stock(
            call, "weights",
            ("Deployment notes", "kubernetes about pods"),
            ("Kubernetes", "deployment notes about pods"),
        )
        assert hit_ids((await call("pill_search", query="kubernetes")).ok) == [in_title, in_content]
        assert hit_ids((await call("pill_search", query="deployment")).ok) == [in_content, in_title]

    search_as(site, alice.key, scenario)


def test_search_falls_back_to_fuzzy_on_a_typo(site, alice):
    async def scenario(call: Call) -> None:
        _, (auth, _) = await stock(call, "typos", ("Authentication flow", "Tokens and sessions"),
                                   ("Billing", "Invoices monthly"))
        found = await call("pill_search", query="authentcation")
        assert header(found.ok) == ("Found 1 pill\nmatch: corrected words\ncorrected: authentcation → "
                                    "authentication\nused_fuzzy: true")
        assert hit_ids(found.text) == [auth]
        assert hit_ids((await call("pill_search", query="sesions tokns")).ok) == [auth]
        # Words under 4 characters are never expanded.
        assert (await call("pill_search", query="tkn")).ok == "No pills found."
        assert (await call("pill_search", query="tkn sso", fuzzy=True)).ok == "No pills found."
        # A correct query never says used_fuzzy.
        assert "used_fuzzy" not in (await call("pill_search", query="authentication")).ok

    search_as(site, alice.key, scenario)


def test_search_counts_one_misspelled_word_among_correct_ones(site, alice):
    async def scenario(call: Call) -> None:
        _, (index, migration, _) = await stock(
            call, "mixed",
            ("Database index", "Add an index on created_at"),
            ("Migration plan", "Rename the column in two steps"),
            ("Frontend", "Buttons and forms"),
        )
        plain = await call("pill_search", query="database")
        assert hit_ids(plain.ok) == [index] and "used_fuzzy" not in plain.text
        mixed = await call("pill_search", query="database migraiton")
        assert header(mixed.ok) == ("Found 2 pills\nmatch: some words\ncorrected: migraiton → migration\n"
                                    "used_fuzzy: true")
        # Three edits from any word: not a typo a person makes of 'migration' (plausible()).
        assert hit_ids((await call("pill_search", query="database migrashun")).ok) == [index]
        assert set(hit_ids(mixed.text)) == {index, migration}

    search_as(site, alice.key, scenario)


def test_search_fuzzy_true_expands_every_word_at_once(site, alice):
    async def scenario(call: Call) -> None:
        _, (us, uk) = await stock(call, "spelling", ("Color scheme", "Dark mode first"),
                                  ("Colour palette", "Brand guidelines"))
        strict = await call("pill_search", query="color")
        assert hit_ids(strict.ok) == [us] and "used_fuzzy" not in strict.text
        fuzzy = await call("pill_search", query="color", fuzzy=True)
        assert header(fuzzy.ok) == "Found 2 pills\nmatch: all words\ncorrected: color → colour\nused_fuzzy: true"
        assert hit_ids(fuzzy.text) == [us, uk]
        assert (await call("pill_search", query="color", fuzzy=False)).ok == strict.text

    search_as(site, alice.key, scenario)


def test_search_by_compound_filters_and_lists_newest_first(site, alice):
    async def scenario(call: Call) -> None:
        _, (bug1, decision, bug2, bug3) = await stock(
            call, "compounds",
            ("Crash on login", "Null session", "bug"),
            ("Use Postgres", "Login data in Postgres", "decision"),
            ("Slow login page", "N+1 queries", "bug"),
            ("Typo on pricing page", "Fix the copy", "bug"),
        )
        assert set(hit_ids((await call("pill_search", query="login", compound="bug")).ok)) == {bug1, bug2}
        assert hit_ids((await call("pill_search", query="login", compound="decision")).ok) == [decision]
        listing = await call("pill_search", compound="bug")
        assert header(listing.ok) == "Found 3 pills"
        assert hit_ids(listing.text) == [bug3, bug2, bug1]
        assert [r["compound"] for r in records(listing.text)[1:]] == ["bug"] * 3
        assert records(listing.text)[1]["bottle"] == "compounds"
        cut = await call("pill_search", compound="bug", limit=2)
        assert header(cut.ok) == "Found 3 pills (showing 2)" and hit_ids(cut.text) == [bug3, bug2]
        assert (await call("pill_search", compound="Bug")).ok == "No pills found."
        assert (await call("pill_search", compound="nothing-here")).ok == "No pills found."
        assert (await call("pill_search", query="postgres", compound="bug")).ok == "No pills found."

    search_as(site, alice.key, scenario)


def test_search_limit_cuts_and_says_how_many_were_found(site, alice):
    async def scenario(call: Call) -> None:
        _, made = await stock(call, "many", *[(f"Cache note {n}", f"Redis cache detail {n}") for n in range(23)])
        default = await call("pill_search", query="cache")
        assert header(default.ok) == "Found 23 pills (showing 20)\nmatch: all words"
        assert len(hit_ids(default.text)) == 20
        five = await call("pill_search", query="redis", limit=5)
        assert header(five.ok) == "Found 23 pills (showing 5)\nmatch: all words" and len(hit_ids(five.text)) == 5
        everything = await call("pill_search", query="cache", limit=100)
        assert header(everything.ok) == "Found 23 pills\nmatch: all words"
        assert set(hit_ids(everything.text)) == set(made)
        single = await call("pill_search", query="cache note 7 detail", limit=1)
        assert header(single.ok) == "Found 23 pills (showing 1)\nmatch: all words"

    search_as(site, alice.key, scenario)


def test_search_bottle_id_narrows_to_one_bottle(site, alice):
    async def scenario(call: Call) -> None:
        first, (a,) = await stock(call, "first-app", ("Caching layer", "Redis in front of the API"))
        second, (b,) = await stock(call, "second-app", ("Caching headers", "ETag and max-age"))
        both = await call("pill_search", query="caching")
        assert set(hit_ids(both.ok)) == {a, b}
        assert {r["id"]: r["bottle"] for r in records(both.text)[1:]} == {a: "first-app", b: "second-app"}
        assert hit_ids((await call("pill_search", query="caching", bottle_id=first)).ok) == [a]
        assert hit_ids((await call("pill_search", query="caching", bottle_id=second.upper())).ok) == [b]
        assert hit_ids((await call("pill_search", compound="note", bottle_id=second)).ok) == [b]
        assert (await call("pill_search", query="redis", bottle_id=second)).ok == "No pills found."

    search_as(site, alice.key, scenario)


NASTY_QUERIES = [
    '"auth" OR NOT x*', "a AND b", "(", ")", "NEAR(", "NEAR(auth flow, 2)", "^", "-", "--", "*", "auth*", '"',
    '""', "'", "title:auth", "content : flow", "{title content}: auth", "+auth", "auth -flow", "AND", "OR", "NOT",
    "auth AND", "OR auth", "a:b:c", "\\", "%", "_", "auth;", "'; DROP TABLE pillbox_pill; --", "(auth OR flow",
    "[auth]", "auth^2", "~auth", "auth NEAR flow", "col:", "*auth", "**", "\u00a0", "a" * 1000,
]


def test_search_treats_fts_operators_and_quotes_as_plain_text(site, alice):
    async def scenario(call: Call) -> None:
        _, (auth, _) = await stock(call, "operators", ("Auth flow", "Login with tokens"), ("Other", "Nothing"))
        for query in NASTY_QUERIES:
            for tool in ("pill_search", "capsule_search"):
                answer = await call(tool, query=query)
                assert not answer.is_error, (tool, query, answer.text)
                assert answer.text.startswith(("Found ", "No pills found.", "No capsules found.")), (query, answer.text)
            fuzzy = await call("pill_search", query=query, fuzzy=True)
            assert not fuzzy.is_error, (query, fuzzy.text)
        for query in ('"auth" OR NOT x*', "NEAR(auth flow, 2)", "title:auth", "(auth OR flow", "auth -flow"):
            assert auth in hit_ids((await call("pill_search", query=query)).ok), query
        assert (await call("pill_search", query="AND")).ok == "No pills found."

    search_as(site, alice.key, scenario)


def test_search_without_letters_or_digits_finds_nothing(site, alice):
    async def scenario(call: Call) -> None:
        await stock(call, "symbols", ("Dashes --- everywhere", "!!! and ??? too"))
        await call("capsule_store", title="Symbols !!!", content="--- ???", compound="misc")
        for query in ("--- !!!", "???", "... ::: ///", "-", '" "'):
            assert (await call("pill_search", query=query)).ok == "No pills found.", query
            assert (await call("pill_search", query=query, fuzzy=True)).ok == "No pills found.", query
            assert (await call("capsule_search", query=query)).ok == "No capsules found.", query

    search_as(site, alice.key, scenario)


def test_search_hides_discarded_pills_prescriptions_and_capsules(site, alice):
    async def scenario(call: Call) -> None:
        bottle = await new_bottle(call, "discards")
        kept_rx = await open_prescription(call, bottle, "Kept")
        gone_rx = await open_prescription(call, bottle, "Gone")
        kept = await store(call, kept_rx, "Webhook retries kept", "Retry webhooks thrice", "ops")
        dropped = await store(call, kept_rx, "Webhook retries dropped", "Retry webhooks forever", "ops")
        cascaded = await store(call, gone_rx, "Webhook retries cascaded", "Retry webhooks never", "ops")
        cap_kept = fields((await call("capsule_store", title="Webhook style kept", content="Sign payloads",
                                      compound="ops")).ok)["id"]
        cap_gone = fields((await call("capsule_store", title="Webhook style gone", content="Sign payloads",
                                      compound="ops")).ok)["id"]
        assert set(hit_ids((await call("pill_search", query="webhook")).ok)) == {kept, dropped, cascaded}

        await call("pill_discard", id=dropped)
        await call("prescription_discard", id=gone_rx)
        await call("capsule_discard", id=cap_gone)
        for query, fuzzy in (("webhook", False), ("webhooks retries", True), ("webhok", False), ("forever", False)):
            found = await call("pill_search", query=query, fuzzy=fuzzy)
            assert set(hit_ids(found.ok)) <= {kept}, (query, found.text)
        assert hit_ids((await call("pill_search", query="webhook")).ok) == [kept]
        assert header((await call("pill_search", query="webhook")).ok) == "Found 1 pill\nmatch: all words"
        assert hit_ids((await call("pill_search", compound="ops")).ok) == [kept]
        assert (await call("pill_search", query="forever never")).ok == "No pills found."
        assert hit_ids((await call("capsule_search", query="webhook style")).ok) == [cap_kept]
        assert hit_ids((await call("capsule_search", compound="ops")).ok) == [cap_kept]
        assert header((await call("capsule_search", query="payloads")).ok) == "Found 1 capsule\nmatch: all words"

    search_as(site, alice.key, scenario)


def test_search_results_are_deterministic(site, alice):
    async def scenario(call: Call) -> None:
        await stock(call, "ties", *[("Same words", "identical body text") for _ in range(6)],
                    ("Same words twice same words", "identical body text identical"))
        for query in ("same words", "identical", "body sme", "wordz"):
            first = (await call("pill_search", query=query)).ok
            for _ in range(3):
                assert (await call("pill_search", query=query)).ok == first, query
        listing = (await call("pill_search", compound="note")).ok
        assert (await call("pill_search", compound="note")).ok == listing

    search_as(site, alice.key, scenario)


def test_search_capsules_by_words_compound_and_typos(site, alice, bob):
    async def scenario(call: Call) -> None:
        stored = []
        for title, content, compound in (
            ("Python style", "Ruff with line length 120", "convention"),
            ("Release workflow", "Tag, build, then publish to the registry", "workflow"),
            ("Editor", "Neovim with the LSP configured", "environment"),
        ):
            stored.append(fields((await call("capsule_store", title=title, content=content,
                                             compound=compound)).ok)["id"])
        style, release, editor = stored
        found = await call("capsule_search", query="publish")
        assert found.ok == (f"Found 1 capsule\nmatch: all words\nconfidence: medium\n\nid: {release}\n"
                            f"compound: workflow\ntitle: Release workflow\nsnippet: {fields(found.text)['snippet']}")
        assert hit_ids((await call("capsule_search", query="NEOVIM lsp")).ok) == [editor]
        typo = await call("capsule_search", query="relase")
        assert header(typo.ok) == ("Found 1 capsule\nmatch: corrected words\ncorrected: relase → release\n"
                                   "used_fuzzy: true") and hit_ids(typo.text) == [release]
        assert hit_ids((await call("capsule_search", compound="convention")).ok) == [style]
        assert header((await call("capsule_search", query="with", limit=1)).ok) == (
            "Found 2 capsules (showing 1)\nmatch: all words")

    search_as(site, alice.key, scenario)

    async def other(call: Call) -> None:
        for query in ("publish", "neovim", "relase", "with"):
            assert (await call("capsule_search", query=query)).ok == "No capsules found."
            assert (await call("capsule_search", query=query, fuzzy=True)).ok == "No capsules found."
        assert (await call("capsule_search", compound="convention")).ok == "No capsules found."

    search_as(site, bob.key, other)


def test_search_merges_two_local_bottles_linked_with_vinculate(site, operator, settings, tmp_path,
                                                              local_bottles_over_http):
    other = make_person("root2", staff=True)
    alpha, beta = (tmp_path / "alpha").resolve(), (tmp_path / "beta").resolve()
    alpha.mkdir()
    beta.mkdir()

    async def scenario() -> None:
        async with http_session(site, operator.key) as mine, http_session(site, other.key) as theirs:
            settings.PILLBOX_ROOT = beta
            beta_bottle = await new_bottle(theirs, "beta-app", scope="local")
            beta_rx = await open_prescription(theirs, beta_bottle)
            beta_pills = [await store(theirs, beta_rx, "Cache invalidation", "Purge the CDN cache on deploy"),
                          await store(theirs, beta_rx, "Queue", "Celery with a cache backend")]
            settings.PILLBOX_ROOT = alpha
            alpha_bottle = await new_bottle(mine, "alpha-app", scope="local")
            alpha_rx = await open_prescription(mine, alpha_bottle)
            alpha_pills = [await store(mine, alpha_rx, "Cache keys", "Prefix every cache key with the tenant"),
                           await store(mine, alpha_rx, "Sessions", "Sessions live in the cache")]
            assert set(hit_ids((await mine("pill_search", query="cache")).ok)) == set(alpha_pills)

            linked = await mine("bottle_vinculate", directory=str(beta))
            assert fields(linked.ok)["status"] == "linked" and fields(linked.text)["bottle_id"] == beta_bottle
            found = await mine("pill_search", query="cache")
            # The working directory's bottle is named.
            assert header(found.ok) == "Found 4 pills\nmatch: all words\ncurrent_bottle: alpha-app"
            bottles = {r["id"]: r["bottle"] for r in records(found.text)[1:]}
            assert bottles == {**dict.fromkeys(alpha_pills, "alpha-app"), **dict.fromkeys(beta_pills, "beta-app")}
            # Every pill matches the one word: the working directory's bottle (alpha) leads, beta's follow.
            assert [bottles[pill] for pill in hit_ids(found.text)] == ["alpha-app"] * 2 + ["beta-app"] * 2
            assert (await mine("pill_search", query="cache")).ok == found.text
            assert hit_ids((await mine("pill_search", query="cdn", bottle_id=beta_bottle)).ok) == [beta_pills[0]]
            assert hit_ids((await mine("pill_search", query="cdn", bottle_id=alpha_bottle)).ok) == []
            typo = await mine("pill_search", query="invalidaton tenant")
            assert set(hit_ids(typo.ok)) == {beta_pills[0], alpha_pills[0]} and "used_fuzzy: true" in typo.text
            listing = await mine("pill_search", compound="note")
            assert hit_ids(listing.ok) == [alpha_pills[1], alpha_pills[0], beta_pills[1], beta_pills[0]]

    run(scenario())


def test_search_typo_correction_does_not_depend_on_other_users_pills(site, alice, bob):
    """What a user owns is invisible to every other user. Bob's misspelled word is corrected when
    no one else uses the word he meant to type... and silently dropped when Alice's pill holds it."""

    async def bobs(call: Call) -> list[str]:
        _, made = await stock(call, "bobs", ("Database notes", "Indexes and vacuum"),
                              ("Zebrafisk study", "Larvae imaging"))
        return made

    async def bob_searches(call: Call) -> str:
        return (await call("pill_search", query="zebrafish database")).ok

    async def scenario() -> None:
        async with http_session(site, bob.key) as b, http_session(site, alice.key) as a:
            made = await bobs(b)
            alone = await bob_searches(b)
            assert header(alone) == ("Found 2 pills\nmatch: some words\ncorrected: zebrafish → zebrafisk\n"
                                     "used_fuzzy: true") and set(hit_ids(alone)) == set(made)
            await stock(a, "alices", ("Zebrafish", "Alice's private lab notes"))
            assert await bob_searches(b) == alone

    run(scenario())

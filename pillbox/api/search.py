"""Search: pills (every reachable bottle, or one) or capsules, by the same engine as the tools and the pages."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import query_parameters, responses
from pillbox import selectors
from pillbox.api.common import ID_PATTERN, INCLUDE_SUPERSEDED, PillboxView, read_query
from pillbox.exceptions import ValidationFailed
from pillbox.global_db import GLOBAL
from pillbox.input_rules import NONBLANK, VISIBLE
from pillbox.search.engine import timed_search
from pillbox.search.targets import Target
from pillbox.search.when import recall
from pillbox.serializers import SearchSerializer
from pillbox.tools import COMPOUND, FUZZY, QUERY, SINCE, TIME_ZONE, UNTIL, _limit

SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "q": QUERY,
        "kind": {
            "type": "string",
            "enum": ["pills", "capsules"],
            "default": "pills",
            "description": "Search pills (every reachable bottle, or one) or capsules.",
        },
        "compound": COMPOUND,
        "bottle": {
            "type": "string",
            "pattern": ID_PATTERN,
            "description": "Pills only: search this bottle alone (short id, UUID or 8+ digit prefix).",
        },
        "limit": _limit(20, 100, "results"),
        "fuzzy": FUZZY,
        "include_superseded": {**INCLUDE_SUPERSEDED, "description": "Also answer rows a newer one supersedes, "
                               "each with superseded_by naming it."},
        "since": SINCE,
        "until": UNTIL,
        "time_zone": TIME_ZONE,
    },
}


class SearchView(PillboxView):
    @extend_schema(
        operation_id="pillbox_search",
        summary="Search pills or capsules",
        description="As pill_search and capsule_search: give q, compound, or both. Prefixes match, accents and "
        "case are ignored, misspelled words are corrected (used_fuzzy is then true, corrections names them), rows "
        "close in meaning join (used_semantic), match says how the first result matched the query, and "
        "confidence (high, medium or low) how sure the server is that it answers it. since and until (or time "
        "words in q: 'last week', 'in March') keep to the rows created in that window; time says which.",
        parameters=query_parameters(SEARCH_INPUT, nonblank=NONBLANK, visible=VISIBLE),
        responses=responses({200: SearchSerializer}, 400, 404),
    )
    def get(self, request: Request) -> Response:
        values = read_query(request, SEARCH_INPUT, "pillbox_search")
        query, compound = values.get("q"), values.get("compound")
        wanted = recall(query, since=values.get("since"), until=values.get("until"),
                        time_zone=values.get("time_zone"))
        if not query and not compound and wanted.window is None:
            raise ValidationFailed("Give a query (q), a compound, or both.", q="required unless compound is given")
        superseded = values["include_superseded"]
        if values["kind"] == "capsules":
            targets = [Target(alias=GLOBAL, kind="capsule", owner_id=self.reach.user.pk, include_superseded=superseded,
                              window=wanted.window)]
            names: dict[Any, str] = {}
        else:
            dbs = selectors.narrowed_dbs(self.reach, values.get("bottle"))
            targets = [Target(alias=alias, kind="pill", bottles=frozenset(bottles), include_superseded=superseded,
                              window=wanted.window)
                       for alias, bottles in dbs.items()]
            names = selectors.bottle_names(self.reach)
        found, window = timed_search(targets, wanted, query, compound=compound, limit=values["limit"],
                                     fuzzy=values["fuzzy"])
        kind = "capsule" if values["kind"] == "capsules" else "pill"
        marks = selectors.superseded_marks(reach=self.reach, kind=kind,
                                           ids=[hit.id for hit in found.hits]) if superseded else {}
        data = {"total": found.total, "used_fuzzy": found.used_fuzzy, "used_semantic": found.used_semantic,
                "match": found.match or None, "confidence": found.confidence or None,
                "corrections": found.corrections, "ignored_terms": found.ignored_terms,
                "partial": found.partial, "time": window.describe() if window else None,
                "results": found.hits}
        return Response(SearchSerializer(data, context={"bottle_names": names, "superseded": marks}).data)

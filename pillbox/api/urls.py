"""The routes under ``/api/pillbox/``: each kind of record, its page, its listings and its actions, then search."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import path

from pillbox.api.bottles import BottleDetailView, BottleListView, BottlePrescriptionsView
from pillbox.api.capsules import CAPSULE_ACTIONS, CapsuleDetailView, CapsuleListView
from pillbox.api.common import PillboxView
from pillbox.api.pills import PILL_ACTIONS, PillDetailView
from pillbox.api.prescriptions import PRESCRIPTION_ACTIONS, PrescriptionDetailView, PrescriptionPillsView
from pillbox.api.search import SearchView
from pillbox.api.tidy import BottleDuplicatesView, TidyListView, TidyUndoView


def _actions(prefix: str, parameter: str, actions: Mapping[str, type[PillboxView]]) -> list[Any]:
    return [
        path(f"{prefix}/<str:{parameter}>/{verb}/", view.as_view(), name=f"api-{prefix}-{verb}")
        for verb, view in actions.items()
    ]


urlpatterns = [
    path("bottles/", BottleListView.as_view(), name="api-bottles"),
    path("bottles/<str:bottle_id>/", BottleDetailView.as_view(), name="api-bottle"),
    path("bottles/<str:bottle_id>/prescriptions/", BottlePrescriptionsView.as_view(), name="api-bottle-prescriptions"),
    path("bottles/<str:bottle_id>/duplicates/", BottleDuplicatesView.as_view(), name="api-bottle-duplicates"),
    path("tidies/", TidyListView.as_view(), name="api-tidies"),
    path("tidies/<str:tidy_id>/undo/", TidyUndoView.as_view(), name="api-tidy-undo"),
    path("prescriptions/<str:prescription_id>/", PrescriptionDetailView.as_view(), name="api-prescription"),
    path("prescriptions/<str:prescription_id>/pills/", PrescriptionPillsView.as_view(), name="api-prescription-pills"),
    *_actions("prescriptions", "prescription_id", PRESCRIPTION_ACTIONS),
    path("pills/<str:pill_id>/", PillDetailView.as_view(), name="api-pill"),
    *_actions("pills", "pill_id", PILL_ACTIONS),
    path("capsules/", CapsuleListView.as_view(), name="api-capsules"),
    path("capsules/<str:capsule_id>/", CapsuleDetailView.as_view(), name="api-capsule"),
    *_actions("capsules", "capsule_id", CAPSULE_ACTIONS),
    path("search/", SearchView.as_view(), name="api-pillbox-search"),
]

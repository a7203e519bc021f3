from django.urls import path, re_path
from django.views.generic import RedirectView

from webui import account_views, memory_views, tidy_views, views

# Record ids: a full UUID (with or without dashes) or a prefix of at least 8 hex digits, as the tools take them.
ID = r"(?P<{}>[0-9a-fA-F-]{{8,36}})"

urlpatterns = [
    path("", views.home, name="home"),
    path("list", views.todo_list_page, name="todo-list"),
    path("list/<str:verb>", views.todo_action, name="todo-action"),
    path("account/", account_views.account_page, name="account"),
    path("account/keys/new", account_views.key_create, name="account-key-create"),
    path("account/keys/<int:key_id>/revoke", account_views.key_revoke, name="account-key-revoke"),
    path("account/links/<int:link_id>/revoke", account_views.link_revoke_view, name="account-link-revoke"),
    path("account/sign-out-everywhere", account_views.sign_out_everywhere, name="account-sign-out-everywhere"),
    path("account/apps/<int:application_id>/revoke", account_views.app_revoke, name="account-app-revoke"),
    # Django's LoginView lands here when no ?next= was given (LOGIN_REDIRECT_URL's default).
    path("accounts/profile/", RedirectView.as_view(pattern_name="account")),
    path("pillbox/", memory_views.bottles, name="memory-bottles"),
    path(
        "pillbox/registrations/<int:registration_id>/<str:verb>",
        memory_views.registration_action,
        name="memory-registration-action",
    ),
    re_path(r"^pillbox/bottles/" + ID.format("bottle_id") + r"/$", memory_views.bottle, name="memory-bottle"),
    re_path(r"^pillbox/bottles/" + ID.format("bottle_id") + r"/tidy$", tidy_views.tidy_page, name="memory-tidy"),
    re_path(
        r"^pillbox/bottles/" + ID.format("bottle_id") + r"/tidy/apply$", tidy_views.tidy_apply, name="memory-tidy-apply"
    ),
    re_path(
        r"^pillbox/bottles/" + ID.format("bottle_id") + r"/tidy/" + ID.format("tidy_id") + r"/undo$",
        tidy_views.tidy_undo,
        name="memory-tidy-undo",
    ),
    re_path(
        r"^pillbox/prescriptions/" + ID.format("prescription_id") + r"/$",
        memory_views.prescription,
        name="memory-prescription",
    ),
    re_path(
        r"^pillbox/prescriptions/" + ID.format("prescription_id") + r"/(?P<verb>[a-z]+)$",
        memory_views.prescription_action,
        name="memory-prescription-action",
    ),
    re_path(r"^pillbox/pills/" + ID.format("pill_id") + r"/$", memory_views.pill, name="memory-pill"),
    re_path(
        r"^pillbox/pills/" + ID.format("pill_id") + r"/(?P<verb>[a-z]+)$",
        memory_views.pill_action,
        name="memory-pill-action",
    ),
    path("pillbox/capsules/", memory_views.capsules, name="memory-capsules"),
    re_path(r"^pillbox/capsules/" + ID.format("capsule_id") + r"/$", memory_views.capsule, name="memory-capsule"),
    re_path(
        r"^pillbox/capsules/" + ID.format("capsule_id") + r"/(?P<verb>[a-z]+)$",
        memory_views.capsule_action,
        name="memory-capsule-action",
    ),
    path("pillbox/search", memory_views.search_page, name="memory-search"),
]

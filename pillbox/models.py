"""Bottles (projects), prescriptions (work sessions), pills (memory entries), capsules (shared memory).

Bottles, prescriptions and pills live in whichever database holds the bottle: a project's own
`.pillbox/pillbox.db` for a local bottle, the global database for a global one. Capsules and the
per-user registry always live in the global database (see pillbox.routers).

Every id is a UUID v7 whose millisecond is made strictly increasing per table and database
(pillbox.ids), so the first 12 hex digits, the short id shown to agents, never collide; ``seq`` is
that millisecond as an integer, the row's key in the full-text index.
"""

from __future__ import annotations

from typing import Self, TypeVar

from django.conf import settings
from django.db import models

_M = TypeVar("_M", bound=models.Model)


class SoftDeleteQuerySet(models.QuerySet[_M]):
    def alive(self) -> Self:
        return self.filter(deleted_at__isnull=True)


class Bottle(models.Model):
    SCOPE_LOCAL = "local"
    SCOPE_GLOBAL = "global"
    SCOPES = [(SCOPE_LOCAL, "local"), (SCOPE_GLOBAL, "global")]

    id = models.UUIDField(primary_key=True, editable=False)
    name = models.CharField(max_length=255)
    display_name = models.CharField(max_length=255)
    directory = models.CharField(max_length=4096)
    scope = models.CharField(max_length=6, choices=SCOPES)
    created_at = models.DateTimeField()
    views = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name


class Prescription(models.Model):
    id = models.UUIDField(primary_key=True, editable=False)
    bottle = models.ForeignKey(Bottle, on_delete=models.CASCADE, related_name="prescriptions")
    title = models.CharField(max_length=255)
    author_name = models.CharField(max_length=255, blank=True)
    author_email = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    views = models.PositiveIntegerField(default=0)

    objects = SoftDeleteQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["bottle", "deleted_at"], name="pillbox_rx_bottle_alive")]

    def __str__(self) -> str:
        return self.title

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


class Pill(models.Model):
    id = models.UUIDField(primary_key=True, editable=False)
    seq = models.BigIntegerField(unique=True, editable=False)
    prescription = models.ForeignKey(Prescription, on_delete=models.CASCADE, related_name="pills")
    compound = models.CharField(max_length=64)
    title = models.CharField(max_length=255)
    content = models.TextField()
    author_name = models.CharField(max_length=255, blank=True)
    author_email = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)
    views = models.PositiveIntegerField(default=0)
    # The newer pill of the same bottle that replaces this one (pillbox.superseding): left out of searches and
    # contexts until that pill no longer names it. Nothing is deleted.
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="supersedes")

    objects = SoftDeleteQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            # Covering the typo vocabulary's check of the caller's rows (their count, newest and latest edit), so
            # in a database shared with others it reads index entries, not a table page per row.
            models.Index(fields=["prescription", "deleted_at", "seq", "updated_at"], name="pillbox_pill_rx_alive_seq"),
            models.Index(fields=["compound"], name="pillbox_pill_compound"),
        ]

    def __str__(self) -> str:
        return self.title


class Capsule(models.Model):
    id = models.UUIDField(primary_key=True, editable=False)
    seq = models.BigIntegerField(unique=True, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="capsules")
    compound = models.CharField(max_length=64)
    title = models.CharField(max_length=255)
    content = models.TextField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)
    views = models.PositiveIntegerField(default=0)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="supersedes")  # as a pill's

    objects = SoftDeleteQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["owner", "deleted_at", "seq", "updated_at"], name="pillbox_capsule_owner_seq"),
            models.Index(fields=["compound"], name="pillbox_capsule_compound"),
        ]

    def __str__(self) -> str:
        return self.title


class Registration(models.Model):
    """A user's registry entry: one bottle they use, and the database file that holds it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="bottle_registrations")
    bottle_id = models.UUIDField()
    name = models.CharField(max_length=255)
    display_name = models.CharField(max_length=255)
    scope = models.CharField(max_length=6, choices=Bottle.SCOPES)
    directory = models.CharField(max_length=4096)
    # Empty for a global bottle (it lives in the global database, wherever DATABASE_URL puts it).
    db_path = models.CharField(max_length=4096, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["user", "bottle_id"], name="pillbox_registration_unique")]

    def __str__(self) -> str:
        return f"{self.display_name} for {self.user}"


class PillVector(models.Model):
    """A pill's sentence embedding (float16, unit length), kept beside it in the same database.

    ``model`` names the embedder that made it, so vectors of another model are never compared with a query
    and are recomputed by the backfill.
    """

    pill = models.OneToOneField(Pill, primary_key=True, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    vector = models.BinaryField()

    class Meta:
        db_table = "pillbox_pill_vector"


class CapsuleVector(models.Model):
    capsule = models.OneToOneField(Capsule, primary_key=True, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    vector = models.BinaryField()

    class Meta:
        db_table = "pillbox_capsule_vector"


class OriginalImport(models.Model):
    """One database file of the original Pillbox whose memory was brought across, and what it held.

    A local file's record lives in that file itself (it travels with the project, so a moved project is not
    imported twice); the original's global file is recorded in the global database. ``username`` is plain
    text, not a foreign key: local files have no user table.
    """

    KIND_GLOBAL = "global"
    KIND_LOCAL = "local"

    source = models.CharField(max_length=4096, unique=True)
    kind = models.CharField(max_length=6, choices=[(KIND_GLOBAL, "global"), (KIND_LOCAL, "local")])
    username = models.CharField(max_length=150, blank=True)
    schema_version = models.PositiveIntegerField()
    imported_at = models.DateTimeField()
    bottles = models.PositiveIntegerField(default=0)
    prescriptions = models.PositiveIntegerField(default=0)
    pills = models.PositiveIntegerField(default=0)
    capsules = models.PositiveIntegerField(default=0)
    registrations = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.source} imported {self.imported_at:%Y-%m-%d %H:%M}"


class FileMark(models.Model):
    """The mark a project database gets from the Pillbox that makes it (or first upgrades it): a random token kept
    in the file itself. It proves nothing alone (a committed file's mark is public); with the file's real path,
    recorded in the user's global database (``OwnedFile``), it tells the user's own file from a copy or a
    stranger's."""

    token = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.token


class OwnedFile(models.Model):
    """A project database this user's Pillbox made on this machine, or that the user adopted; any other is foreign
    (pillbox.origin): not registered, searched or read by the session-start hook until adopted."""

    MADE = "made"
    ADOPTED = "adopted"
    UPGRADED = "upgraded"  # in the user's registry when this rule came in: taken as the user's own
    ORIGINS = [(MADE, "made here"), (ADOPTED, "adopted"), (UPGRADED, "registered before upgrade")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owned_files")
    token = models.CharField(max_length=64, blank=True)  # the file's FileMark; empty until an upgraded file gets one
    path = models.CharField(max_length=4096)  # the file's real path (links resolved)
    identity = models.CharField(max_length=64, blank=True)  # device:inode, which a moved file keeps and a copy does not
    origin = models.CharField(max_length=8, choices=ORIGINS)
    claimed_directory = models.CharField(max_length=4096, blank=True)  # adopted: the directory its bottle named
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "path"], name="pillbox_ownedfile_unique")]

    def __str__(self) -> str:
        return f"{self.path} ({self.origin}) of {self.user}"


class TidyPlan(models.Model):
    """A proposed tidy-up of one bottle (pillbox.tidying): groups of pills that say the same thing, each with the
    pill to keep. Its id is made from what it proposes and the state of those pills, so asking again for an
    unchanged bottle answers the same plan; ``state`` is that state (pill id -> last edit and superseding), which a
    tidy checks before applying anything."""

    id = models.UUIDField(primary_key=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tidy_plans")
    bottle_id = models.UUIDField()
    by_meaning = models.BooleanField(default=False)
    created_at = models.DateTimeField()
    groups = models.JSONField()  # [{"keeper": hex, "others": [hex, ...], "why": [text, ...], "keeper_why": text}]
    state = models.JSONField()  # {pill hex: fingerprint}

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"tidy plan {self.id.hex[:12]} of {self.user}"


class Tidy(models.Model):
    """A plan applied (all its groups or some): ``before`` records every touched pill's previous ``superseded_by``
    (hex or None), which the undo puts back exactly."""

    id = models.UUIDField(primary_key=True, editable=False)
    plan = models.ForeignKey(TidyPlan, on_delete=models.CASCADE, related_name="tidies")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tidies")
    bottle_id = models.UUIDField()
    group_numbers = models.JSONField()  # the plan's groups applied, numbered from 1
    before = models.JSONField()  # {pill hex: previous superseded_by hex or None}
    after = models.JSONField()  # {pill hex: the keeper hex that now supersedes it}
    applied_at = models.DateTimeField()
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"tidy {self.id.hex[:12]} of {self.user}"

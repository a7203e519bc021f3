# Written by hand: makemigrations resolves DOT's swappable Application through a setting this project leaves unset.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ListLink",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("token_hash", models.CharField(editable=False, max_length=64, unique=True)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("api_key", "API key"),
                            ("oauth", "OAuth application"),
                            ("stdio", "local agent (stdio)"),
                            ("session", "signed-in session"),
                        ],
                        max_length=16,
                    ),
                ),
                ("token_family", models.UUIDField(blank=True, null=True)),
                ("access_token_id", models.BigIntegerField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField()),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "api_key",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="list_links",
                        to="accounts.apikey",
                    ),
                ),
                ("application_id", models.BigIntegerField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="list_links",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "indexes": [models.Index(fields=["user", "revoked_at", "expires_at"], name="accounts_li_user_id_f0e26b_idx")],
            },
        ),
        migrations.CreateModel(
            name="RedeemedCode",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("code_hash", models.CharField(max_length=64, unique=True)),
                ("token_family", models.UUIDField(blank=True, null=True)),
                ("access_token_checksum", models.CharField(blank=True, max_length=64)),
                ("redeemed_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
    ]

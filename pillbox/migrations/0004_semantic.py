"""Sentence embeddings beside pills and capsules (pillbox.embeddings). Rows without one are backfilled."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("pillbox", "0003_postgres_search")]

    operations = [
        migrations.CreateModel(
            name="PillVector",
            fields=[
                ("pill", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                              related_name="+", serialize=False, to="pillbox.pill")),
                ("model", models.CharField(max_length=200)),
                ("vector", models.BinaryField()),
            ],
            options={"db_table": "pillbox_pill_vector"},
        ),
        migrations.CreateModel(
            name="CapsuleVector",
            fields=[
                ("capsule", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                                 related_name="+", serialize=False, to="pillbox.capsule")),
                ("model", models.CharField(max_length=200)),
                ("vector", models.BinaryField()),
            ],
            options={"db_table": "pillbox_capsule_vector"},
        ),
    ]

"""Tidy-up plans and the tidies applied from them (pillbox.tidying): global only, beside the user table."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pillbox', '0013_pgvector'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='TidyPlan',
            fields=[
                ('id', models.UUIDField(editable=False, primary_key=True, serialize=False)),
                ('bottle_id', models.UUIDField()),
                ('by_meaning', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField()),
                ('groups', models.JSONField()),
                ('state', models.JSONField()),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tidy_plans', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='Tidy',
            fields=[
                ('id', models.UUIDField(editable=False, primary_key=True, serialize=False)),
                ('bottle_id', models.UUIDField()),
                ('group_numbers', models.JSONField()),
                ('before', models.JSONField()),
                ('after', models.JSONField()),
                ('applied_at', models.DateTimeField()),
                ('undone_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tidies', to=settings.AUTH_USER_MODEL)),
                ('plan', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tidies', to='pillbox.tidyplan')),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
    ]

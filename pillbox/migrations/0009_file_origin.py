"""Memory has an origin: the mark a project database gets (FileMark, in the file itself) and the user's record of
the files their Pillbox made or they adopted (OwnedFile, global). Files already in a user's registry when this
came in are taken as that user's own (``upgraded``): they get their mark the next time they are opened."""

import os

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from pillbox.routers import is_local_alias


def own_the_registered_files(apps, schema_editor):
    if is_local_alias(schema_editor.connection.alias):
        return
    registration, owned = apps.get_model("pillbox", "Registration"), apps.get_model("pillbox", "OwnedFile")
    seen = set()
    for user_id, db_path in registration.objects.filter(scope="local").exclude(db_path="").values_list(
            "user_id", "db_path"):
        path = os.path.realpath(db_path)
        if (user_id, path) not in seen:
            seen.add((user_id, path))
            owned.objects.create(user_id=user_id, path=path, origin="upgraded")


class Migration(migrations.Migration):

    dependencies = [
        ('pillbox', '0008_fts_scoped_words'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='FileMark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token', models.CharField(max_length=64, unique=True)),
                ('created_at', models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name='OwnedFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token', models.CharField(blank=True, max_length=64)),
                ('path', models.CharField(max_length=4096)),
                ('identity', models.CharField(blank=True, max_length=64)),
                ('origin', models.CharField(choices=[('made', 'made here'), ('adopted', 'adopted'), ('upgraded', 'registered before upgrade')], max_length=8)),
                ('claimed_directory', models.CharField(blank=True, max_length=4096)),
                ('recorded_at', models.DateTimeField(auto_now_add=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='owned_files', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('user', 'path'), name='pillbox_ownedfile_unique')],
            },
        ),
        migrations.RunPython(own_the_registered_files, migrations.RunPython.noop, hints={"model_name": "ownedfile"}),
    ]

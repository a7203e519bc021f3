"""The record of each database file of the original Pillbox brought across (pillbox.original).

It migrates into local bottle files too (see pillbox.routers): a local file carries its own record."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pillbox', '0004_semantic'),
    ]

    operations = [
        migrations.CreateModel(
            name='OriginalImport',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source', models.CharField(max_length=4096, unique=True)),
                ('kind', models.CharField(choices=[('global', 'global'), ('local', 'local')], max_length=6)),
                ('username', models.CharField(blank=True, max_length=150)),
                ('schema_version', models.PositiveIntegerField()),
                ('imported_at', models.DateTimeField()),
                ('bottles', models.PositiveIntegerField(default=0)),
                ('prescriptions', models.PositiveIntegerField(default=0)),
                ('pills', models.PositiveIntegerField(default=0)),
                ('capsules', models.PositiveIntegerField(default=0)),
                ('registrations', models.PositiveIntegerField(default=0)),
                ('skipped', models.PositiveIntegerField(default=0)),
            ],
        ),
    ]

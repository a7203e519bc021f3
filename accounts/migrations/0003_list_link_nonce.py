from django.db import migrations, models


class Migration(migrations.Migration):
    """A /list link's token signs a random nonce and its user's account uid (no longer the row's id, which a
    restored backup hands out again); links made before have no nonce and stop opening."""

    dependencies = [("accounts", "0002_list_links")]

    operations = [
        migrations.AddField(
            model_name="listlink",
            name="nonce",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
    ]

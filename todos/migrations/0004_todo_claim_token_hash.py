from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("todos", "0003_todo_claim"),
    ]

    operations = [
        migrations.AddField(
            model_name="todo",
            name="claim_token_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
    ]

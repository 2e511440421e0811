# Host.env: the environment every command on a GPU host runs with (a venv's PATH, HF_HOME...).
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0003_search"),
    ]

    operations = [
        migrations.AddField(
            model_name="host",
            name="env",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text='Environment of every command on the host, e.g. {"PATH": "/opt/venv/bin:/bin"}',
            ),
        ),
    ]

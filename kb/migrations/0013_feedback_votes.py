"""Feedback becomes one vote per voter, fix and paste; a paste a fix fixed can become a
sample of its finding (learned_*).

Votes from before have no voter: those of a known user become that user's, the
anonymous ones are kept as "anonymous" and no longer count. Each old row gets its own
paste key, so none is lost to the new one-vote rule (ranking still counts a voter once).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def name_old_voters(apps, schema_editor):
    FixFeedback = apps.get_model("kb", "FixFeedback")
    for row in FixFeedback.objects.all().only("pk", "created_by_id"):
        row.voter = f"user:{row.created_by_id}" if row.created_by_id else "anonymous"
        row.paste_key = f"before-votes-{row.pk}"
        row.save(update_fields=["voter", "paste_key"])


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0012_search_document_without_text"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="fixfeedback",
            name="voter",
            field=models.CharField(
                default="anonymous",
                help_text='Who voted: "user:<id>", "token:<id>", "slack:<team>:<user>"',
                max_length=120,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="fixfeedback",
            name="paste_key",
            field=models.CharField(
                blank=True, help_text="Digest of the paste the fix was tried on", max_length=64
            ),
        ),
        migrations.AddField(
            model_name="fixfeedback",
            name="updated_at",
            field=models.DateTimeField(auto_now=True),
        ),
        migrations.AddField(
            model_name="fixfeedback",
            name="worked_instead_fix",
            field=models.ForeignKey(
                blank=True,
                help_text="Did not help: the fix that worked instead",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="kb.fix",
            ),
        ),
        migrations.AddField(
            model_name="fixfeedback",
            name="worked_instead_text",
            field=models.TextField(
                blank=True, help_text="Did not help: what worked instead, in the voter's words"
            ),
        ),
        migrations.AddField(
            model_name="fixfeedback",
            name="diagnosis",
            field=models.ForeignKey(
                blank=True,
                help_text="The diagnosis voted on: its paste is kept with the vote",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="feedback",
                to="kb.storeddiagnosis",
            ),
        ),
        migrations.RunPython(name_old_voters, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="fixfeedback",
            constraint=models.UniqueConstraint(
                fields=("voter", "fix", "paste_key"), name="one_vote_per_voter_fix_paste"
            ),
        ),
        migrations.AddField(
            model_name="errorsample",
            name="learned_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="errorsample",
            name="learned_by",
            field=models.ForeignKey(
                blank=True,
                help_text="The reviewer who added it",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="errorsample",
            name="learned_from",
            field=models.ForeignKey(
                blank=True,
                help_text="The “fixed it” vote whose paste this is",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="learned_samples",
                to="kb.fixfeedback",
            ),
        ),
    ]

# Filters read the search document's facets (no join on GPUs, flags, models), and the
# newest-first list walks an index instead of sorting every finding.
import django.utils.timezone
from django.db import migrations, models

FORWARD = [
    "CREATE INDEX IF NOT EXISTS kb_finding_newest ON kb_finding (updated_at DESC, id DESC)",
]
BACKWARD = ["DROP INDEX IF EXISTS kb_finding_newest"]
# Trigrams narrow a filtered search to the rows whose facets can match, before the
# exact `\nkey=value\n` test; without them PostgreSQL reads every full-text hit.
POSTGRES_FORWARD = [
    "CREATE INDEX kb_search_facets_trgm ON kb_findingsearchdocument "
    "USING gin (facets gin_trgm_ops)",
]
POSTGRES_BACKWARD = ["DROP INDEX IF EXISTS kb_search_facets_trgm"]


def run(statements, postgres=()):
    def operation(apps, schema_editor):
        extra = postgres if schema_editor.connection.vendor == "postgresql" else ()
        for statement in [*statements, *extra]:
            schema_editor.execute(statement)

    return operation


def queue_existing_documents(apps, schema_editor):
    # Existing documents get their facets at the next search (or `reindex_search`),
    # by the service's rules of the day rather than a copy frozen here.
    documents = apps.get_model("kb", "FindingSearchDocument")
    refresh = apps.get_model("kb", "SearchRefresh")
    now = django.utils.timezone.now()
    ids = documents.objects.values_list("finding_id", flat=True).iterator()
    refresh.objects.bulk_create(
        (refresh(finding_id=finding_id, queued_at=now) for finding_id in ids),
        batch_size=1000,
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [("kb", "0006_search_words")]

    operations = [
        migrations.AddField(
            model_name="findingsearchdocument",
            name="facets",
            field=models.TextField(
                blank=True,
                help_text="Filter values, one `key=value` a line: filtering needs no join",
            ),
        ),
        migrations.RunPython(
            run(FORWARD, POSTGRES_FORWARD), run(BACKWARD, POSTGRES_BACKWARD)
        ),
        migrations.RunPython(queue_existing_documents, migrations.RunPython.noop),
    ]

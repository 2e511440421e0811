# Search, faster and kinder to typos:
# - (this migration built a RUM index, of the rum extension, to read ranked matches in
#   order; 0023 drops it, since rum 1.3.13 crashed the server, and a new database never
#   builds it: search ranks through the GIN index by ts_rank);
# - `has this facet` is answered from a GIN index over the facets' lines;
# - a misspelt query word is read as the closest word of the index (kb_searchword,
#   trigram-indexed), so documents no longer keep a word list for trigram similarity;
# - documents are rebuilt: identifiers are now indexed with every suffix of their parts
#   (kb.services.search.identifier_wholes).
import django.utils.timezone
from django.db import migrations, models


def queue_existing_documents(apps, schema_editor):
    # Rebuilt at the next search (or `reindex_search`) by the service's rules of the day.
    documents = apps.get_model("kb", "FindingSearchDocument")
    refresh = apps.get_model("kb", "SearchRefresh")
    now = django.utils.timezone.now()
    ids = documents.objects.values_list("finding_id", flat=True).iterator()
    refresh.objects.bulk_create(
        (refresh(finding_id=finding_id, queued_at=now) for finding_id in ids),
        batch_size=1000,
        ignore_conflicts=True,
    )


POSTGRES_FORWARD = [
    "CREATE INDEX kb_searchword_trgm ON kb_searchword USING gin (word gin_trgm_ops)",
    # `has facet arch=sm_120` from the index: the facets text holds one facet a line.
    "CREATE INDEX kb_search_facet_lines ON kb_findingsearchdocument "
    "USING gin (string_to_array(facets, E'\\n'))",
    # Filters are now exact facets (parts of names are looked up in the vocabulary
    # first), so the trigrams over the facets text have nothing left to narrow.
    "DROP INDEX IF EXISTS kb_search_facets_trgm",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS kb_searchword_trgm",
    "DROP INDEX IF EXISTS kb_search_facet_lines",
    "CREATE INDEX kb_search_facets_trgm ON kb_findingsearchdocument "
    "USING gin (facets gin_trgm_ops)",
]


def on_postgres(statements):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return operation


class Migration(migrations.Migration):
    dependencies = [("kb", "0007_search_facets")]

    operations = [
        migrations.CreateModel(
            name="SearchWord",
            fields=[
                ("word", models.CharField(max_length=100, primary_key=True, serialize=False)),
            ],
        ),
        migrations.RemoveField(model_name="findingsearchdocument", name="words"),
        migrations.RunPython(on_postgres(POSTGRES_FORWARD), on_postgres(POSTGRES_BACKWARD)),
        migrations.RunPython(queue_existing_documents, migrations.RunPython.noop),
    ]

# Search support: one search document per finding, indexed the way each database can.
# PostgreSQL: GIN on the weighted tsvector, GIN trigram index on the plain text.
# SQLite: an FTS5 table over the same four fields (kept in step by kb.services.search).
import django.contrib.postgres.search
import django.db.models.deletion
from django.db import migrations, models

FTS_TABLE = "kb_finding_fts"

POSTGRES_FORWARD = [
    "CREATE INDEX kb_search_vector_gin ON kb_findingsearchdocument USING gin (vector)",
    "CREATE INDEX kb_search_text_trgm ON kb_findingsearchdocument USING gin (text gin_trgm_ops)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS kb_search_text_trgm",
    "DROP INDEX IF EXISTS kb_search_vector_gin",
]
SQLITE_FORWARD = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "title, errors, context, body, tokenize = 'unicode61 remove_diacritics 2')",
]
SQLITE_BACKWARD = [f"DROP TABLE IF EXISTS {FTS_TABLE}"]


def run_for_vendor(postgres, sqlite):
    def operation(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        for statement in {"postgresql": postgres, "sqlite": sqlite}.get(vendor, []):
            schema_editor.execute(statement)

    return operation


class Migration(migrations.Migration):
    dependencies = [("kb", "0002_pg_trgm")]

    operations = [
        migrations.CreateModel(
            name="FindingSearchDocument",
            fields=[
                (
                    "finding",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="search_document",
                        serialize=False,
                        to="kb.finding",
                    ),
                ),
                ("title", models.TextField(blank=True)),
                (
                    "errors",
                    models.TextField(blank=True, help_text="Signatures and verbatim error samples"),
                ),
                (
                    "context",
                    models.TextField(blank=True, help_text="Cause, summary, flags, GPUs, model"),
                ),
                ("body", models.TextField(blank=True, help_text="Body and fixes")),
                (
                    "text",
                    models.TextField(blank=True, help_text="All of the above, for trigram similarity"),
                ),
                ("vector", django.contrib.postgres.search.SearchVectorField(blank=True, null=True)),
                ("built_at", models.DateTimeField(auto_now=True)),
            ],
            options={"verbose_name": "finding search document"},
        ),
        migrations.RunPython(
            run_for_vendor(POSTGRES_FORWARD, SQLITE_FORWARD),
            run_for_vendor(POSTGRES_BACKWARD, SQLITE_BACKWARD),
        ),
    ]

# The RUM index over the search vectors goes: rum 1.3.13 (Debian 12's package) killed
# its server with a segfault on an OR query in our test suite, and after the server's
# recovery the index sent an INSERT into an endless loop (bench/README.md, "Session 31").
# Search ranks through the GIN index (0003) by ts_rank, the order it already gave on a
# server without the extension. The extension itself stays installed where it was: other
# databases of the server may use it.
from django.db import migrations


def drop_rum_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS kb_search_vector_rum")


class Migration(migrations.Migration):
    dependencies = [("kb", "0022_document_reader")]

    operations = [migrations.RunPython(drop_rum_index, migrations.RunPython.noop)]

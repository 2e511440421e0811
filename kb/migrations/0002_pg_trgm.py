# pg_trgm powers similarity search for partial error strings on PostgreSQL.
# On SQLite (the embedded default) this operation does nothing.
from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial")]
    operations = [TrigramExtension()]

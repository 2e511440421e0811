"""The Celery app. Broker and result backend come from settings (and so from the environment)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("fixgraph")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

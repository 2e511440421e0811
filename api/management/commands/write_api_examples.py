"""`python manage.py write_api_examples`: the docs' diagnose example, from this knowledge base.

Run it on the starter knowledge base (`make run` loads it), then commit api/examples/.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from api.examples import DIAGNOSE, DIAGNOSE_REQUEST
from api.serializers import DiagnosisSerializer
from kb.services.diagnosis import diagnose


class Command(BaseCommand):
    help = "Write api/examples/diagnose.json from the knowledge base this server runs on."

    def handle(self, *args: Any, **options: Any) -> None:
        request = DIAGNOSE_REQUEST
        result = diagnose(
            request["traceback"], gpu=request["gpu"], launch_command=request["launch_command"]
        )
        if not result.fixes:
            raise CommandError(
                "The example paste matched nothing: load the starter knowledge base first "
                "(manage.py ingest knowledge/ --publish)."
            )
        response = dict(DiagnosisSerializer(result, context=dict(request)).data)
        # What a stored diagnosis adds; a made-up link, as the docs show it.
        response["id"] = "q0Vx3mYkR2uT8bN1cW5eLg"
        response["html_url"] = "https://fixgraph.example.org/diagnose/q0Vx3mYkR2uT8bN1cW5eLg/"
        response = json.loads(
            json.dumps(response).replace("http://127.0.0.1:8000", "https://fixgraph.example.org")
        )
        DIAGNOSE.write_text(json.dumps({"request": request, "response": response}, indent=2) + "\n")
        self.stdout.write(f"wrote {DIAGNOSE}")

"""`manage.py shell`: models at hand, and no complaint about models no module holds."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


def test_the_shell_imports_the_models_without_reporting_historical_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = StringIO()
    call_command("shell", "-c", "print(Finding.__name__, Fix.__name__)", stdout=out, verbosity=1)

    assert capsys.readouterr().out.strip() == "Finding Fix"
    assert "could not be automatically imported" not in out.getvalue()
    assert "imported automatically" in out.getvalue()

"""Settings come from the environment and refuse unsafe combinations."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    clean.update({"FIXGRAPH_VAR_DIR": str(tmp_path / "var"), **env})
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_refuses_to_start_without_secret_key_when_debug_is_off(tmp_path: Path) -> None:
    result = load_settings(tmp_path, DEBUG="False")
    assert result.returncode != 0
    assert "SECRET_KEY is required when DEBUG is off" in result.stderr


def test_it_starts_with_secret_key_when_debug_is_off(tmp_path: Path) -> None:
    result = load_settings(tmp_path, DEBUG="False", SECRET_KEY="x" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_it_generates_a_local_secret_key_once_in_debug(tmp_path: Path) -> None:
    assert load_settings(tmp_path, DEBUG="True").returncode == 0
    key_file = tmp_path / "var" / "secret_key"
    first = key_file.read_text()
    assert load_settings(tmp_path, DEBUG="True").returncode == 0
    assert key_file.read_text() == first
    assert len(first) >= 40
    assert key_file.stat().st_mode & 0o077 == 0


def test_it_rejects_a_debug_value_that_is_not_a_boolean(tmp_path: Path) -> None:
    result = load_settings(tmp_path, DEBUG="yes please", SECRET_KEY="x" * 50)
    assert result.returncode != 0
    assert "DEBUG must be True or False" in result.stderr


def test_it_reads_the_secret_key_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("k" * 50 + "\n")
    result = load_settings(tmp_path, DEBUG="False", SECRET_KEY_FILE=str(secret))
    assert result.returncode == 0, result.stderr

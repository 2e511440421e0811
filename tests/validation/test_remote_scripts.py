"""The scripts FixGraph runs on GPU hosts are files that shellcheck reads, and every value
reaches them as a quoted argument, never pasted into their text."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from kb import remote

SCRIPTS = sorted(remote.SCRIPTS_DIR.glob("*.sh"))


def test_shellcheck_finds_nothing_in_the_remote_scripts() -> None:
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck is missing: `make test` installs it (Debian package shellcheck)"
    assert len(SCRIPTS) >= 6
    found = subprocess.run(
        [shellcheck, "--shell=sh", "--format=gcc", *map(str, SCRIPTS)],
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stdout


def test_a_script_gets_its_values_as_arguments_that_no_shell_reads_twice(tmp_path: Path) -> None:
    """The stop script, handed a folder name full of shell, touches only that folder."""
    marker = tmp_path / "pwned"
    folder = tmp_path / "run-$(touch pwned); echo '"
    folder.mkdir()
    command = remote.sh_command(remote.script("stop.sh"), str(folder))
    subprocess.run(["sh", "-c", command], check=True, timeout=30, cwd=tmp_path)
    assert (folder / "stop").exists()
    assert not marker.exists()
    assert shlex.split(command)[-1] == str(folder)

"""The benchmark corpora stay well-formed, and the checker notices when they are not."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus"


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_corpus", CORPUS / "check_corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def checker() -> ModuleType:
    return load_checker()


@pytest.fixture
def reports_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CORPUS / "reports", tmp_path / "reports"))


def edit_manifest(root: Path, edit) -> None:
    path = root / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def test_it_accepts_the_shipped_corpora(checker: ModuleType) -> None:
    assert checker.check_reports(CORPUS / "reports") == []
    assert checker.check_writeups(CORPUS / "writeups") == []


def test_it_rejects_a_flag_name_with_dashes_or_the_old_nsa_spelling(
    checker: ModuleType, reports_copy: Path
) -> None:
    def edit(manifest: dict) -> None:
        changes = manifest["findings"][0]["fixes"][0]["changes"]
        changes[0] = {"action": "set_flag", "name": "--kv-cache-dtype", "value": "bf16"}
        changes.append({"action": "set_flag", "name": "nsa-decode-backend", "value": "trtllm"})

    edit_manifest(reports_copy, edit)
    problems = checker.check_reports(reports_copy)
    assert any("'--kv-cache-dtype'" in p for p in problems)
    assert any("'nsa-decode-backend'" in p for p in problems)


def test_it_reports_a_missing_report_and_an_unlisted_one(
    checker: ModuleType, reports_copy: Path
) -> None:
    first = json.loads((reports_copy / "manifest.json").read_text())["findings"][0]
    (reports_copy / first["query_reports"][0]).unlink()
    (reports_copy / "unrelated" / "stray.txt").write_text("KeyError: 'x'\n")
    problems = checker.check_reports(reports_copy)
    assert any(first["query_reports"][0] in p and "missing" in p for p in problems)
    assert "unrelated/stray.txt is not in the manifest" in problems


def test_it_requires_a_helpful_fix_for_every_finding(
    checker: ModuleType, reports_copy: Path
) -> None:
    def edit(manifest: dict) -> None:
        for fix in manifest["findings"][1]["fixes"]:
            fix["outcome"] = "no_effect"

    edit_manifest(reports_copy, edit)
    problems = checker.check_reports(reports_copy)
    assert any("no fix that resolves" in p for p in problems)


def test_it_flags_a_write_up_without_labels(checker: ModuleType, tmp_path: Path) -> None:
    writeups = Path(shutil.copytree(CORPUS / "writeups", tmp_path / "writeups"))
    (writeups / "new-incident.md").write_text("# something broke\n")
    assert "new-incident.md: no labels" in checker.check_writeups(writeups)


def test_it_flags_an_attempt_on_a_symptom_the_episode_labels_do_not_name(
    checker: ModuleType, tmp_path: Path
) -> None:
    writeups = Path(shutil.copytree(CORPUS / "writeups", tmp_path / "writeups"))
    path = writeups / "mixtral-a100-40gb.episodes.json"
    episodes = json.loads(path.read_text())
    episodes["attempts"][0]["symptom"] = "no-such-symptom"
    del episodes["attempts"][1]
    path.write_text(json.dumps(episodes))
    problems = checker.check_writeups(writeups)
    assert any("is on no labelled symptom" in p for p in problems)
    assert (
        "mixtral-a100-40gb.episodes.json: attempts differ from the fixes of the labels" in problems
    )


def test_the_seed_episode_labels_are_well_formed(checker: ModuleType) -> None:
    seeds = sorted((CORPUS / "seeds").glob("*.episodes.json"))
    assert len(seeds) == 5
    assert [p for seed in seeds for p in checker.check_episodes(seed)] == []

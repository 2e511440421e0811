"""Load the built-in vocabulary (GPUs, launch flags) into the database.

The data files ship inside `decisiontree/data/`; this copies them into rows so
the admin, filters and foreign keys can use them. Idempotent: a second load
changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from django.db import transaction

from kb.models import Flag, Hardware

FRAMEWORK_FILES = {"sglang": "sglang_flags.json", "vllm": "vllm_flags.json"}


@dataclass
class LoadCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


def data_file(name: str) -> Any:
    return json.loads(resources.files("decisiontree").joinpath("data", name).read_text())


@transaction.atomic
def load_vocabulary() -> dict[str, LoadCounts]:
    return {"gpus": load_gpus(), "flags": load_flags()}


def load_gpus() -> LoadCounts:
    counts = LoadCounts()
    for gpu in data_file("gpus.json")["gpus"]:
        values = {
            "arch": gpu["arch"],
            "compute_capability": gpu["compute_capability"],
            "family": gpu.get("family") or "",
            "memory_gb": gpu.get("memory_gb"),
            "aliases": sorted(gpu.get("aliases") or []),
        }
        upsert(Hardware, {"name": gpu["name"]}, values, counts)
    return counts


def load_flags() -> LoadCounts:
    counts = LoadCounts()
    concepts = flag_concepts()
    for framework, filename in FRAMEWORK_FILES.items():
        for flag in data_file(filename)["flags"]:
            values = {
                "aliases": sorted(flag.get("aliases") or []),
                "type": flag.get("type") or "str",
                "choices": list(flag.get("choices") or []),
                "default": "" if flag.get("default") is None else str(flag["default"])[:200],
                "deprecated": bool(flag.get("deprecated")),
                "renamed": [list(pair) for pair in flag.get("renamed") or []],
                "concept": concepts.get((framework, flag["name"]), ""),
                "description": flag.get("description") or "",
            }
            upsert(Flag, {"framework": framework, "name": flag["name"]}, values, counts)
    return counts


def flag_concepts() -> dict[tuple[str, str], str]:
    """(framework, flag) → the concept it shares with the other framework's flag."""
    concepts: dict[tuple[str, str], str] = {}
    for alias in data_file("cross_aliases.json")["aliases"]:
        for framework in FRAMEWORK_FILES:
            if alias.get(framework):
                concepts[(framework, alias[framework])] = alias["concept"][:60]
    return concepts


def upsert(model: Any, key: dict[str, Any], values: dict[str, Any], counts: LoadCounts) -> None:
    row = model.objects.filter(**key).first()
    if row is None:
        model.objects.create(**key, **values)
        counts.created += 1
    elif any(getattr(row, name) != value for name, value in values.items()):
        for name, value in values.items():
            setattr(row, name, value)
        row.save()
        counts.updated += 1
    else:
        counts.unchanged += 1

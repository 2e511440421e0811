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
    rows = [
        (
            {"name": gpu["name"]},
            {
                "arch": gpu["arch"],
                "compute_capability": gpu["compute_capability"],
                "family": gpu.get("family") or "",
                "memory_gb": gpu.get("memory_gb"),
                "aliases": sorted(gpu.get("aliases") or []),
            },
        )
        for gpu in data_file("gpus.json")["gpus"]
    ]
    return upsert(Hardware, rows)


def load_flags() -> LoadCounts:
    concepts = flag_concepts()
    rows = [
        (
            {"framework": framework, "name": flag["name"]},
            {
                "aliases": sorted(flag.get("aliases") or []),
                "type": flag.get("type") or "str",
                "choices": list(flag.get("choices") or []),
                "default": "" if flag.get("default") is None else str(flag["default"])[:200],
                "deprecated": bool(flag.get("deprecated")),
                "renamed": [list(pair) for pair in flag.get("renamed") or []],
                "earlier_default": list(flag.get("earlier_default") or []),
                "concept": concepts.get((framework, flag["name"]), ""),
                "description": flag.get("description") or "",
            },
        )
        for framework, filename in FRAMEWORK_FILES.items()
        for flag in data_file(filename)["flags"]
    ]
    return upsert(Flag, rows)


def flag_concepts() -> dict[tuple[str, str], str]:
    """(framework, flag) → the concept it shares with the other framework's flag."""
    concepts: dict[tuple[str, str], str] = {}
    for alias in data_file("cross_aliases.json")["aliases"]:
        for framework in FRAMEWORK_FILES:
            if alias.get(framework):
                concepts[(framework, alias[framework])] = alias["concept"][:60]
    return concepts


Row = tuple[dict[str, Any], dict[str, Any]]  # (the row's unique key, its other values)


def upsert(model: Any, rows: list[Row]) -> LoadCounts:
    """Create the missing rows and correct the changed ones, in a few statements: one
    read of the table and one bulk write of each kind (row by row it was two round
    trips per flag, about 1.5 s for the ~950 rows, paid by every test that loads it).
    Hardware and flags send no signals that a bulk write would skip."""
    counts = LoadCounts()
    key_names = tuple(rows[0][0]) if rows else ()
    stored = {tuple(getattr(row, name) for name in key_names): row for row in model.objects.all()}
    created: dict[tuple[Any, ...], Any] = {}
    changed: dict[tuple[Any, ...], Any] = {}
    for key, values in rows:
        ident = tuple(key[name] for name in key_names)
        pending = created.get(ident) or changed.get(ident)
        if pending is not None:  # the same key twice in a data file: the later entry wins
            for name, value in values.items():
                setattr(pending, name, value)
            continue
        row = stored.get(ident)
        if row is None:
            created[ident] = model(**key, **values)
            counts.created += 1
        elif any(getattr(row, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(row, name, value)
            changed[ident] = row
            counts.updated += 1
        else:
            counts.unchanged += 1
    model.objects.bulk_create(created.values())
    if changed:
        model.objects.bulk_update(changed.values(), fields=list(rows[0][1]))
    return counts

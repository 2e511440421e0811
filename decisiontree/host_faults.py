"""Faults of the GPU or its driver that a paste shows, from NVIDIA's own vocabulary.

A kernel log's `NVRM: Xid (PCI:0000:3b:00): 79, ...` line, CUDA's "uncorrectable ECC error
encountered" or NVML's "Driver/library version mismatch" say that the host, not the
server, failed: no flag, release or model change fixes it, and the answer says so before
any fix. What each one means and what to do is data (`data/host_faults.json`, from
NVIDIA's Xid catalogue and the CUDA and NVML error descriptions).

`nvidia-smi -q` tells the same of a GPU before anything fails: a memory row waiting for a
reset to be remapped, a remap that failed, uncorrectable ECC errors since the last reset.
Pasted, or read by a validation run before it starts a server, those fields are faults too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

FAULTS_FILE = Path(__file__).resolve().parent / "data" / "host_faults.json"

# "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus." and the same
# code written in prose ("Xid 79", "XID: 48").
XID = re.compile(r"\bXid\b(?:\s*\((?P<where>[^)]*)\))?:?\s*(?P<code>\d{1,3})\b", re.IGNORECASE)


@dataclass(frozen=True)
class HostFault:
    kind: str  # "hardware" | "driver" | "application"
    seen: str  # "Xid 79", or the error's words: "uncorrectable ECC error encountered"
    meaning: str
    action: str  # "" where the meaning says it (an application fault)
    where: str | None = None  # "PCI:0000:3b:00"

    @property
    def serious(self) -> bool:
        """No server setting fixes it."""
        return bool(_faults()["kinds"][self.kind]["serious"])

    def describe(self) -> str:
        """ "Xid 79 on PCI:0000:3b:00: the GPU has fallen off the bus; a fault of the GPU,
        its memory or its link: no server setting fixes it. Drain the node; ..." """
        on = f" on {self.where}" if self.where else ""
        action = f" {self.action[0].upper()}{self.action[1:]}." if self.action else ""
        return f"{self.seen}{on}: {self.meaning}; {_faults()['kinds'][self.kind]['says']}.{action}"


# `nvidia-smi -q`: "GPU 00000000:18:00.0" opens a GPU; "    Remapped Rows" a section;
# "        Pending                           : No" a field, nested by its indent.
SMI_GPU = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
SMI_FIELD = re.compile(r"^(?P<indent> *)(?P<name>\S.*?)\s+: (?P<value>.*?)\s*$")
SMI_SECTION = re.compile(r"^(?P<indent> +)(?P<name>[A-Z][\w -]*?)\s*$")


@cache
def _faults() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FAULTS_FILE.read_text(encoding="utf-8"))
    return data


def kinds() -> tuple[str, ...]:
    """The kinds of fault: "hardware", "driver", "application"."""
    return tuple(_faults()["kinds"])


def host_faults(text: str) -> tuple[HostFault, ...]:
    """The faults the text shows, each once (per device): the hardware and driver ones,
    or, with none of those, the Xids the GPU raised for the program's own faults."""
    data = _faults()
    found: list[HostFault] = []
    codes = set()
    for match in XID.finditer(text):
        entry = data["xid"].get(match["code"])
        if entry is None:
            continue
        codes.add(match["code"])
        where = (match["where"] or "").strip() or None
        seen = f"Xid {match['code']}"
        found.append(
            HostFault(entry["kind"], seen, entry["meaning"], entry.get("action", ""), where)
        )
    lowered = text.lower()
    for entry in data["messages"]:
        if entry["text"].lower() in lowered and not codes & set(entry.get("xid", ())):
            found.append(HostFault(entry["kind"], entry["text"], entry["meaning"], entry["action"]))
    found.extend(gpu_health(text))
    unique = list(dict.fromkeys(found))
    serious = [fault for fault in unique if fault.serious]
    return tuple(serious or unique)


def gpu_health(text: str) -> tuple[HostFault, ...]:
    """The faults `nvidia-smi -q` shows in its memory-error fields, once per field and GPU:
    "Remapped Rows / Pending: Yes" on 00000000:18:00.0."""
    rules = _faults()["health_fields"]
    if not any(rule["under"][0] in text for rule in rules):
        return ()  # no such section: not nvidia-smi -q, and no line need be read
    found: dict[tuple[int, str | None], HostFault] = {}
    gpu: str | None = None
    sections: list[tuple[int, str]] = []
    for line in text.splitlines():
        if opened := SMI_GPU.match(line.strip()):
            gpu, sections = opened["bus"], []
            continue
        field = SMI_FIELD.match(line)
        header = None if field else SMI_SECTION.match(line)
        if not (field or header):
            continue
        entry = field or header
        assert entry is not None
        indent = len(entry["indent"])
        sections = [(depth, name) for depth, name in sections if depth < indent]
        if header:
            sections.append((indent, header["name"]))
            continue
        assert field is not None
        names = [name for _, name in sections]
        for number, rule in enumerate(rules):
            if (number, gpu) in found or not _holds(rule, names, field["name"], field["value"]):
                continue
            path = " / ".join([*names[-1:], field["name"]])
            found[number, gpu] = HostFault(
                rule["kind"], f"nvidia-smi: {path}: {field['value']}", rule["meaning"],
                rule["action"], gpu,
            )  # fmt: skip
    # The data's order: the fault whose action helps most first.
    return tuple(found[key] for key in sorted(found, key=lambda key: key[0]))


def _holds(rule: dict[str, Any], sections: list[str], name: str, value: str) -> bool:
    """Whether a field of `nvidia-smi -q` at `sections` is the rule's, at a bad value."""
    if rule["field"] not in name or not all(s in sections for s in rule["under"]):
        return False
    if rule["when"] == "yes":
        return value.lower() == "yes"
    return value.isdigit() and int(value) > 0


__all__ = ["HostFault", "gpu_health", "host_faults", "kinds"]

"""Faults of the GPU or its driver that a paste shows, from NVIDIA's own vocabulary.

A kernel log's `NVRM: Xid (PCI:0000:3b:00): 79, ...` line, CUDA's "uncorrectable ECC error
encountered" or NVML's "Driver/library version mismatch" say that the host, not the
server, failed: no flag, release or model change fixes it, and the answer says so before
any fix. What each one means and what to do is data (`data/host_faults.json`, from
NVIDIA's Xid catalogue and the CUDA and NVML error descriptions).
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
    unique = list(dict.fromkeys(found))
    serious = [fault for fault in unique if fault.serious]
    return tuple(serious or unique)


__all__ = ["HostFault", "host_faults", "kinds"]

"""One-off converter: reference flag/GPU dumps -> decisiontree/data/*.json.

Usage: python scripts/build_vocabulary.py REFERENCE_DIR

REFERENCE_DIR holds gpus.json, sglang_server_args.json and vllm_engine_args.json
(argparse dumps of the real parsers). Nothing at run time needs this script or
that folder: the JSON it writes is committed. Aliases people type, the GPU a
short name stands for, and the cross-framework table are written here by hand.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "decisiontree" / "data"

SGLANG_LATEST = "0.5.23"
SGLANG_PREVIOUS = "0.5.9"
VLLM_LATEST = "0.33.0"

FAMILY = {
    "Ada Lovelace": "Ada",
}

# Per nvidia-smi name: the short names people write. A short name that fits
# several SKUs goes to the one most deployments mean (SXM over PCIe).
GPU_ALIASES: dict[str, list[str]] = {
    "Tesla V100-SXM2-32GB": ["V100", "V100 32GB", "V100 SXM2"],
    "Tesla V100-SXM2-16GB": ["V100 16GB"],
    "Tesla T4": ["T4"],
    "NVIDIA A100-SXM4-80GB": ["A100", "A100 80GB", "A100 SXM", "A100 SXM4", "A100-80G"],
    "NVIDIA A100-SXM4-40GB": ["A100 40GB", "A100-40G"],
    "NVIDIA A100 80GB PCIe": ["A100 PCIe"],
    "NVIDIA A800-SXM4-80GB": ["A800", "A800 80GB"],
    "NVIDIA A10G": ["A10G"],
    "NVIDIA A10": ["A10"],
    "NVIDIA A40": ["A40"],
    "NVIDIA A30": ["A30"],
    "NVIDIA RTX A6000": ["RTX A6000", "A6000"],
    "NVIDIA GeForce RTX 3090": ["RTX 3090", "3090"],
    "NVIDIA GeForce RTX 3090 Ti": ["RTX 3090 Ti", "3090 Ti"],
    "NVIDIA GeForce RTX 3080": ["RTX 3080", "3080"],
    "NVIDIA L4": ["L4"],
    "NVIDIA L40S": ["L40S"],
    "NVIDIA L40": ["L40"],
    "NVIDIA L20": ["L20"],
    "NVIDIA RTX 6000 Ada Generation": ["RTX 6000 Ada", "6000 Ada"],
    "NVIDIA GeForce RTX 4090": ["RTX 4090", "4090"],
    "NVIDIA GeForce RTX 4080": ["RTX 4080", "4080"],
    "NVIDIA H100 80GB HBM3": ["H100 SXM", "H100 SXM5", "H100 80GB", "H100-80G"],
    "NVIDIA H100 PCIe": ["H100 PCIe"],
    "NVIDIA H100 NVL": ["H100 NVL"],
    "NVIDIA H800": ["H800"],
    "NVIDIA H20": ["H20"],
    "NVIDIA H200": ["H200", "H200 SXM", "H200 141GB"],
    "NVIDIA H200 NVL": ["H200 NVL"],
    "NVIDIA GH200 480GB": ["GH200"],
    "NVIDIA B200": ["B200", "HGX B200", "DGX B200"],
    "NVIDIA GB200": ["GB200"],
    "NVIDIA B300 SXM6 AC": ["B300", "HGX B300"],
    "NVIDIA GB300": ["GB300"],
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": [
        "RTX PRO 6000",
        "RTX PRO 6000 Blackwell",
        "PRO 6000 Blackwell",
        "PRO 6000",
        "RTX 6000 Pro",
        "RTX 6000 Blackwell",
        "RTX PRO 6000 Server",
        "RTX PRO 6000 SE",
    ],
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": [
        "RTX PRO 6000 Workstation",
        "RTX PRO 6000 WS",
    ],
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": ["RTX PRO 6000 Max-Q"],
    "NVIDIA RTX PRO 5000 Blackwell": ["RTX PRO 5000"],
    "NVIDIA RTX PRO 4500 Blackwell": ["RTX PRO 4500"],
    "NVIDIA RTX PRO 4000 Blackwell": ["RTX PRO 4000"],
    "NVIDIA GeForce RTX 5090": ["RTX 5090", "5090"],
    "NVIDIA GeForce RTX 5080": ["RTX 5080", "5080"],
    "NVIDIA GeForce RTX 5070 Ti": ["RTX 5070 Ti", "5070 Ti"],
    "NVIDIA GB10": ["GB10", "DGX Spark"],
}

# GPUs the reference leaves out that issue reports name: GeForce and workstation cards of
# every line since Pascal, laptop parts, older data-centre cards, Jetson modules. The
# compute capabilities are NVIDIA's (developer.nvidia.com/cuda-gpus), memory the product
# pages' (None where one name covers several sizes). Without them an RTX 3060 or a P100
# had no architecture, and no condition on it could be met or contradicted.
MORE_GPUS: list[dict[str, Any]] = [
    {
        "architecture": "Pascal",
        "sm": "sm_60",
        "compute_capability": "6.0",
        "names": {
            "Tesla P100-PCIE-16GB": 16,
            "Tesla P100-PCIE-12GB": 12,
            "Tesla P100-SXM2-16GB": 16,
            "Quadro GP100": 16,
        },
    },
    {
        "architecture": "Pascal",
        "sm": "sm_61",
        "compute_capability": "6.1",
        "names": {
            "Tesla P40": 24,
            "NVIDIA GeForce GTX 1060 6GB": 6,
            "NVIDIA GeForce GTX 1070": 8,
            "NVIDIA GeForce GTX 1070 Ti": 8,
            "NVIDIA GeForce GTX 1080": 8,
            "NVIDIA GeForce GTX 1080 Ti": 11,
            "NVIDIA TITAN Xp": 12,
            "Quadro P4000": 8,
            "Quadro P5000": 16,
            "Quadro P6000": 24,
        },
    },
    {
        "architecture": "Volta",
        "sm": "sm_70",
        "compute_capability": "7.0",
        "names": {"NVIDIA TITAN V": 12},
    },
    {
        "architecture": "Volta",
        "sm": "sm_72",
        "compute_capability": "7.2",
        "names": {"NVIDIA Jetson AGX Xavier": None},
    },
    {
        "architecture": "Turing",
        "sm": "sm_75",
        "compute_capability": "7.5",
        "names": {
            "NVIDIA GeForce GTX 1650": 4,
            "NVIDIA GeForce GTX 1660": 6,
            "NVIDIA GeForce GTX 1660 SUPER": 6,
            "NVIDIA GeForce GTX 1660 Ti": 6,
            "NVIDIA GeForce RTX 2060": 6,
            "NVIDIA GeForce RTX 2060 SUPER": 8,
            "NVIDIA GeForce RTX 2070": 8,
            "NVIDIA GeForce RTX 2070 SUPER": 8,
            "NVIDIA GeForce RTX 2080": 8,
            "NVIDIA GeForce RTX 2080 SUPER": 8,
            "NVIDIA GeForce RTX 2080 Ti": 11,
            "NVIDIA TITAN RTX": 24,
            "Quadro RTX 4000": 8,
            "Quadro RTX 5000": 16,
        },
    },
    {
        "architecture": "Ampere",
        "sm": "sm_86",
        "compute_capability": "8.6",
        "names": {
            "NVIDIA GeForce RTX 3050": 8,
            "NVIDIA GeForce RTX 3060": 12,
            "NVIDIA GeForce RTX 3060 Ti": 8,
            "NVIDIA GeForce RTX 3070": 8,
            "NVIDIA GeForce RTX 3070 Ti": 8,
            "NVIDIA GeForce RTX 3080 Ti": 12,
            "NVIDIA GeForce RTX 3060 Laptop GPU": 6,
            "NVIDIA GeForce RTX 3070 Laptop GPU": 8,
            "NVIDIA GeForce RTX 3080 Laptop GPU": None,
            "NVIDIA RTX A2000": None,
        },
    },
    {
        "architecture": "Ampere",
        "sm": "sm_87",
        "compute_capability": "8.7",
        "names": {"NVIDIA Jetson AGX Orin": None},
    },
    {
        "architecture": "Ada Lovelace",
        "sm": "sm_89",
        "compute_capability": "8.9",
        "names": {
            "NVIDIA GeForce RTX 4060": 8,
            "NVIDIA GeForce RTX 4060 Ti": None,
            "NVIDIA GeForce RTX 4070": 12,
            "NVIDIA GeForce RTX 4070 SUPER": 12,
            "NVIDIA GeForce RTX 4070 Ti": 12,
            "NVIDIA GeForce RTX 4070 Ti SUPER": 16,
            "NVIDIA GeForce RTX 4090 D": 24,
            "NVIDIA GeForce RTX 4060 Laptop GPU": 8,
            "NVIDIA GeForce RTX 4070 Laptop GPU": 8,
            "NVIDIA GeForce RTX 4080 Laptop GPU": 12,
            "NVIDIA GeForce RTX 4090 Laptop GPU": 16,
            "NVIDIA RTX 2000 Ada Generation": 16,
        },
    },
    {
        "architecture": "Blackwell",
        "sm": "sm_110",
        "compute_capability": "11.0",
        "names": {"NVIDIA Jetson AGX Thor": 128},
    },
    {
        "architecture": "Blackwell",
        "sm": "sm_120",
        "compute_capability": "12.0",
        "names": {
            "NVIDIA GeForce RTX 5050": 8,
            "NVIDIA GeForce RTX 5060": 8,
            "NVIDIA GeForce RTX 5060 Ti": None,
            "NVIDIA GeForce RTX 5070": 12,
            "NVIDIA GeForce RTX 5080 Laptop GPU": 16,
            "NVIDIA GeForce RTX 5090 Laptop GPU": 24,
        },
    },
]
MORE_ARCH_NAMES = {"sm_60": "Pascal (P100)", "sm_61": "Pascal (GP10x)"}
# The short names of MORE_GPUS; a GeForce card's bare number as for those above.
MORE_ALIASES: dict[str, list[str]] = {
    "Tesla P100-PCIE-16GB": ["P100"],
    "Tesla P40": ["P40"],
    "NVIDIA GeForce GTX 1060 6GB": ["GTX 1060"],
    "NVIDIA GeForce GTX 1080 Ti": ["1080 Ti"],
    "NVIDIA GeForce RTX 2080 Ti": ["2080 Ti"],
    "NVIDIA GeForce RTX 3060": ["3060"],
    "NVIDIA GeForce RTX 3060 Ti": ["3060 Ti"],
    "NVIDIA GeForce RTX 3070": ["3070"],
    "NVIDIA GeForce RTX 3080 Ti": ["3080 Ti"],
    "NVIDIA GeForce RTX 4060 Ti": ["4060 Ti"],
    "NVIDIA GeForce RTX 4070": ["4070"],
    "NVIDIA GeForce RTX 4070 Ti": ["4070 Ti"],
    "NVIDIA GeForce RTX 4070 Ti SUPER": ["4070 Ti SUPER"],
    "NVIDIA GeForce RTX 5060 Ti": ["5060 Ti"],
    "NVIDIA GeForce RTX 5070": ["5070"],
    "NVIDIA Jetson AGX Xavier": ["Jetson Xavier", "AGX Xavier", "Xavier NX"],
    "NVIDIA Jetson AGX Orin": ["Jetson Orin", "AGX Orin", "Orin Nano", "Orin NX", "Orin"],
    "NVIDIA Jetson AGX Thor": ["Jetson Thor", "AGX Thor"],
}

# Our own words, kept short, for the flags diagnoses talk about most.
DESCRIPTIONS = {
    ("sglang", "kv-cache-dtype"): "Storage type of the KV cache; fp8 variants halve its size.",
    ("sglang", "attention-backend"): "Attention kernels for prefill and decode; auto by default.",
    ("sglang", "dsa-decode-backend"): "Sparse-attention (DSA/NSA) kernel for decode.",
    ("sglang", "dsa-prefill-backend"): "Sparse-attention (DSA/NSA) kernel for prefill.",
    ("sglang", "mem-fraction-static"): "Share of GPU memory for weights plus the KV pool.",
    ("sglang", "cuda-graph-max-bs-decode"): "Largest decode batch captured as a CUDA graph.",
    ("sglang", "moe-runner-backend"): "Kernels that run the MoE experts.",
    ("sglang", "sampling-backend"): "Kernels that sample the next token.",
    ("sglang", "tp-size"): "GPUs one model copy is split across (tensor parallel).",
    ("vllm", "kv-cache-dtype"): "Storage type of the KV cache; 'fp8' means fp8_e4m3.",
    ("vllm", "attention-backend"): "Attention kernels; replaces VLLM_ATTENTION_BACKEND.",
    ("vllm", "gpu-memory-utilization"): "Share of each GPU's memory this engine may use.",
    ("vllm", "tensor-parallel-size"): "GPUs one model copy is split across (tensor parallel).",
    ("vllm", "enforce-eager"): "Run without CUDA graphs or torch.compile.",
}

# Flags that act on some model architectures only (config.json model_type). The dsa-*
# (formerly nsa-*) flags choose DeepSeek Sparse Attention kernels, which SGLang builds
# only for models with that attention; a corrected command never adds them for another.
DSA_MODELS = ["deepseek_v32", "glm_moe_dsa"]
MODEL_ARCHS = {
    ("sglang", name): DSA_MODELS
    for name in (
        "dsa-decode-backend",
        "dsa-paged-mqa-logits-backend",
        "dsa-prefill-backend",
        "dsa-topk-backend",
        "dsa-triton-union",
        "nsa-prefill-cp-mode",
    )
}
SGLANG_NOTES = {
    "model_archs": "Model architectures (config.json model_type) a flag acts on; absent = "
    "every model. The dsa-* (formerly nsa-*) flags choose DeepSeek Sparse Attention "
    "kernels, which SGLang builds only for models with that attention: deepseek_v32 and "
    "glm_moe_dsa. A corrected command never adds them for another model.",
    "earlier_default": "[default, last release known to have it]: the default before the "
    "newest release's; a null release means every release before the newest.",
}

# Defaults the newest vLLM changed. The dump holds only 0.33's; the reference's
# cross-server table says "default 0.92 in 0.33, 0.9 before".
VLLM_EARLIER_DEFAULTS = {"gpu-memory-utilization": ["0.9", None]}

# Same concept, different spelling per framework. "approximate": related, not equal values.
CROSS_ALIASES = [
    ("model", "model-path", "model", "same"),
    ("tensor parallel", "tp-size", "tensor-parallel-size", "same"),
    ("pipeline parallel", "pp-size", "pipeline-parallel-size", "same"),
    ("data parallel", "dp-size", "data-parallel-size", "same"),
    ("expert parallel", "ep-size", "enable-expert-parallel", "approximate"),
    ("memory fraction", "mem-fraction-static", "gpu-memory-utilization", "approximate"),
    ("max context", "context-length", "max-model-len", "same"),
    ("max concurrency", "max-running-requests", "max-num-seqs", "same"),
    ("prefill chunk", "chunked-prefill-size", "max-num-batched-tokens", "approximate"),
    ("kv cache dtype", "kv-cache-dtype", "kv-cache-dtype", "same"),
    ("quantization", "quantization", "quantization", "same"),
    ("no cuda graph", "disable-cuda-graph", "enforce-eager", "same"),
    ("cuda graph max batch", "cuda-graph-max-bs-decode", "max-cudagraph-capture-size", "same"),
    ("attention backend", "attention-backend", "attention-backend", "approximate"),
    ("moe kernels", "moe-runner-backend", "moe-backend", "approximate"),
    ("weights dtype", "dtype", "dtype", "same"),
    ("served name", "served-model-name", "served-model-name", "same"),
    ("trust remote code", "trust-remote-code", "trust-remote-code", "same"),
    ("prefix cache off", "disable-radix-cache", "enable-prefix-caching", "approximate"),
    ("load format", "load-format", "load-format", "same"),
    ("seed", "random-seed", "seed", "same"),
    ("host", "host", "host", "same"),
    ("port", "port", "port", "same"),
]

TYPES = {
    "bool(flag)": "bool",
    "int": "int",
    "human_readable_int": "int",
    "human_readable_int_or_auto": "int",
    "float": "float",
    "loads": "json",
    "json_list_type": "json",
    "json (config dataclass)": "json",
    "json/dict": "json",
    "json|str": "json",
    "parse_cuda_graph_config_arg": "json",
}


def bare(flag: str) -> str:
    return flag.lstrip("-")


def default_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 60 else None  # giant config dumps help nobody


def is_negation(alias: str, name: str) -> bool:
    a, n = bare(alias), bare(name)
    if a == "no-" + n:
        return True
    swaps = (("enable-", "disable-"), ("disable-", "enable-"))
    return any(n.startswith(x) and a == y + n[len(x) :] for x, y in swaps)


def as_list(choices: Any) -> list[Any]:
    # The 0.5.9 dump keeps some choices as unevaluated source text; those say nothing usable.
    return choices if isinstance(choices, list) else []


def flag_record(framework: str, raw: dict[str, Any]) -> dict[str, Any]:
    name = bare(raw["name"])
    # Long aliases lose their dashes like names do; short ones ("-tp") keep one to stay apart.
    aliases = [
        bare(a) if a.startswith("--") else a
        for a in raw.get("aliases") or []
        if not is_negation(a, raw["name"])
    ]
    negations = [bare(a) for a in raw.get("aliases") or [] if is_negation(a, raw["name"])]
    choices = list(dict.fromkeys(as_list(raw.get("choices")) + as_list(raw.get("choices_0_5_9"))))
    record: dict[str, Any] = {
        "name": name,
        "aliases": sorted(aliases),
        "type": TYPES.get(raw["type"], "str"),
        "choices": [str(c) for c in choices if c is not None],
        "default": default_text(raw.get("default")),
        "deprecated": bool(raw.get("deprecated")),
    }
    if negations:
        record["negations"] = sorted(negations)
    if (framework, name) in DESCRIPTIONS:
        record["description"] = DESCRIPTIONS[(framework, name)]
    if (framework, name) in MODEL_ARCHS:
        record["model_archs"] = MODEL_ARCHS[(framework, name)]
    earlier = default_text(raw.get("default_0_5_9"))
    # A switch unset (None) is off, as one defaulting to false: no change to tell.
    both_off = record["type"] == "bool" and {earlier, record["default"]} <= {None, "false"}
    if framework == "sglang" and earlier not in (None, record["default"]) and not both_off:
        record["earlier_default"] = [earlier, SGLANG_PREVIOUS]
    if framework == "vllm" and name in VLLM_EARLIER_DEFAULTS:
        record["earlier_default"] = VLLM_EARLIER_DEFAULTS[name]
    return record


def sglang_flags(ref: dict[str, Any]) -> list[dict[str, Any]]:
    records = {bare(f["name"]): flag_record("sglang", f) for f in ref["flags"]}
    for legacy in ref["legacy_flags_0_5_9"]:
        old = bare(legacy["name"])
        successor = (legacy.get("replaced_by_in_0_5_23") or "").split(" ")[0]
        if successor.startswith("--") and bare(successor) in records:
            record = records[bare(successor)]
            record.setdefault("renamed", []).append([old, SGLANG_PREVIOUS])
            record["aliases"] = sorted({*record["aliases"], old})
        else:
            record = flag_record("sglang", legacy)
            record["last_version"] = SGLANG_PREVIOUS  # gone in the newest release
            records[old] = record
    for raw in ref["flags"]:
        old = raw.get("legacy_name_0_5_9")
        record = records[bare(raw["name"])]
        if old and [bare(old), SGLANG_PREVIOUS] not in record.get("renamed", []):
            record.setdefault("renamed", []).append([bare(old), SGLANG_PREVIOUS])
            record["aliases"] = sorted({*record["aliases"], bare(old)})
    return sorted(records.values(), key=lambda r: r["name"])


def vllm_flags(ref: dict[str, Any]) -> list[dict[str, Any]]:
    records = [flag_record("vllm", f) for f in ref["flags"] if f["name"].startswith("-")]
    return sorted(records, key=lambda r: r["name"])


def memory_of(name: str, index: int, sizes: list[int], names: int) -> int | None:
    if len(sizes) == names:
        return sizes[index]
    in_name = re.search(r"(\d+)GB", name)  # "A100-SXM4-40GB": the SKU says it
    if in_name:
        return int(in_name.group(1))
    return sizes[0] if len(sizes) == 1 else None


def gpu_records(ref: dict[str, Any]) -> list[dict[str, Any]]:
    records = []
    for group in ref["gpus"]:
        sizes = group["memory_gb"] if isinstance(group["memory_gb"], list) else [group["memory_gb"]]
        for i, name in enumerate(group["nvidia_smi_names"]):
            if "/" in name:  # "Jetson AGX Thor / Thor": two spellings of one board
                continue
            memory = memory_of(name, i, sizes, len(group["nvidia_smi_names"]))
            records.append(gpu_record(name, GPU_ALIASES.get(name, []), group, memory))
    for group in MORE_GPUS:
        for name, memory in group["names"].items():
            records.append(gpu_record(name, MORE_ALIASES.get(name, []), group, memory))
    names = [r["name"] for r in records]
    assert len(names) == len(set(names)), "a GPU listed twice"
    unknown = (set(GPU_ALIASES) | set(MORE_ALIASES)) - set(names)
    assert not unknown, unknown
    return sorted(records, key=lambda r: (r["arch"], r["name"]))


def gpu_record(
    name: str, aliases: list[str], group: dict[str, Any], memory: int | None
) -> dict[str, Any]:
    return {
        "name": name,
        "aliases": sorted(aliases),
        "family": FAMILY.get(group["architecture"], group["architecture"]),
        "arch": group["sm"],
        "compute_capability": group["compute_capability"],
        "memory_gb": memory,
    }


def write_lines(path: Path, header: dict[str, Any], key: str, rows: list[Any]) -> None:
    """One record per line: compact, yet a changed flag shows as a one-line diff."""
    body = ",\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in rows)
    head = json.dumps(header, sort_keys=True, separators=(",", ":"))[:-1]
    sep = "," if header else ""
    path.write_text(f'{head}{sep}"{key}":[\n{body}\n]}}\n', encoding="utf-8")


def main(reference: Path) -> None:
    gpus = json.loads((reference / "gpus.json").read_text())
    sglang = json.loads((reference / "sglang_server_args.json").read_text())
    vllm = json.loads((reference / "vllm_engine_args.json").read_text())
    header = {"arch_names": arch_names(gpus), "cuda_releases": cuda_releases(gpus)}
    write_lines(DATA / "gpus.json", header, "gpus", gpu_records(gpus))
    write_lines(
        DATA / "sglang_flags.json",
        {"framework": "sglang", "latest_version": SGLANG_LATEST, "_notes": SGLANG_NOTES},
        "flags",
        sglang_flags(sglang),
    )
    write_lines(
        DATA / "vllm_flags.json",
        {"framework": "vllm", "latest_version": VLLM_LATEST},
        "flags",
        vllm_flags(vllm),
    )
    rows = [{"concept": c, "sglang": s, "vllm": v, "relation": r} for c, s, v, r in CROSS_ALIASES]
    write_lines(DATA / "cross_aliases.json", {}, "aliases", rows)


# CUDA 13.0 no longer compiles for the architectures before Turing (its release notes:
# Maxwell, Pascal and Volta are gone from the toolkit): 12.9 is the last that builds them.
CUDA_LAST = {"sm_60": "12.9", "sm_61": "12.9", "sm_70": "12.9", "sm_72": "12.9"}


def cuda_releases(gpus: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per architecture, the first CUDA release whose compiler builds machine code for it
    (the reference's `min_cuda_for_sm`, its release alone: "11.8 (12.x for wgmma
    features)" -> "11.8"), and the last one where a later release dropped it."""
    first = {}
    for arch, text in gpus["arch_rules"]["min_cuda_for_sm"].items():
        release = re.match(r"\d+\.\d+", text)
        assert release, f"no release in {text!r}"
        first[arch] = release.group()
    return {"first": dict(sorted(first.items())), "last": dict(sorted(CUDA_LAST.items()))}


def arch_names(gpus: dict[str, Any]) -> dict[str, str]:
    names = {f"sm_{k}": v for k, v in gpus["arch_rules"]["sm_to_arch"].items()} | MORE_ARCH_NAMES
    return dict(sorted(names.items()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))

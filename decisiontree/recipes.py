"""Recipes for validating a fix on a GPU host: the launch command, quoted for a remote
shell, and the parsers that turn benchmark output and `nvidia-smi` into plain numbers.

Pure Python: `kb/services/validation.py` does the I/O and feeds text in here.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from decisiontree.flags import canonical_flag, flag_key
from decisiontree.host_flags import flag_problem, model_problem
from decisiontree.records import Change, ChangeAction
from decisiontree.server_env import fix_env_problem
from decisiontree.vocabulary import Vocabulary, load

# ---------------------------------------------------------------- recipes


@dataclass(frozen=True)
class Recipe:
    """How to start one framework's server and know it is up."""

    framework: str
    entry: tuple[str, ...]  # argv before the model, e.g. ("python3", "-m", "sglang.launch_server")
    model_flag: str | None  # canonical flag carrying the model; None = positional (`vllm serve M`)
    health_path: str = "/health"
    startup_timeout_s: float = 600.0


RECIPES: Mapping[str, Recipe] = {
    "sglang": Recipe("sglang", ("python3", "-m", "sglang.launch_server"), "model-path"),
    "vllm": Recipe("vllm", ("vllm", "serve"), None),
}

# The worker owns where the server listens: the tunnel and the health check depend on it.
RESERVED_FLAGS = frozenset({"host", "port", "model-path", "model"})


# Shown in place of the port before a run starts (the worker picks a free one then).
PORT_PREVIEW = "<free port>"


class RecipeRefused(ValueError):
    """The launch cannot be built safely (unknown flag, unknown framework, no model)."""


@dataclass(frozen=True)
class LaunchPlan:
    """A server launch as argv and environment; `shell()` is the quoted remote command."""

    framework: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    port: int | None  # None: a preview; the port is picked on the host when the run starts

    def words(self) -> tuple[str, ...]:
        """The launch as one argv: `env NAME=value ... program args` (names are vetted)."""
        assignments = [f"{name}={value}" for name, value in self.env]
        return ("env", *assignments, *self.argv) if assignments else self.argv

    def shell(self) -> str:
        """Every word quoted: a `;` or a quote in a value stays part of that value."""
        return " ".join(shlex.quote(word) for word in self.words())


def recipe_for(framework: str) -> Recipe:
    recipe = RECIPES.get(framework.lower())
    if recipe is None:
        raise RecipeRefused(f"no recipe for framework {framework!r} (known: sglang, vllm)")
    return recipe


def lay_changes_over(
    flags: Mapping[str, str | None],
    env: Mapping[str, str],
    changes: Iterable[Change],
    *,
    framework: str,
) -> tuple[dict[str, str | None], dict[str, str]]:
    """The base flags and environment with a fix's flag and env changes laid over them.

    Flag names are compared canonically in `framework`'s table, so `--nsa-decode-backend`
    in the base is replaced, not duplicated, by a change to `dsa-decode-backend`, and
    SGLang's `--tp-size` by a change written `--tensor-parallel-size`. (A launch command
    as text is edited by decisiontree.launch.apply_changes.)
    """
    merged = {canonical_flag(name, framework): value for name, value in flags.items()}
    new_env = dict(env)
    for change in changes:
        name = canonical_flag(change.name, framework)
        if change.action is ChangeAction.SET_FLAG:
            merged[name] = change.value
        elif change.action is ChangeAction.REMOVE_FLAG:
            merged.pop(name, None)
        elif change.action is ChangeAction.SET_ENV:
            new_env[change.name] = change.value or ""
    return merged, new_env


def build_launch(
    recipe: Recipe,
    *,
    model: str,
    port: int | None,
    flags: Mapping[str, str | None],
    env: Mapping[str, str],
    version: str | None,
    allowed_flags: Collection[str] = (),
) -> LaunchPlan:
    """argv for `recipe` with `flags` spelled for the host's framework `version`.

    A flag the vocabulary does not know is refused rather than passed on: a typo
    would otherwise be reported as "the fix did not help". So is a flag or value the
    host policy refuses (`decisiontree.host_flags`: code nobody reviewed, files, free
    text), unless the host's operator allows that flag there (`allowed_flags`), and any
    environment variable that is not a vetted serving knob (`decisiontree.server_env`):
    this is the last check before a command for a host is built.
    """
    if not model:
        raise RecipeRefused("no model to serve: set one on the finding or in the run's recipe")
    if problem := model_problem(model):
        raise RecipeRefused(problem)
    vocab = load()
    head = list(recipe.entry)
    if recipe.model_flag:
        head.append(vocab.spell(recipe.model_flag, recipe.framework, version))
    head += [model, "--host", "127.0.0.1", "--port", PORT_PREVIEW if port is None else str(port)]
    tail = [
        word
        for name, value in flags.items()
        for word in _flag_words(vocab, recipe.framework, version, name, value, allowed_flags)
    ]
    for name, value in env.items():
        problem = fix_env_problem(name, value)
        if problem:
            raise RecipeRefused(problem)
    return LaunchPlan(recipe.framework, tuple(head + tail), tuple(env.items()), port)


def _flag_words(
    vocab: Vocabulary,
    framework: str,
    version: str | None,
    name: str,
    value: str | None,
    allowed: Collection[str],
) -> list[str]:
    spec = vocab.flag(name, framework)
    if spec is None:
        raise RecipeRefused(f"unknown {framework} flag --{flag_key(name)}: refusing to launch")
    if spec.name in RESERVED_FLAGS:
        return []
    if problem := flag_problem(spec, value, allowed):
        raise RecipeRefused(problem)
    spelled = vocab.spell(spec.name, framework, version)
    if spec.type == "bool":
        return [spelled] if (value or "true").lower() in ("true", "1", "yes") else []
    if value is None:
        raise RecipeRefused(f"--{spec.name} needs a value")
    if spec.type in ("int", "float"):
        # Several numbers after one flag (argparse's nargs, `--cuda-graph-bs 1 2 4`) are
        # read as one value; each is a word of its own for the server's parser.
        return [spelled, *value.split()]
    return [spelled, value]


def bench_argv(
    framework: str,
    *,
    model: str,
    port: int,
    requests: int,
    concurrency: int,
    input_tokens: int,
    output_tokens: int,
) -> tuple[str, ...]:
    """The framework's own serving benchmark against the server on the host's loopback,
    with a fixed-length random dataset (its printout is read by `parse_bench_console`)."""
    shared = [
        "--host", "127.0.0.1", "--port", str(port), "--model", model,
        "--dataset-name", "random", "--num-prompts", str(requests),
        "--random-input-len", str(input_tokens), "--random-output-len", str(output_tokens),
        "--max-concurrency", str(concurrency),
    ]  # fmt: skip
    if recipe_for(framework).framework == "sglang":
        # range ratio 1: every prompt has exactly the lengths asked for.
        return ("python3", "-m", "sglang.bench_serving", "--backend", "sglang", *shared,
                "--random-range-ratio", "1")  # fmt: skip
    return ("vllm", "bench", "serve", "--backend", "vllm", *shared, "--ignore-eos")


# ---------------------------------------------------------------- benchmark results


@dataclass(frozen=True)
class BenchMetrics:
    """One benchmark's result in FixGraph's schema, whatever tool produced it."""

    tool: str
    output_throughput_tok_s: float | None = None
    total_throughput_tok_s: float | None = None
    request_rate: float | None = None  # completed requests per second
    ttft_ms: float | None = None  # mean
    itl_ms: float | None = None  # mean
    completed: int | None = None
    failed: int | None = None
    duration_s: float | None = None
    extra: Mapping[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The shape stored in ValidationRun.metrics."""
        return {
            "tool": self.tool,
            "throughput_tok_s": self.output_throughput_tok_s,
            "total_throughput_tok_s": self.total_throughput_tok_s,
            "request_rate": self.request_rate,
            "ttft_ms": self.ttft_ms,
            "itl_ms": self.itl_ms,
            "completed": self.completed,
            "failed": self.failed,
            "duration_s": self.duration_s,
            **dict(self.extra),
        }


class UnknownBenchFormat(ValueError):
    """The text is none of the benchmark outputs FixGraph reads."""


_METRIC_LINE = re.compile(r"^\s*(?P<label>[A-Za-z0-9 ()/._-]+?):\s+(?P<value>\S+)\s*$")

# Console labels (lower-cased) -> schema field. Both tools print `label: value` lines.
_CONSOLE_FIELDS = {
    "output token throughput (tok/s)": "output_throughput_tok_s",
    "total token throughput (tok/s)": "total_throughput_tok_s",
    "request throughput (req/s)": "request_rate",
    "mean ttft (ms)": "ttft_ms",
    "mean itl (ms)": "itl_ms",
    "successful requests": "completed",
    "failed requests": "failed",
    "benchmark duration (s)": "duration_s",
}
_CONSOLE_EXTRA = {
    "median ttft (ms)": "median_ttft_ms",
    "p99 ttft (ms)": "p99_ttft_ms",
    "mean tpot (ms)": "tpot_ms",
    "median itl (ms)": "median_itl_ms",
    "p99 itl (ms)": "p99_itl_ms",
    "mean e2e latency (ms)": "e2e_latency_ms",
    "peak output token throughput (tok/s)": "peak_output_throughput_tok_s",
}


def parse_bench_console(text: str) -> BenchMetrics:
    """The `Serving Benchmark Result` block of `sglang.bench_serving` or `vllm bench serve`.

    The last block wins: a log may hold several runs (a sweep of request rates).
    """
    blocks = re.split(r"=+ Serving Benchmark Result =+", text)
    if len(blocks) < 2:
        raise UnknownBenchFormat("no 'Serving Benchmark Result' block found")
    pairs = _label_values(blocks[-1])
    # Only sglang prints the backend (vLLM's printout has no such line).
    sglang = re.search(r"^\s*Backend:", blocks[-1], re.M | re.I)
    tool = "sglang.bench_serving" if sglang else "vllm bench serve"
    values = {f: v for label, f in _CONSOLE_FIELDS.items() if (v := pairs.get(label)) is not None}
    extra = {f: v for label, f in _CONSOLE_EXTRA.items() if (v := pairs.get(label)) is not None}
    return _metrics(tool, values, extra)


def _label_values(block: str) -> dict[str, float]:
    pairs: dict[str, float] = {}
    for line in block.splitlines():
        found = _METRIC_LINE.match(line)
        number = _number(found.group("value")) if found else None
        if found and number is not None:
            pairs.setdefault(found.group("label").strip().lower(), number)
    return pairs


def _number(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


def _metrics(tool: str, values: Mapping[str, float], extra: Mapping[str, float]) -> BenchMetrics:
    counts = {k: int(values[k]) for k in ("completed", "failed") if k in values}
    floats = {k: v for k, v in values.items() if k not in counts}
    return BenchMetrics(tool=tool, **floats, **counts, extra=dict(extra))  # type: ignore[arg-type]


# Result-file keys -> schema field: sglang (`total_throughput`) and vLLM (`total_token_throughput`).
_JSON_FIELDS = {
    "output_throughput": "output_throughput_tok_s",
    "total_throughput": "total_throughput_tok_s",
    "total_token_throughput": "total_throughput_tok_s",
    "request_throughput": "request_rate",
    "mean_ttft_ms": "ttft_ms",
    "mean_itl_ms": "itl_ms",
    "completed": "completed",
    "failed": "failed",
    "duration": "duration_s",
}
_JSON_EXTRA = ("median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_itl_ms", "p99_itl_ms")


def parse_bench_json(data: Mapping[str, Any]) -> BenchMetrics:
    """One result object of `sglang.bench_serving --output-file` (a JSON Lines row)
    or of `vllm bench serve --save-result`."""
    values = {f: float(data[k]) for k, f in _JSON_FIELDS.items() if _is_number(data.get(k))}
    extra = {k: float(data[k]) for k in _JSON_EXTRA if _is_number(data.get(k))}
    tool = "vllm bench serve" if "total_token_throughput" in data else "sglang.bench_serving"
    return _metrics(tool, values, extra)


def parse_guidellm(data: Mapping[str, Any]) -> BenchMetrics:
    """A GuideLLM report (`benchmarks.json`): the benchmark with the highest output rate.

    GuideLLM sweeps several loads; the best sustained output rate is the figure a
    runbook quotes. Its metrics are distributions: the mean of successful requests.
    """
    runs = [b.get("metrics", {}) for b in data.get("benchmarks", []) if isinstance(b, Mapping)]
    if not runs:
        raise UnknownBenchFormat("GuideLLM report without benchmarks")
    best = max(runs, key=lambda m: _guidellm_mean(m, "output_tokens_per_second") or 0.0)
    values = {
        f: v
        for key, f in (
            ("output_tokens_per_second", "output_throughput_tok_s"),
            ("tokens_per_second", "total_throughput_tok_s"),
            ("requests_per_second", "request_rate"),
            ("time_to_first_token_ms", "ttft_ms"),
            ("inter_token_latency_ms", "itl_ms"),
        )
        if (v := _guidellm_mean(best, key)) is not None
    }
    return _metrics("guidellm", values, {})


def _guidellm_mean(metrics: Mapping[str, Any], key: str) -> float | None:
    entry = metrics.get(key)
    if not isinstance(entry, Mapping):
        return None
    stats = entry.get("successful", entry)
    mean = stats.get("mean") if isinstance(stats, Mapping) else None
    return float(mean) if isinstance(mean, int | float) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_bench_output(text: str) -> BenchMetrics:
    """Any supported result, told apart by its shape: console text, JSON, or JSON Lines
    (the last line is the latest run). Raises UnknownBenchFormat otherwise."""
    if "Serving Benchmark Result" in text:
        return parse_bench_console(text)
    data = _last_json_object(text)
    if data is None:
        raise UnknownBenchFormat("neither a benchmark printout nor a result file")
    if "benchmarks" in data:
        return parse_guidellm(data)
    if any(key in data for key in ("output_throughput", "request_throughput")):
        return parse_bench_json(data)
    raise UnknownBenchFormat("JSON without benchmark result keys")


def _last_json_object(text: str) -> Mapping[str, Any] | None:
    candidates = [text, *reversed(text.strip().splitlines())]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, Mapping):
            return data
    return None


# ---------------------------------------------------------------- host facts


@dataclass(frozen=True)
class GpuFact:
    name: str
    compute_capability: str
    arch: str | None
    memory_mib: int | None
    driver: str


_QUERY_HEADER = re.compile(r"^\s*name\s*,", re.I)


def parse_gpu_query(text: str) -> tuple[GpuFact, ...]:
    """Rows of `nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version
    --format=csv[,noheader][,nounits]`; a header line is skipped if present."""
    vocab = load()
    gpus: list[GpuFact] = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < 4 or _QUERY_HEADER.match(line):
            continue
        name, capability, memory, driver = cells[:4]
        found = re.match(r"\d+", memory)
        gpus.append(GpuFact(
            name, capability, vocab.arch_from_capability(capability),
            int(found.group()) if found else None, driver,
        ))  # fmt: skip
    return tuple(gpus)


def cuda_version(nvidia_smi_banner: str) -> str | None:
    """ "CUDA Version: 13.0" from the `nvidia-smi` table header (or `nvidia-smi --version`)."""
    found = re.search(r"CUDA Version\s*:\s*([0-9.]+)", nvidia_smi_banner)
    return found.group(1) if found else None


def gpu_summary(gpus: tuple[GpuFact, ...]) -> dict[str, Any]:
    """The facts a run records: the (first) GPU's name and arch, how many, the driver."""
    if not gpus:
        return {"gpu_count": 0}
    first = gpus[0]
    return {
        "gpu_count": len(gpus),
        "gpu_name": first.name,
        "arch": first.arch,
        "compute_capability": first.compute_capability,
        "memory_mib": first.memory_mib,
        "driver": first.driver,
        "gpus": [g.name for g in gpus],
    }


__all__ = [
    "RECIPES",
    "BenchMetrics",
    "GpuFact",
    "LaunchPlan",
    "Recipe",
    "RecipeRefused",
    "UnknownBenchFormat",
    "bench_argv",
    "build_launch",
    "cuda_version",
    "gpu_summary",
    "lay_changes_over",
    "parse_bench_console",
    "parse_bench_json",
    "parse_bench_output",
    "parse_guidellm",
    "parse_gpu_query",
    "recipe_for",
]

"""The context a diagnosis runs in: GPU, framework, model, flags, versions.

`build_context` gathers it from what a user gives: explicit fields, a launch
command, and whatever tool output and log lines are inside the pasted text
(nvidia-smi, `python -m sglang.check_env`, `python -m vllm.collect_env`,
SGLang's `server_args=ServerArgs(...)`, vLLM's engine config lines).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from decisiontree.flags import FRAMEWORKS, canonical_flag, python_value
from decisiontree.gpu_requirement import in_requirement
from decisiontree.launch import (
    PINNED_RELEASE,
    RELEASE_IMAGE_IN_TEXT,
    FoundCommand,
    LaunchCommand,
    command_in_text,
    release_written,
)
from decisiontree.logline import (
    escaped_lines,
    framework_of_log,
    html_unescaped,
    record_lines,
    strip_ansi,
)
from decisiontree.server_settings import (
    VLLM_FIELDS,
    SettingsDump,
    engine_calls,
    rebuilt_command,
    settings_dumps,
    stated_settings,
)
from decisiontree.versions import VERSION_TEXT, cuda_of_build, package_key, version_text
from decisiontree.vocabulary import Vocabulary, capability_of, load

Facts = dict[str, str]  # condition-style key ("gpu.arch", "flag.tp-size", "version.torch") -> value

_KEY_VALUE = re.compile(r"^[\s>|]*([A-Za-z\[][\w .()/\]-]*?)\s*:\s(.*)$")
_GPU_LINE = re.compile(r"^[\s>|]*GPU ([\d,\s]+):\s*(.+?)(?:\s+\(UUID:.*)?\s*$")


@dataclass(frozen=True)
class Context:
    gpus: tuple[str, ...] = ()  # canonical GPU names
    gpu_count: int | None = None
    arch: str | None = None  # "sm_120"
    # The compute capability as the user answered a question: "8.6", or a range the
    # question offered (">=8.0,<9.0"); else the architecture's.
    capability: str | None = None
    framework: str | None = None  # "sglang" | "vllm"
    framework_version: str | None = None
    model: str | None = None
    model_arch: str | None = None
    quantization: str | None = None
    # canonical flag -> value, as launched or as the server resolved it (the log wins:
    # it shows what really ran, including values the framework chose silently)
    flags: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)  # torch, cuda, driver, ...
    sources: Mapping[str, str] = field(default_factory=dict)  # key -> where it came from
    launched_flags: Mapping[str, str] = field(default_factory=dict)  # only what was typed
    unknown_flags: tuple[str, ...] = ()  # launch flags the vocabulary does not know
    env: Mapping[str, str] = field(default_factory=dict)  # VAR=value of the launch
    # With no launch command given: one the paste holds, for the corrected command.
    found_command: FoundCommand | None = None
    # A launch command was given or found, or the server printed its arguments: a flag
    # none of them names was not set. Else a flag's value is not known, not "not set".
    launch_seen: bool = False
    # The newest release the launch command's flag names allow (`--nsa-decode-backend`
    # is 0.5.9 or older); flags are spelled for it when the release is not known.
    written_release: str | None = None

    @property
    def spelling_version(self) -> str | None:
        """The release the answer spells flags for."""
        return self.framework_version or self.written_release

    def get(self, key: str) -> str | None:
        """The value of a condition key ("gpu.arch", "flag.kv-cache-dtype", ...), or None."""
        prefix, _, rest = key.partition(".")
        if prefix == "flag":
            return self.flags.get(canonical_flag(rest, self.framework))
        if prefix in ("version", "env"):
            return (self.versions if prefix == "version" else self.env).get(rest)
        if key == "gpu.capability":
            return self.capability or capability_of(self.arch)
        read = _CONTEXT_FIELDS.get(key)
        return read(self) if read else None

    def with_answer(self, key: str, value: str) -> Context:
        """A copy that knows the user's answer to a question about `key`."""
        sources = {**self.sources, key: "user"}
        prefix, _, rest = key.partition(".")
        if prefix == "flag":
            name = canonical_flag(rest, self.framework)
            sources = {**self.sources, f"flag.{name}": "user"}
            return replace(self, flags={**self.flags, name: value}, sources=sources)
        if prefix in ("version", "env"):
            target = "versions" if prefix == "version" else "env"
            merged = {**getattr(self, target), rest: value}
            return replace(self, **{target: merged, "sources": sources})  # type: ignore[arg-type]
        return replace(self, **_answer_fields(key, value), sources=sources)


# What `Context.get` reads for a condition key that names one fact of the setup (looked
# up by key: a condition is assessed a few dozen times a diagnosis).
_CONTEXT_FIELDS: dict[str, Callable[[Context], str | None]] = {
    "gpu.arch": lambda c: c.arch,
    "gpu.name": lambda c: c.gpus[0] if c.gpus else None,
    "gpu.count": lambda c: str(c.gpu_count) if c.gpu_count else None,
    "framework": lambda c: c.framework,
    "framework.version": lambda c: c.framework_version,
    "model.name": lambda c: c.model,
    "model.arch": lambda c: c.model_arch,
    "model.quantization": lambda c: c.quantization,
}


def _answer_fields(key: str, value: str) -> dict[str, Any]:
    vocabulary = load()
    if key == "gpu.name":
        gpu = vocabulary.gpu(value)
        return {"gpus": (gpu.name if gpu else value,), "arch": gpu.arch if gpu else None}
    if key == "gpu.arch":
        return {"arch": vocabulary.arch_of(value) or value}
    if key == "gpu.capability":
        return {"capability": value.strip()}
    if key == "gpu.count":
        return {"gpu_count": int(value) if value.isdigit() else None}
    if key == "model.name":
        info = vocabulary.model_info(value)
        return {
            "model": value,
            "model_arch": info.arch if info else None,
            "quantization": info.quantization if info else None,
        }
    fields = {
        "framework": "framework",
        "framework.version": "framework_version",
        "model.arch": "model_arch",
        "model.quantization": "quantization",
    }
    if key not in fields:
        raise KeyError(f"unknown context key: {key}")
    return {fields[key]: value.lower() if key == "framework" else value}


# ---------------------------------------------------------------- building


def build_context(
    text: str = "",
    *,
    launch_command: str | None = None,
    gpu: str | None = None,
    model: str | None = None,
    framework: str | None = None,
    framework_version: str | None = None,
    vocabulary: Vocabulary | None = None,
) -> Context:
    """Merge what is known about a deployment; explicit arguments win.

    Order, weakest first: prose mentions, traceback paths, a launch command
    found in the text, tool output (nvidia-smi, check_env, collect_env), server
    log lines, the `launch_command` argument, the other explicit arguments.
    Flags are the exception: a resolved value from a server log beats the
    launch command, because it is what the server actually ran with.
    """
    vocab = vocabulary or load()
    text = clean(text)
    typed = vocab.parse_launch_command(launch_command) if launch_command else None
    found_line = command_in_text(text)
    found = vocab.parse_launch_command(found_line) if found_line else None
    dumps = tuple(settings_dumps(text))  # read once: for facts, and for a rebuilt command
    # A script's offline engine: its arguments are what a launch command's flags are; and
    # the launch given may be such a call itself (`LLM(model=..., tensor_parallel_size=2)`).
    calls = list(engine_calls(text)) if found is None else []
    if launch_command and typed is not None and typed.framework is None:
        calls += engine_calls(launch_command, named=False)
    called = _call_facts(calls, vocab)
    layers: list[tuple[str, Facts]] = [
        ("text", _prose_facts(text, vocab)),
        ("log", _log_format_facts(text)),
        ("log", _path_facts(text)),
        ("log", _stated_facts(text, vocab)),
        ("launch_command", called),
        ("launch_command", _command_facts(found)),
        # The release a command names (an image tag, a pin); a log's own beats it.
        ("launch_command", _release_facts(found) | _release_facts(typed)),
        ("pip", pip_facts(text)),
        ("nvidia-smi", nvidia_smi_facts(text, vocab)),
        ("collect_env", collect_env_facts(text, vocab)),
        ("check_env", check_env_facts(text, vocab)),
        ("log", server_log_facts(text, vocab, dumps)),
        ("launch_command", _command_facts(typed)),
        ("user", _explicit_facts(vocab, gpu, model, framework, framework_version)),
    ]
    merged, sources = _merge(layers)
    if merged.get("framework"):
        # Flags an error message's object repr states: what ran, where nothing else says.
        for name, value in stated_settings(text, merged["framework"]).items():
            if f"flag.{name}" not in merged:
                merged[f"flag.{name}"], sources[f"flag.{name}"] = value, "message"
    launched = {
        **{k.removeprefix("flag."): v for k, v in called.items() if k.startswith("flag.")},
        **(dict(found.flags) if found else {}),
        **(dict(typed.flags) if typed else {}),
    }
    unknown = (found.unknown_flags if found else ()) + (typed.unknown_flags if typed else ())
    env = {**(dict(found.env) if found else {}), **(dict(typed.env) if typed else {})}
    context = _context_from(merged, sources, launched, tuple(dict.fromkeys(unknown)), env, vocab)
    rebuilt = rebuilt_command(dumps, context.framework_version)
    # With no command typed, the one the paste holds: as pasted, else rebuilt from the log.
    found_command = None
    if typed is None:
        found_command = FoundCommand(found_line, "paste") if found_line else rebuilt
    command = launch_command if typed is not None else found_command and found_command.text
    # The flag names of the command, else those the server printed, date the release.
    written = release_written(command or "") or (release_written(rebuilt.text) if rebuilt else None)
    seen = typed is not None or found_command is not None or bool(calls)
    return replace(context, found_command=found_command, written_release=written, launch_seen=seen)


def clean(text: str) -> str:
    """Pasted text without colour codes, HTML's escapes or carriage returns, a log collector's JSON
    records and a traceback escaped into one line read as the lines they carry."""
    text = html_unescaped(strip_ansi(text)).replace("\r\n", "\n").replace("\r", "\n")
    if "{" not in text and "\\n" not in text:
        return text
    records = (line for raw in text.split("\n") for line in (record_lines(raw) or [raw]))
    return "\n".join(part for line in records for part in (escaped_lines(line) or [line]))


def _merge(layers: list[tuple[str, Facts]]) -> tuple[Facts, dict[str, str]]:
    merged: Facts = {}
    sources: dict[str, str] = {}
    for source, facts in layers:
        for key, value in facts.items():
            if key.startswith("flag.") and sources.get(key) == "log" and source != "user":
                continue  # the resolved value stays; see build_context
            merged[key] = value
            sources[key] = source
    return merged, sources


def _context_from(
    facts: Facts,
    sources: dict[str, str],
    launched: dict[str, str],
    unknown: tuple[str, ...],
    env: dict[str, str],
    vocab: Vocabulary,
) -> Context:
    flags = {k[5:]: v for k, v in facts.items() if k.startswith("flag.")}
    versions = {k[8:]: v for k, v in facts.items() if k.startswith("version.")}
    framework, version = facts.get("framework"), facts.get("framework.version")
    if framework and version:
        versions.setdefault(framework, version)
    # A wheel's local label names the CUDA it was made with ("2.5.1+cu124"), where no
    # line said so ("CUDA used to build PyTorch").
    built_with = cuda_of_build(versions.get("torch", ""))
    if built_with and "torch.cuda" not in versions:
        versions["torch.cuda"] = built_with
        sources.setdefault("version.torch.cuda", sources.get("version.torch", "text"))
    # A `pip freeze` lists every package installed: what tools and logs name comes first.
    versions = dict(
        sorted(versions.items(), key=lambda kv: sources.get(f"version.{kv[0]}") == "pip")
    )
    model = facts.get("model.name")
    info = vocab.model_info(model) if model else None
    # What the framework's message states outranks what the model's name suggests.
    stated = facts.get("model.quantization")
    quantization = _quantization(flags, stated or (info.quantization if info else None), vocab)
    names = facts.get("gpu.name")
    derived = {"model.arch": "model.name", "model.quantization": "model.name"}
    for key, origin in derived.items():
        if origin in sources:
            sources.setdefault(key, sources[origin])
    return Context(
        gpus=tuple(names.split("\n")) if names else (),
        gpu_count=int(facts["gpu.count"]) if "gpu.count" in facts else None,
        arch=facts.get("gpu.arch"),
        capability=facts.get("gpu.capability"),
        framework=framework,
        framework_version=version,
        model=model,
        model_arch=info.arch if info else None,
        quantization=quantization,
        flags=flags,
        versions=versions,
        sources=sources,
        launched_flags=launched,
        unknown_flags=unknown,
        env=env,
    )


def _quantization(flags: Mapping[str, str], from_name: str | None, vocab: Vocabulary) -> str | None:
    """The --quantization flag names the method outright; the model name only hints."""
    flagged = flags.get("quantization")
    return (vocab.quantization(flagged) or flagged) if flagged else from_name


# ---------------------------------------------------------------- explicit input and commands


def _explicit_facts(
    vocab: Vocabulary,
    gpu: str | None,
    model: str | None,
    framework: str | None,
    framework_version: str | None,
) -> Facts:
    facts: Facts = _gpu_facts_from_words(gpu, vocab) if gpu else {}
    if model:
        facts["model.name"] = model.strip()
    if framework:
        facts["framework"] = framework.strip().lower()
    if framework_version:
        facts["framework.version"] = framework_version.strip().lstrip("v")
    return facts


def release_in_words(text: str) -> tuple[str | None, str | None]:
    """(framework, release) as a user types them into one field: "sglang 0.5.9",
    "vLLM v0.11.0", "0.5.9" (the framework then comes from the paste), "sglang"."""
    framework = next((w for w in re.findall(r"[a-z]+", text.lower()) if w in FRAMEWORKS), None)
    release = re.search(rf"(?<![\w.]){VERSION_TEXT}", text, re.IGNORECASE)
    return framework, release.group(1) if release else None


def _gpu_facts_from_words(words: str, vocab: Vocabulary) -> Facts:
    """ "8x H100" / "RTX PRO 6000" / "sm_120", as a user types it into the GPU field."""
    mentions = vocab.gpus_in_text(words)
    single = vocab.gpu(words)
    if not mentions and single:
        mentions = [(single, 1)]
    if not mentions:
        arch = vocab.arch_of(words)
        return {"gpu.arch": arch} if arch else {"gpu.name": words.strip()}
    facts = _gpu_list_facts([gpu.name for gpu, _ in mentions], vocab)
    if any(count > 1 for _, count in mentions):
        facts["gpu.count"] = str(sum(count for _, count in mentions))
    elif len(mentions) == 1 and _ONE_GPU.match(words):
        facts["gpu.count"] = "1"  # typed as one ("1x H100"): a split needing two is too many
    return facts


# The GPU field typed with a count of one; a bare name says nothing of how many.
_ONE_GPU = re.compile(r"\s*(?:1\s*[x×*]|one\b|single\b|a single\b)", re.I)


def _gpu_list_facts(names: list[str], vocab: Vocabulary) -> Facts:
    distinct = list(dict.fromkeys(names))
    facts: Facts = {"gpu.name": "\n".join(distinct)}
    gpu = vocab.gpu_named(distinct[0])
    if gpu:
        facts["gpu.arch"] = gpu.arch
    return facts


def _release_facts(command: LaunchCommand | None) -> Facts:
    if command is None or not command.release or not command.framework:
        return {}
    return {"framework": command.framework, "framework.version": command.release}


def _command_facts(command: LaunchCommand | None) -> Facts:
    if command is None:
        return {}
    facts: Facts = {f"flag.{k}": v for k, v in command.flags.items()}
    if command.framework:
        facts["framework"] = command.framework
    if command.model:
        facts["model.name"] = command.model
    return facts


# ---------------------------------------------------------------- prose and paths


def _prose_facts(text: str, vocab: Vocabulary) -> Facts:
    facts: Facts = {}
    mentions = vocab.gpus_in_text(text)
    if mentions:
        facts.update(_gpu_list_facts([g.name for g, _ in mentions], vocab))
        facts["gpu.count"] = str(sum(count for _, count in mentions))
    arch = _arch_in_prose(text, vocab)
    if arch:
        facts["gpu.arch"] = arch
    repo = _repo_id_in_prose(text, vocab)
    if repo:
        facts["model.name"] = repo
    return facts | _release_in_prose(text)


# "using vLLM 0.8.5", "sglang v0.4.6.post1", "vllm version 0.10.1": a framework named
# with its release in a sentence (a pin, an image tag, a log say it more firmly).
_RELEASE_IN_PROSE = re.compile(
    rf"\b(sglang|vllm)[ \t]{{1,3}}(?:version[ \t:]{{1,3}})?{VERSION_TEXT}(?!\w|\.\w)",
    re.IGNORECASE,
)


def _release_in_prose(text: str) -> Facts:
    """The framework and release a sentence names; nothing where it names several (an
    upgrade from one to another says nothing of which one failed)."""
    named = {(m.group(1).lower(), m.group(2)) for m in _RELEASE_IN_PROSE.finditer(text)}
    if len(named) != 1:
        return {}
    ((framework, release),) = named
    return {"framework": framework, "framework.version": release}


# What a framework measured and printed about the device it ran on: vLLM's and SGLang's
# quantization check ("Minimum capability: 80. Current capability: 75."; the capability
# as major*10+minor), and a capability said to be the device's own ("has compute
# capability 7.5", "'Tesla T4' (with compute capability 7.5)", PyTorch's "is of cuda
# capability 3.7", "current GPU compute capability: 7.5"). A requirement ("of at least
# 8.0", ">= 8.9", "Minimum capability", "a GPU that has compute capability 8.0 or newer")
# is not the device's.
_CURRENT_CAPABILITY = re.compile(r"\bCurrent capability:\s*(\d{1,2})(\d)\b")
_OWN_CAPABILITY = re.compile(
    r"(?:\bhas|\(with|\bis of|\bcurrent (?:GPU |device )?)\s*(?:cuda |compute )?capability:?\s*"
    r"(\d{1,2})\.(\d)\b(?!\s*(?:or |and |\+|x\b))",
    re.I,
)
# The method a quantization check names: "The quantization method awq is not supported ...".
_STATED_QUANTIZATION = re.compile(r"\bquantization method\s+[`'\"]?([\w-]+)", re.I)


def _stated_facts(text: str, vocab: Vocabulary) -> Facts:
    """The device's compute capability and the checkpoint's quantization method, where
    the framework's own message states them."""
    facts: Facts = {}
    stated = _CURRENT_CAPABILITY.search(text) or _OWN_CAPABILITY.search(text)
    if stated:
        capability = f"{int(stated.group(1))}.{stated.group(2)}"
        arch = vocab.arch_from_capability(capability)
        facts["gpu.arch" if arch else "gpu.capability"] = arch or capability
    method = _STATED_QUANTIZATION.search(text)
    if method and (quantization := vocab.quantization(method.group(1))):
        facts["model.quantization"] = quantization
    return facts


def _arch_in_prose(text: str, vocab: Vocabulary) -> str | None:
    """An arch named as the device's ("capability sm_120"), or the only one mentioned.

    Lists like PyTorch's "supports sm_80 sm_90" name many, so several distinct
    mentions without "capability" say nothing about the device; nor does the list of a
    requirement ("requires SM100/SM103, got sm120": sm120 is the device).
    """
    stated = re.search(r"capability\s+(sm_?\d{2,3})", text, re.I)
    if stated:
        return vocab.arch_of(stated.group(1))
    mentions = {
        vocab.arch_of(m.group())
        for m in re.finditer(r"\bsm_?\d{2,3}a?\b", text, re.I)
        if not in_requirement(text, m.start())  # "requires sm75 or higher": not the device
    }
    mentions.discard(None)
    return mentions.pop() if len(mentions) == 1 else None


def _repo_id_in_prose(text: str, vocab: Vocabulary) -> str | None:
    """A Hugging Face repo id ("zai-org/GLM-5-NVFP4") of a known family."""
    for match in re.finditer(r"(?<![\w./-])([A-Za-z0-9][\w.-]*/[\w.-]*[A-Za-z0-9])(?![\w/])", text):
        candidate = match.group(1)
        if re.search(r"\.(?:py|so|cu|json|log|txt|sh)$", candidate):
            continue
        info = vocab.model_info(candidate)
        if info and info.family:
            return candidate
    return None


def _log_format_facts(text: str) -> Facts:
    """The framework whose logger printed the paste's log lines."""
    framework = framework_of_log(text)
    return {"framework": framework} if framework else {}


def _path_facts(text: str) -> Facts:
    """Framework and Python version from traceback paths (site-packages/sglang/...)."""
    facts: Facts = {}
    # The packages' own subpackages (SGLang 0.5's, vLLM 0.6's and 0.34's): a directory
    # named like the framework holds them only where it is the framework.
    counts = {fw: len(re.findall(rf"[/\\]{fw}[/\\](?:srt|entrypoints|v1|engine|model_executor|"
                                 rf"launch_server|worker|distributed|layers|platforms|attention|"
                                 rf"executor|transformers_utils|compilation|spec_decode)", text))
              for fw in ("sglang", "vllm")}  # fmt: skip
    if max(counts.values()) > 0:
        facts["framework"] = max(counts, key=lambda fw: counts[fw])
    python = re.search(r"python(3\.\d{1,2})[/\\](?:site|dist)-packages", text)
    if python:
        facts["version.python"] = python.group(1)
    # A pinned package, else a release-tagged image: each names what ran.
    pinned = PINNED_RELEASE.search(text) or RELEASE_IMAGE_IN_TEXT.search(text)
    if pinned:
        facts["framework"], facts["framework.version"] = pinned.group(1), pinned.group(2)
    return facts


# ---------------------------------------------------------------- nvidia-smi


def nvidia_smi_facts(text: str, vocab: Vocabulary) -> Facts:
    """GPUs, driver and the driver's CUDA from any nvidia-smi output form."""
    facts: Facts = {}
    header = re.search(
        r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s+(\S+)\s+CUDA Version:\s+(\S+)", text
    )
    if header:
        facts["version.driver"], facts["version.driver.cuda"] = header.group(2), header.group(3)
    # `nvidia-smi --version` and `-q` print the same facts as padded key/value lines.
    labels = (
        ("version.driver", "(?:DRIVER version|Driver Version)"),
        ("version.driver.cuda", "CUDA Version"),
    )
    for key, label in labels:
        found = re.search(rf"^{label}\s+:\s*(\S+)", text, re.M)
        if found:
            facts[key] = found.group(1)
    gpus = (
        _table_gpus(text, vocab)
        or _csv_gpus(text, vocab, facts)
        or _listed_gpus(text, vocab)
        or _queried_gpus(text, vocab)
    )
    facts.update(_gpus_by_index(gpus, vocab))
    return facts


def _table_gpus(text: str, vocab: Vocabulary) -> dict[str, str]:
    """Rows like "|   0  NVIDIA H200        On  |" of the plain nvidia-smi table."""
    rows: dict[str, str] = {}
    for found in re.finditer(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|", text, re.M):
        name = found.group(2).rstrip(". ")  # old drivers truncate long names with "..."
        gpu = vocab.gpu_named(name) or vocab.gpu(name)
        rows[found.group(1)] = gpu.name if gpu else name
    return rows


def _csv_gpus(text: str, vocab: Vocabulary, facts: Facts) -> dict[str, str]:
    """`--query-gpu=... --format=csv`: fields recognised by shape, header or not."""
    rows: dict[str, str] = {}
    for number, line in enumerate(text.splitlines()):
        # Looking up every field of a log's many comma lines is slow; a GPU row names one.
        if "," not in line or not vocab.mentions_gpu(line):
            continue
        fields = [f.strip() for f in line.split(",")]
        gpu = next((g for g in map(vocab.gpu_named, fields) if g), None)
        if gpu is None or len(fields) < 2:
            continue
        index = fields[0] if fields[0].isdigit() else f"line{number}"
        rows[index] = gpu.name
        for value in fields:
            if re.fullmatch(r"\d{1,2}\.\d", value) and vocab.arch_from_capability(value):
                facts["gpu.arch"] = vocab.arch_from_capability(value) or ""
            elif re.fullmatch(r"\d{3}\.\d{2,3}(?:\.\d+)?", value):
                facts["version.driver"] = value
    return rows


def _queried_gpus(text: str, vocab: Vocabulary) -> dict[str, str]:
    """`nvidia-smi -q`: each GPU's "    Product Name    : NVIDIA H100 80GB HBM3"."""
    rows: dict[str, str] = {}
    for index, found in enumerate(re.finditer(r"^\s+Product Name\s+: (.+?)\s*$", text, re.M)):
        gpu = vocab.gpu_named(found.group(1)) or vocab.gpu(found.group(1))
        rows[str(index)] = gpu.name if gpu else found.group(1)
    return rows


def _listed_gpus(text: str, vocab: Vocabulary) -> dict[str, str]:
    """`nvidia-smi -L`: "GPU 0: NVIDIA H200 (UUID: GPU-...)"."""
    listed = "\n".join(line for line in text.splitlines() if "(UUID: GPU-" in line)
    return gpu_lines(listed, vocab)


# A row of the table's process list: "|    0   N/A  N/A    4242      C   python3    71680MiB |"
# (drivers before MIG print no GI/CI columns; a long row's memory is cut to "10291...").
_PROCESS_ROW = re.compile(
    r"^\|\s+(?P<gpu>\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(?P<pid>\d+)\s+[CGM+]+\s+"
    r"(?P<name>\S.*?)\s+(?:(?P<mib>\d+)MiB|\d+\.\.\.)\s*\|\s*$",
    re.M,
)
# `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`
_APPS_HEADER = re.compile(r"^pid, process_name, used_gpu_memory \[MiB\]\s*$", re.M)
_APPS_ROW = re.compile(r"^(?P<pid>\d+), (?P<name>[^,\n]+), (?P<mib>\d+) MiB\s*$", re.M)

GpuProcess = tuple[int | None, int, str, int | None]  # GPU index, pid, name, bytes


def nvidia_smi_processes(text: str) -> tuple[GpuProcess, ...]:
    """(GPU index, pid, process name, bytes) of each process nvidia-smi lists: its table,
    with a memory figure the table cut short taken from `--query-compute-apps` where the
    paste has it too; None where neither gives one."""
    apps: dict[int, tuple[str, int]] = {}
    if header := _APPS_HEADER.search(text):
        for row in _APPS_ROW.finditer(text, header.end()):
            apps[int(row["pid"])] = (row["name"], int(row["mib"]) * 1024**2)
    listed: list[GpuProcess] = []
    for row in _PROCESS_ROW.finditer(text):
        pid = int(row["pid"])
        used = int(row["mib"]) * 1024**2 if row["mib"] else apps.get(pid, ("", None))[1]
        listed.append((int(row["gpu"]), pid, row["name"], used))
    shown = {pid for _, pid, _, _ in listed}
    listed += [(None, pid, name, used) for pid, (name, used) in apps.items() if pid not in shown]
    return tuple(listed)


def _gpus_by_index(rows: Mapping[str, str], vocab: Vocabulary) -> Facts:
    if not rows:
        return {}
    facts = _gpu_list_facts(list(rows.values()), vocab)
    facts["gpu.count"] = str(len(rows))
    return facts


# ---------------------------------------------------------------- check_env and collect_env


def key_values(text: str) -> dict[str, str]:
    """First value of each "Key: value" line (fixed-width padding before the colon allowed)."""
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        found = _KEY_VALUE.match(line)
        if found:
            pairs.setdefault(found.group(1).strip(), found.group(2).strip())
    return pairs


def gpu_lines(text: str, vocab: Vocabulary) -> dict[str, str]:
    """ "GPU 0: NVIDIA H100 80GB HBM3" and check_env's grouped "GPU 0,1,2,3: NVIDIA H200"."""
    rows: dict[str, str] = {}
    text = re.sub(r"GPU models and configuration:\s*", "\n", text)
    for line in text.splitlines():
        found = _GPU_LINE.match(line)
        if not found or "Compute Capability" in found.group(2):
            continue
        gpu = vocab.gpu_named(found.group(2)) or vocab.gpu(found.group(2))
        for index in re.findall(r"\d+", found.group(1)):
            rows[index] = gpu.name if gpu else found.group(2)
    return rows


def check_env_facts(text: str, vocab: Vocabulary) -> Facts:
    """`python -m sglang.check_env`: GPUs, capability, CUDA, driver, package versions."""
    pairs = key_values(text)
    if "CUDA available" not in pairs and "CUDA Driver Version" not in pairs:
        return {}
    facts = _gpus_by_index(gpu_lines(text, vocab), vocab)
    capability = next((v for k, v in pairs.items() if k.endswith("Compute Capability")), None)
    if capability and vocab.arch_from_capability(capability):
        facts["gpu.arch"] = vocab.arch_from_capability(capability) or ""
    facts.update(_toolchain_versions(pairs))
    facts.update(_package_versions(pairs))
    if "version.sglang" in facts:
        facts["framework"], facts["framework.version"] = "sglang", facts["version.sglang"]
    return facts


def _toolchain_versions(pairs: Mapping[str, str]) -> Facts:
    facts: Facts = {}
    sources = {
        "python": ("Python", "Python version"),
        "torch": ("PyTorch", "PyTorch version"),
        "driver": ("CUDA Driver Version", "Nvidia driver version"),
        "cuda": ("NVCC", "CUDA runtime version"),
        "torch.cuda": ("CUDA used to build PyTorch",),
    }
    for key, labels in sources.items():
        value = next((pairs[label] for label in labels if label in pairs), None)
        version = _version_in(value, release=key == "cuda") if value else None
        if version:
            facts[f"version.{key}"] = version
    return facts


def _version_in(value: str, *, release: bool = False) -> str | None:
    """ "Cuda compilation tools, release 12.8, V12.8.93" -> "12.8"; "2.9.1+cu128" as is."""
    if release:
        found = re.search(r"release (\d+\.\d+)", value) or re.match(r"(\d+\.\d+)", value)
        return found.group(1) if found else None
    return version_text(value)


def _package_versions(pairs: Mapping[str, str]) -> Facts:
    facts: Facts = {}
    for name, value in pairs.items():
        version = _version_in(value)
        if version and re.fullmatch(r"[a-z][a-z0-9_.-]*", name):
            facts.setdefault(f"version.{package_key(name)}", version)
    return facts


# pip's own output, the versions installed: `pip freeze` ("torch==2.5.1+cu124"), the last
# line of `pip install` ("Successfully installed torch-2.5.1+cu124 triton-3.1.0") and `pip
# show` ("Name: torch", then "Version: 2.5.1+cu124").
_PIP_PIN = re.compile(r"^[ \t]*([A-Za-z][\w.-]{0,80})==(\S{1,80})[ \t]*$", re.M)
_PIP_INSTALLED = re.compile(r"^Successfully installed ([^\n]{1,20000})$", re.M)
_PIP_SHOW = re.compile(r"^Name: ([A-Za-z][\w.-]{0,80})[ \t]*\nVersion: (\S{1,80})", re.M)


def pip_facts(text: str) -> Facts:
    """The packages and versions pip's own output in the text says are installed."""
    found: list[tuple[str, str]] = []
    if "==" in text:
        found += _PIP_PIN.findall(text)
    if "Successfully installed" in text:
        for line in _PIP_INSTALLED.finditer(text):
            found += [item.rpartition("-")[::2] for item in line.group(1).split()]
    if "Name: " in text:
        found += _PIP_SHOW.findall(text)
    facts: Facts = {}
    for name, raw in found:
        version = version_text(raw)
        if name and version == raw.lstrip("v"):  # a version, whole: not "1.0-foo" or a path
            facts[f"version.{package_key(name)}"] = version
    return facts


def collect_env_facts(text: str, vocab: Vocabulary) -> Facts:
    """`python -m vllm.collect_env` (also `vllm collect-env`)."""
    pairs = key_values(text)
    if "PyTorch version" not in pairs and "vLLM Version" not in pairs:
        return {}
    facts = _gpus_by_index(gpu_lines(text, vocab), vocab)
    facts.update(_toolchain_versions(pairs))
    for found in re.finditer(r"^\[(?:pip3?|conda)\]\s+([\w.-]+)(?:==|\s+)(\d[\w.+-]*)", text, re.M):
        facts.setdefault(f"version.{package_key(found.group(1))}", found.group(2))
    vllm = _version_in(pairs.get("vLLM Version", ""))
    if vllm:
        facts["version.vllm"] = vllm
        facts["framework"], facts["framework.version"] = "vllm", vllm
    return facts


# ---------------------------------------------------------------- server log lines


def server_log_facts(text: str, vocab: Vocabulary, dumps: Iterable[SettingsDump]) -> Facts:
    """Resolved settings printed by the servers at start-up (`dumps`: those in `text`)."""
    facts: Facts = {}
    for dump in dumps:
        facts["framework"] = dump.framework
        for name, raw in dump.pairs:
            _add_setting(facts, dump.framework, name, raw, vocab)
    engine = re.search(r"LLM engine \(v(\d+\.\d+[\w.+-]*)\)", text) or re.search(
        r"vLLM API server version (\d+\.\d+[\w.+-]*)", text
    )
    if engine:
        facts["framework"], facts["framework.version"] = "vllm", engine.group(1)
    return facts


def _call_facts(calls: Iterable[SettingsDump], vocab: Vocabulary) -> Facts:
    """What a script gave its offline engine (`LLM(model=..., tensor_parallel_size=4)`)."""
    facts: Facts = {}
    for call in calls:
        facts["framework"] = call.framework
        for name, raw in call.pairs:
            _add_setting(facts, call.framework, name, raw, vocab)
    return facts


def _add_setting(facts: Facts, framework: str, name: str, raw: str, vocab: Vocabulary) -> None:
    value = python_value(raw)
    if value is None:
        return  # None = left for the server to decide; nothing was resolved
    if name in ("model_path", "model"):
        facts["model.name"] = value
    flag = VLLM_FIELDS.get(name) if framework == "vllm" else None
    spec = vocab.flag(flag or name, framework)
    if spec is not None:
        facts[f"flag.{spec.name}"] = value


__all__ = ["Context", "build_context", "clean", "key_values", "release_in_words"]

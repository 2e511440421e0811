"""Whether the builds a paste names can run on its GPU at all.

A new GPU meets wheels built before it, an old one wheels that left it out: then no flag
helps, and the install is the fix. Two things in a paste say so:

1. PyTorch's own start-up warnings, which name the architectures (or the range of compute
   capabilities) its build holds beside the GPU's own;
2. the CUDA release a build was made with (PyTorch's `+cu124`, the toolkit's nvcc), beside
   the releases whose compiler builds machine code for the GPU's architecture
   (`Vocabulary.cuda_range`, from `data/gpus.json`);
3. the same release beside the newest CUDA the driver runs (nvidia-smi's "CUDA Version"):
   a driver runs every build of its CUDA major version and older (CUDA's minor version
   compatibility), and none of a newer major version.

Machine code runs on the GPUs of its major version from its minor up (sm_121 runs sm_120's);
PTX of an older architecture may still be compiled for the GPU by the driver, which the
reading says where the build lists some.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from decisiontree.context import Context
from decisiontree.versions import cuda_of_build, satisfies
from decisiontree.vocabulary import Vocabulary, capability_of, machine_code_runs

# PyTorch's check of its kernels against each GPU (torch.cuda._check_cubins): "NVIDIA
# GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch
# installation. The current PyTorch install supports CUDA capabilities sm_50 ... sm_90."
_NOT_IN_BUILD = re.compile(
    r"(?:^|:[ \t])[ \t]*(?P<gpu>[^\n:]{1,100}?) with CUDA capability sm_(?P<arch>\d{2,3})"
    r" is not compatible with the current PyTorch installation\.?\s{0,20}"
    r"The current PyTorch install supports CUDA capabilities (?P<archs>[\w \t]{1,400})",
    re.MULTILINE,
)
# Its check of the capability (torch.cuda._check_capability): "Found GPU0 NVIDIA GeForce GTX
# 1080 Ti which is of cuda capability 6.1." then either the minimum alone ("PyTorch no
# longer supports this GPU because it is too old. The minimum cuda capability supported by
# this library is 7.0.") or the range ("Minimum and Maximum cuda capability supported by
# this version of PyTorch is (7.5) - (12.0)").
# Read from the fixed words on: the GPU's name is looked for in the few characters before
# them (`_FOUND_GPU`), so a paste of many "Found GPU0" costs no scan from each.
_OUT_OF_RANGE = re.compile(
    r"which is of cuda capability (?P<capability>\d{1,2}\.\d)\.?\s{0,20}"
    r"(?:PyTorch no longer supports this GPU because it is too old\.?\s{0,20}"
    r"The minimum cuda capability supported by this library is (?P<minimum>\d{1,2}\.\d)"
    r"|Minimum and Maximum cuda capability supported by this version of PyTorch is\s{0,20}"
    r"\((?P<low>\d{1,2}\.\d)\)\s{0,5}-\s{0,5}\((?P<high>\d{1,2}\.\d)\))",
    re.IGNORECASE,
)
_FOUND_GPU = re.compile(r"Found GPU\d{1,3} (?P<gpu>[^\n]{1,100}) $", re.IGNORECASE)
_LISTED_ARCH = re.compile(r"\b(sm|compute)_(\d{2,3})[a-z]?\b")


@dataclass(frozen=True)
class BuildSupport:
    """A build that holds no machine code for the GPU, as the paste shows it."""

    build: str  # "PyTorch", "PyTorch 2.5.1+cu124", "the CUDA toolkit 12.4"
    gpu: str  # the GPU's name, or its architecture where the paste names none
    arch: str  # "sm_120"
    says: str
    remedy: str

    @property
    def text(self) -> str:
        return f"{self.says} {self.remedy}"


def build_support(text: str, context: Context, vocabulary: Vocabulary) -> tuple[BuildSupport, ...]:
    """The builds of the paste (and of its context) that cannot run on its GPU."""
    found = list(_from_pytorch_warnings(text, vocabulary))
    if not found:  # PyTorch's own word beats what its CUDA release implies
        found += _from_cuda_release(context, vocabulary, "torch.cuda")
    found += _from_cuda_release(context, vocabulary, "cuda")
    found += _from_driver(context, vocabulary)
    unique = {(reading.build, reading.arch): reading for reading in found}
    return tuple(unique.values())


def _from_pytorch_warnings(text: str, vocabulary: Vocabulary) -> list[BuildSupport]:
    if "apabilit" not in text:  # both warnings say "capability"/"capabilities"
        return []
    found = []
    for match in _NOT_IN_BUILD.finditer(text):
        gpu, arch = _name(match["gpu"]), f"sm_{match['arch']}"
        listed = _LISTED_ARCH.findall(match["archs"])
        machine = [f"sm_{number}" for kind, number in listed if kind == "sm"]
        ptx = [f"compute_{number}" for kind, number in listed if kind == "compute"]
        if not machine or any(machine_code_runs(built, arch) for built in machine):
            continue  # PyTorch warns per major version; a listed minor of it runs
        says = (
            f"PyTorch was built for {_listed(machine)}; the {gpu} is {arch} and runs none of"
            " them: PyTorch's own kernels have no machine code for this GPU, whatever the"
            " extensions hold."
        )
        if runnable := [p for p in ptx if not _below(arch, p)]:  # PTX of X runs on X and up
            says += (
                f" The driver may still compile its PTX ({_listed(runnable)}) for this GPU at"
                " start-up."
            )
        found.append(BuildSupport("PyTorch", gpu, arch, says, _remedy(arch, machine, vocabulary)))
    for match in _OUT_OF_RANGE.finditer(text):
        named = _FOUND_GPU.search(text, max(0, match.start() - 120), match.start())
        found_arch = vocabulary.arch_from_capability(match["capability"])
        low = match["minimum"] or match["low"]
        if named is None or found_arch is None or low is None:
            continue
        arch = found_arch
        gpu, high = _name(named["gpu"]), match["high"]
        if _capability(low) <= _capability(match["capability"]) <= _capability(high or "99.9"):
            continue  # within what the build holds: not this warning's complaint
        span = f"{low} to {high}" if high else f"{low} and up"
        says = (
            f"PyTorch supports compute capability {span}; the {gpu} is"
            f" {match['capability']} ({arch}), outside it."
        )
        built = [f"sm_{low.replace('.', '')}"] + ([f"sm_{high.replace('.', '')}"] if high else [])
        found.append(BuildSupport("PyTorch", gpu, arch, says, _remedy(arch, built, vocabulary)))
    return found


def _from_cuda_release(context: Context, vocabulary: Vocabulary, key: str) -> list[BuildSupport]:
    """A build whose CUDA release compiles nothing for the context's GPU: PyTorch's wheel
    (`torch.cuda`, else its version's `+cu` label) or the toolkit (`cuda`)."""
    arch = context.arch
    release = context.versions.get(key)
    if key == "torch.cuda" and release is None:
        release = cuda_of_build(context.versions.get("torch", ""))
    if arch is None or release is None:
        return []
    first, last = vocabulary.cuda_range(arch)
    gpu = _gpu_of(context, vocabulary) or arch
    if first is not None and not satisfies(release, f">={first}"):
        bound, need, newer = f"from release {first} on", first, True
    elif last is not None and not satisfies(release, f"<={last}"):
        bound, need, newer = f"up to release {last}", last, False
    else:
        return []
    wanted = f"{need} or {'newer' if newer else 'older'}"
    if key == "cuda":
        says = (
            f"The CUDA toolkit here is {release}; its compiler builds for {arch} only {bound}:"
            f" kernels compiled on this machine (extensions built from source, just-in-time"
            f" kernels) cannot target the {gpu}."
        )
        remedy = f"Install CUDA toolkit {wanted} and point `CUDA_HOME` at it."
        return [BuildSupport(f"the CUDA toolkit {release}", gpu, arch, says, remedy)]
    torch = context.versions.get("torch")
    build = f"PyTorch {torch}" if torch else "PyTorch"
    says = (
        f"{build} was built with CUDA {release}, which compiles for {arch} only {bound}:"
        f" it holds no machine code for the {gpu}."
    )
    remedy = f"Install a PyTorch build made with {_made_with(need, newer=newer)}."
    return [BuildSupport(build, gpu, arch, says, remedy)]


def _from_driver(context: Context, vocabulary: Vocabulary) -> list[BuildSupport]:
    """Builds made with a CUDA major version newer than the driver runs: PyTorch's wheel
    (its `torch.cuda`, else its `+cu` label) and the toolkit, whose just-in-time kernels
    the driver must load."""
    runs = context.versions.get("driver.cuda")
    major = _major(runs)
    if major is None:
        return []
    driver = context.versions.get("driver")
    named = f"driver {driver}" if driver else "driver"
    gpu = _gpu_of(context, vocabulary) or context.arch or "GPU"
    torch = context.versions.get("torch")
    found = []
    for key, build in (("torch.cuda", f"PyTorch {torch}" if torch else "PyTorch"),
                       ("cuda", "the CUDA toolkit")):  # fmt: skip
        release = context.versions.get(key)
        if key == "torch.cuda" and release is None:
            release = cuda_of_build(torch or "")
        built = _major(release)
        if built is None or built <= major:
            continue
        if key == "cuda":
            build = f"the CUDA toolkit {release}"
        says = (
            f"{build} was made with CUDA {release}; the {named} runs CUDA up to {runs}"
            f' (nvidia-smi\'s "CUDA Version"): a driver runs builds of its own CUDA major'
            f" version and older, none of {built}.x."
        )
        remedy = (
            f"Install a driver whose nvidia-smi shows CUDA Version {built}.0 or newer, or a"
            f" build made with CUDA {major}.x, which this driver runs."
        )
        found.append(BuildSupport(build, gpu, context.arch or "", says, remedy))
    return found


def _major(release: str | None) -> int | None:
    found = re.match(r"\s*(\d{1,2})\.", release or "")
    return int(found.group(1)) if found else None


def _remedy(arch: str, built: list[str], vocabulary: Vocabulary) -> str:
    """What to install: a build made with a CUDA that compiles for `arch`, newer or older
    than the one that made `built` as the GPU is newer or older than all of it."""
    first, last = vocabulary.cuda_range(arch)
    newer = all(_below(b, arch) for b in built)
    if newer and first is not None:
        return f"Install a PyTorch build made with {_made_with(first, newer=True)}."
    older = f" (one made with CUDA {last} or older)" if last and not newer else ""
    return (
        f"Install a PyTorch build whose `torch.cuda.get_arch_list()` holds {arch}{older}, or"
        f" build PyTorch from source with `TORCH_CUDA_ARCH_LIST={capability_of(arch)}`."
    )


def cuda_needed(arch: str, vocabulary: Vocabulary) -> str:
    """What a build must be made with to run on `arch` ("CUDA 12.8 or newer (PyTorch's
    cu128 wheels or later)"); "" where any CUDA a current build uses will do."""
    first, last = vocabulary.cuda_range(arch)
    bounds = [_made_with(first, newer=True)] if first else []
    bounds += [_made_with(last, newer=False)] if last else []
    return "; ".join(bounds)


def _made_with(release: str, *, newer: bool) -> str:
    """ "CUDA 12.8 or newer (PyTorch's cu128 wheels or later)": PyTorch names its wheel
    indexes by the CUDA release they are made with."""
    wheels = f"PyTorch's cu{release.replace('.', '')} wheels or {'later' if newer else 'earlier'}"
    return f"CUDA {release} or {'newer' if newer else 'older'} ({wheels})"


def _gpu_of(context: Context, vocabulary: Vocabulary) -> str | None:
    """The context's GPU by name, where it is of the context's architecture."""
    for name in context.gpus:
        gpu = vocabulary.gpu_named(name)
        if gpu is None or gpu.arch == context.arch:
            return name
    return None


def _below(built: str, arch: str) -> bool:
    """`built` ("sm_90", "compute_90") is an older architecture than `arch`."""
    number = re.search(r"\d+$", built)
    target = re.search(r"\d+$", arch)
    return bool(number and target and int(number.group()) < int(target.group()))


def _capability(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def _listed(archs: list[str]) -> str:
    return ", ".join(archs[:-1]) + f" and {archs[-1]}" if len(archs) > 1 else archs[0]


def _name(text: str) -> str:
    return " ".join(text.split())

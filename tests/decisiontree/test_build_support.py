"""Builds that cannot run on the paste's GPU: PyTorch's own warnings, and CUDA releases."""

from __future__ import annotations

from decisiontree.build_support import build_support, cuda_needed
from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.vocabulary import load

# PyTorch's check of its kernels, as an RTX 5090 with a wheel made for CUDA 12.4 prints it
# when vLLM first touches the GPU.
NOT_IN_BUILD = """\
/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:230: UserWarning:
NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.
The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.
If you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please check the instructions at https://pytorch.org/get-started/locally/

  warnings.warn(
"""

# Its check of the capability, from a wheel that dropped Pascal; the message is indented
# as PyTorch's source writes it, and `warnings.warn(` follows under two spaces.
TOO_OLD = """\
/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:262: UserWarning:
    Found GPU0 NVIDIA GeForce GTX 1080 Ti which is of cuda capability 6.1.
    Minimum and Maximum cuda capability supported by this version of PyTorch is
    (7.5) - (12.0)

  warnings.warn(
"""

# `python -m sglang.check_env` on an RTX PRO 6000 server whose image predates Blackwell.
CHECK_ENV_CU124 = """\
Python: 3.12.3 (main, Nov  6 2024, 18:32:19) [GCC 13.2.0]
CUDA available: True
GPU 0,1: NVIDIA RTX PRO 6000 Blackwell Server Edition
GPU 0,1 Compute Capability: 12.0
CUDA_HOME: /usr/local/cuda
NVCC: Cuda compilation tools, release 12.4, V12.4.131
CUDA Driver Version: 575.57.08
PyTorch: 2.5.1+cu124
sglang: 0.5.9
"""


def readings(text: str, **context: object):  # type: ignore[no-untyped-def]
    return build_support(text, build_context(text, **context), load())  # type: ignore[arg-type]


def test_pytorchs_warning_says_its_build_lacks_the_gpu_and_which_cuda_builds_for_it() -> None:
    [reading] = readings(NOT_IN_BUILD)

    assert (reading.build, reading.gpu, reading.arch) == (
        "PyTorch",
        "NVIDIA GeForce RTX 5090",
        "sm_120",
    )
    assert "sm_50, sm_60, sm_70, sm_75, sm_80, sm_86 and sm_90" in reading.says
    assert "runs none of them" in reading.says
    assert reading.remedy == (
        "Install a PyTorch build made with CUDA 12.8 or newer (PyTorch's cu128 wheels or later)."
    )


def test_a_listed_minor_of_the_gpus_major_version_runs_on_it() -> None:
    # A GB10 (sm_121) runs sm_120's machine code: nothing to say, whatever the wording.
    text = NOT_IN_BUILD.replace("RTX 5090", "GB10").replace("sm_120", "sm_121")
    assert readings(text.replace("sm_86 sm_90", "sm_86 sm_90 sm_100 sm_120")) == ()
    [reading] = readings(text)
    assert reading.arch == "sm_121"
    assert "CUDA 12.8 or newer" in reading.remedy  # sm_120's first release serves sm_121


def test_ptx_the_build_carries_for_an_older_architecture_is_named() -> None:
    [reading] = readings(NOT_IN_BUILD.replace("sm_86 sm_90.", "sm_86 sm_90 compute_90."))

    assert (
        "The driver may still compile its PTX (compute_90) for this GPU at start-up."
        in reading.says
    )


def test_a_gpu_older_than_the_build_gets_an_older_build_not_a_newer_cuda() -> None:
    [reading] = readings(TOO_OLD)

    assert (reading.gpu, reading.arch) == ("NVIDIA GeForce GTX 1080 Ti", "sm_61")
    assert reading.says == (
        "PyTorch supports compute capability 7.5 to 12.0; the NVIDIA GeForce GTX 1080 Ti is"
        " 6.1 (sm_61), outside it."
    )
    assert "CUDA 12.9 or older" in reading.remedy  # CUDA 13 builds nothing for Pascal
    assert "`TORCH_CUDA_ARCH_LIST=6.1`" in reading.remedy
    assert "or newer" not in reading.remedy


def test_the_older_too_old_wording_gives_the_minimum_alone() -> None:
    text = (
        "UserWarning: Found GPU0 NVIDIA GeForce GTX 1060 6GB which is of cuda capability 6.1.\n"
        "PyTorch no longer supports this GPU because it is too old.\n"
        "The minimum cuda capability supported by this library is 7.0.\n"
    )
    [reading] = readings(text)

    assert "compute capability 7.0 and up" in reading.says
    assert reading.arch == "sm_61"


def test_a_capability_inside_the_range_is_no_complaint() -> None:
    assert readings(TOO_OLD.replace("6.1.", "8.6.").replace("GTX 1080 Ti", "RTX 3090")) == ()


def test_a_wheel_and_a_toolkit_older_than_the_gpu_each_say_so() -> None:
    torch, toolkit = readings(CHECK_ENV_CU124)

    assert torch.build == "PyTorch 2.5.1+cu124"
    assert torch.says == (
        "PyTorch 2.5.1+cu124 was built with CUDA 12.4, which compiles for sm_120 only from"
        " release 12.8 on: it holds no machine code for the NVIDIA RTX PRO 6000 Blackwell"
        " Server Edition."
    )
    assert "cu128" in torch.remedy
    assert toolkit.build == "the CUDA toolkit 12.4"
    assert toolkit.remedy == "Install CUDA toolkit 12.8 or newer and point `CUDA_HOME` at it."


def test_builds_made_for_the_gpu_say_nothing() -> None:
    fine = CHECK_ENV_CU124.replace("2.5.1+cu124", "2.8.0+cu128").replace("12.4", "12.8")
    assert readings(fine) == ()
    # An Ada GPU runs the sm_80 code of any CUDA 11 wheel; sm_89's own first release is
    # not what it needs.
    ada = Context(
        arch="sm_89", gpus=("NVIDIA GeForce RTX 4090",), versions={"torch": "2.0.1+cu117"}
    )
    assert build_support("", ada, load()) == ()


def test_a_hopper_gpu_with_a_cuda_11_7_wheel_and_a_volta_gpu_with_cuda_13() -> None:
    hopper = Context(
        arch="sm_90", gpus=("NVIDIA H100 80GB HBM3",), versions={"torch": "2.0.1+cu117"}
    )
    [reading] = build_support("", hopper, load())
    assert "CUDA 11.8 or newer" in reading.remedy

    volta = Context(arch="sm_70", gpus=("Tesla V100-SXM2-32GB",), versions={"cuda": "13.0"})
    [reading] = build_support("", volta, load())
    assert reading.says.startswith("The CUDA toolkit here is 13.0; its compiler builds for sm_70")
    assert "up to release 12.9" in reading.says
    assert reading.remedy == "Install CUDA toolkit 12.9 or older and point `CUDA_HOME` at it."


def test_pytorchs_own_warning_speaks_for_its_wheel() -> None:
    # The warning and the wheel's label say one thing: said once, in PyTorch's words.
    text = NOT_IN_BUILD + "PyTorch version: 2.5.1+cu124\nCUDA used to build PyTorch: 12.4\n"
    assert [r.build for r in readings(text)] == ["PyTorch"]


def test_the_answer_carries_the_reading_and_a_paste_without_one_has_none() -> None:
    graph = build_graph([])
    paste = NOT_IN_BUILD + (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    answer = diagnose(paste, build_context(paste), graph)
    assert [r.arch for r in answer.build_support] == ["sm_120"]

    paste = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert diagnose(paste, build_context(paste, gpu="H100"), graph).build_support == ()


def test_what_a_build_must_be_made_with_for_each_architecture() -> None:
    vocabulary = load()

    assert cuda_needed("sm_120", vocabulary) == (
        "CUDA 12.8 or newer (PyTorch's cu128 wheels or later)"
    )
    assert cuda_needed("sm_103", vocabulary).startswith("CUDA 12.8 or newer")  # sm_100's code
    assert cuda_needed("sm_110", vocabulary).startswith("CUDA 13.0 or newer")
    assert cuda_needed("sm_70", vocabulary) == (
        "CUDA 12.9 or older (PyTorch's cu129 wheels or earlier)"
    )
    assert cuda_needed("sm_86", vocabulary) == ""  # any CUDA a current build uses


def test_the_wheel_pip_installed_is_read_against_the_gpu_given() -> None:
    text = "Successfully installed torch-2.5.1+cu124 triton-3.1.0\n"

    [reading] = readings(text, gpu="RTX 5090")

    assert reading.build == "PyTorch 2.5.1+cu124"
    assert reading.gpu == "NVIDIA GeForce RTX 5090"
    assert "CUDA 12.8 or newer" in reading.remedy


# `collect_env` beside nvidia-smi on a host whose driver predates CUDA 13.
COLLECT_ENV_CU130 = """\
PyTorch version: 2.9.0+cu130
CUDA used to build PyTorch: 13.0
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
+-----------------------------------------------------------------------------------------+
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
RuntimeError: The NVIDIA driver on your system is too old (found version 12020).
"""


def test_a_build_of_a_cuda_major_version_newer_than_the_driver_runs_says_so() -> None:
    [reading] = build_support(COLLECT_ENV_CU130, build_context(COLLECT_ENV_CU130), load())

    assert reading.build == "PyTorch 2.9.0+cu130"
    assert reading.says.startswith(
        "PyTorch 2.9.0+cu130 was made with CUDA 13.0; the driver 535.104.05 runs CUDA up to 12.2"
    )
    assert reading.remedy == (
        "Install a driver whose nvidia-smi shows CUDA Version 13.0 or newer, or a build made"
        " with CUDA 12.x, which this driver runs."
    )


def test_a_driver_runs_builds_of_its_own_major_version_and_the_toolkits_newer_one_is_named() -> (
    None
):
    """CUDA's minor version compatibility: a 12.2 driver runs a cu128 wheel. Kernels the
    host's toolkit 13.0 compiles just in time it cannot load."""
    same_major = COLLECT_ENV_CU130.replace("cu130", "cu128").replace(
        "PyTorch: 13.0", "PyTorch: 12.8"
    )
    toolkit = Context(versions={"driver.cuda": "12.2", "cuda": "13.0", "torch": "2.9.0+cu128"})

    assert build_support(same_major, build_context(same_major), load()) == ()
    [reading] = build_support("", toolkit, load())
    assert reading.build == "the CUDA toolkit 13.0"
    newer_driver = Context(versions={"driver.cuda": "13.0", "torch": "2.9.0+cu130"})
    assert build_support("", newer_driver, load()) == ()

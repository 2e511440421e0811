"""Faults of the GPU or its driver, told apart from the server's own errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisiontree.context import build_context
from decisiontree.host_faults import gpu_health, host_faults

# A kernel log of a node whose GPU dropped out, pasted under the server's own error.
FELL_OFF = """\
[Tue Dec  1 03:12:44 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python3, GPU has fallen off the bus.
[Tue Dec  1 03:12:44 2026] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
[Tue Dec  1 03:12:45 2026] NVRM: Xid (PCI:0000:3b:00): 45, pid=48213, name=python3, Ch 00000008
RuntimeError: CUDA error: unspecified launch failure
"""


def test_an_xid_names_the_device_and_says_no_server_setting_fixes_it() -> None:
    [fault] = host_faults(FELL_OFF)

    assert (fault.kind, fault.seen, fault.where) == ("hardware", "Xid 79", "PCI:0000:3b:00")
    assert fault.serious
    assert fault.describe().startswith(
        "Xid 79 on PCI:0000:3b:00: the GPU has fallen off the bus; a fault of the GPU, its "
        "memory or its link: no server setting fixes it. Drain the node;"
    )


def test_cudas_own_ecc_error_is_a_hardware_fault_even_without_a_kernel_log() -> None:
    [fault] = host_faults("RuntimeError: CUDA error: uncorrectable ECC error encountered\n")

    assert (fault.kind, fault.where) == ("hardware", None)
    assert "nvidia-smi -q -d ECC,ROW_REMAPPER" in fault.action


def test_a_driver_mismatch_is_the_hosts_driver() -> None:
    [fault] = host_faults(
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n"
    )

    assert fault.kind == "driver" and fault.serious
    assert "reboot the host" in fault.action


@pytest.mark.parametrize(
    ("pasted", "says"),
    [
        (
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
            "--gpus all",
        ),
        (
            'docker: Error response from daemon: could not select device driver "" with '
            "capabilities: [[gpu]].",
            "nvidia-ctk runtime configure",
        ),
        (
            "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
            "--gpus all",
        ),
        (
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
            "cannot open shared object file: no such file or directory: unknown.",
            "reboot it after a driver upgrade",
        ),
        ("RuntimeError: CUDA error: no CUDA-capable device is detected", "CUDA_VISIBLE_DEVICES"),
    ],
)
def test_a_container_that_reaches_no_gpu_is_the_hosts_setup_not_the_server(
    pasted: str, says: str
) -> None:
    """Docker without the NVIDIA Container Toolkit, a container started without its GPUs:
    no server flag helps, and the action says what does."""
    [fault] = host_faults(pasted)

    assert fault.kind == "driver" and fault.serious
    assert says in fault.action


def test_the_programs_own_page_fault_is_shown_only_without_a_worse_one() -> None:
    page_fault = "NVRM: Xid (PCI:0000:3b:00): 31, pid=48213, name=python3, Ch 00000008, MMU Fault\n"

    [alone] = host_faults(page_fault)
    assert alone.kind == "application" and not alone.serious and alone.action == ""
    assert [f.seen for f in host_faults(page_fault + FELL_OFF)] == ["Xid 79"]


def test_an_ordinary_cuda_error_or_an_unknown_xid_is_no_host_fault() -> None:
    assert host_faults("RuntimeError: CUDA error: an illegal memory access was encountered\n") == ()
    assert host_faults("NVRM: Xid (PCI:0000:3b:00): 999, something new\n") == ()


# `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` of two H100s, written to the
# layout of NVIDIA's 550 driver (not captured): GPU 2A has a row waiting for its remap.
ENV = Path(__file__).resolve().parent / "fixtures" / "env"


def test_a_row_remap_waiting_for_a_reset_is_a_fault_of_that_gpu() -> None:
    faults = host_faults((ENV / "nvidia_smi_q_h100_remap_pending.txt").read_text())

    assert [(f.seen, f.where) for f in faults] == [
        ("nvidia-smi: Remapped Rows / Pending: Yes", "00000000:2A:00.0"),
        ("nvidia-smi: Volatile / DRAM Uncorrectable: 2", "00000000:2A:00.0"),
    ]
    assert all(f.serious for f in faults)
    assert "reset it" in faults[0].action


def test_healthy_gpus_and_lifetime_counts_are_no_fault() -> None:
    """Aggregate counts outlive the reset that cured them; only volatile ones are read."""
    healthy = (ENV / "nvidia_smi_q_h100_healthy.txt").read_text()
    lifetime = healthy.replace(
        "            DRAM Uncorrectable            : 0\n            SRAM Threshold",
        "            DRAM Uncorrectable            : 4\n            SRAM Threshold",
    )

    assert "DRAM Uncorrectable            : 4" in lifetime
    assert gpu_health(healthy) == () and gpu_health(lifetime) == ()


def test_a_failed_remap_and_older_gpus_double_bit_errors_are_read_too() -> None:
    failed = (
        (ENV / "nvidia_smi_q_h100_remap_pending.txt")
        .read_text()
        .replace(
            "Remapping Failure Occurred        : No\n        Bank Remap Availability Histogram\n"
            "            Max                           : 2559 bank(s)\n            High"
            "                          : 0 bank(s)\n            Partial                       : 1",
            "Remapping Failure Occurred        : Yes\n        Bank Remap Availability Histogram\n"
            "            Max                           : 2559 bank(s)\n            High"
            "                          : 0 bank(s)\n            Partial                       : 1",
        )
    )
    volta = (
        "GPU 00000000:86:00.0\n    ECC Errors\n        Volatile\n            Single Bit\n"
        "                Device Memory             : 0\n                Total"
        "                     : 0\n            Double Bit\n                Device Memory"
        "             : 1\n                Total                     : 1\n"
    )

    assert "replaced" in next(f for f in host_faults(failed) if "Failure" in f.seen).action
    [double] = gpu_health(volta)
    assert (double.seen, double.where) == ("nvidia-smi: Double Bit / Total: 1", "00000000:86:00.0")


# Captured: `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` of a healthy H100 on driver
# 580.159.04 (wider padding than the 550 layout, and the ECC section's repair flags).
CAPTURED = (ENV / "captured_h100_nvidia_smi_q_health.txt").read_text()


def test_a_captured_healthy_h100_shows_no_fault() -> None:
    assert "Channel Repair Pending                         : No" in CAPTURED
    assert gpu_health(CAPTURED) == ()
    assert build_context(CAPTURED).versions["driver"] == "580.159.04"


@pytest.mark.parametrize(
    ("field", "seen", "cure"),
    [
        ("Pending                                        : No", "Remapped Rows / Pending", "reset"),
        ("Channel Repair Pending                         : No", "ECC Errors / Channel", "reset"),
        ("TPC Repair Pending                             : No", "ECC Errors / TPC", "reset"),
        ("Unrepairable Memory                            : No", "ECC Errors / Unrep", "replaced"),
    ],
)
def test_each_flag_of_the_captured_layout_set_to_yes_is_a_fault(
    field: str, seen: str, cure: str
) -> None:
    """The capture with one flag turned to Yes (edited here, not captured)."""
    flagged = CAPTURED.replace(field, field.replace(": No", ": Yes"), 1)

    [fault] = gpu_health(flagged)
    assert fault.seen.startswith(f"nvidia-smi: {seen}") and fault.seen.endswith(": Yes")
    assert fault.where == "00000000:00:06.0" and cure in fault.action

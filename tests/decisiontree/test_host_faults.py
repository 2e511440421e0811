"""Faults of the GPU or its driver, told apart from the server's own errors."""

from __future__ import annotations

from decisiontree.host_faults import host_faults

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


def test_the_programs_own_page_fault_is_shown_only_without_a_worse_one() -> None:
    page_fault = "NVRM: Xid (PCI:0000:3b:00): 31, pid=48213, name=python3, Ch 00000008, MMU Fault\n"

    [alone] = host_faults(page_fault)
    assert alone.kind == "application" and not alone.serious and alone.action == ""
    assert [f.seen for f in host_faults(page_fault + FELL_OFF)] == ["Xid 79"]


def test_an_ordinary_cuda_error_or_an_unknown_xid_is_no_host_fault() -> None:
    assert host_faults("RuntimeError: CUDA error: an illegal memory access was encountered\n") == ()
    assert host_faults("NVRM: Xid (PCI:0000:3b:00): 999, something new\n") == ()

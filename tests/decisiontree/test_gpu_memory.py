"""Reading the GPU's memory out of PyTorch's out-of-memory messages, and what it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisiontree.context import nvidia_smi_processes
from decisiontree.gpu_memory import MemoryReading, listed_processes, out_of_memory, readings

CAPTURED = Path(__file__).resolve().parent / "fixtures" / "captured"
GIB = 1024**3
MIB = 1024**2

# torch 2.x's message, as its caching allocator words it, around figures of a GPU
# shared with another server: NVML lists that process beside this one.
SHARED_GPU = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {asked}. GPU 0 has a "
    "total capacity of 139.80 GiB of which {free} is free. Process 4242 has {other} memory in "
    "use. Including non-PyTorch memory, this process has 20.50 GiB memory in use. Of the "
    "allocated memory 20.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch "
    "but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"
)
# torch 1.x's shape: the cache's total instead of what is unused in it.
TORCH_1_FRAGMENTED = (
    "RuntimeError: CUDA out of memory. Tried to allocate 256.00 MiB (GPU 0; 22.04 GiB total "
    "capacity; 20.50 GiB already allocated; 100.00 MiB free; 21.50 GiB reserved in total by "
    "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
    "fragmentation.\n"
)
# torch 1.0 to 1.3: "cached" was the cache beyond the tensors.
TORCH_1_0 = (
    "RuntimeError: CUDA out of memory. Tried to allocate 16.00 MiB (GPU 0; 4.00 GiB total "
    "capacity; 1.40 GiB already allocated; 0 bytes free; 16.43 MiB cached)\n"
)


def captured(name: str) -> str:
    return (CAPTURED / f"h200_{name}.txt").read_text(encoding="utf-8")


def kinds(found: tuple[MemoryReading, ...]) -> list[str]:
    return [reading.kind for reading in found]


def test_an_allocation_larger_than_the_gpu_is_said_to_fit_no_setting() -> None:
    [oom] = out_of_memory(captured("torch_cuda_oom"))

    assert (oom.gpu, oom.requested) == (0, 400 * GIB)
    assert oom.total == round(139.80 * GIB) and oom.this_process == 518 * MIB
    [reading] = readings([oom])
    assert reading.kind == "larger_than_gpu"
    assert "400.00 GiB, more than all of GPU 0 (139.80 GiB)" in reading.text


def test_a_full_gpu_with_little_cached_says_expandable_segments_cannot_help() -> None:
    [oom] = out_of_memory(captured("torch_cuda_oom_again"))

    assert oom.describe() == (
        "GPU 0: asked for 3.09 GiB; 159.12 MiB free of 139.80 GiB; this process 139.64 GiB; "
        "PyTorch's tensors 139.05 GiB, cached unused 87.19 MiB"
    )
    [reading] = readings([oom])
    assert reading.kind == "not_fragmented" and not reading.helps
    assert "(87.19 MiB) and free (159.12 MiB)" in reading.text


def test_another_process_holding_the_room_is_named_with_its_memory() -> None:
    """Captured: 30 GiB asked while a second process on the H200 held 100 GiB."""
    [oom] = out_of_memory(captured("torch_cuda_oom_other_process"))

    assert oom.processes == ((669, round(100.51 * GIB)),) and oom.self_listed
    assert oom.others == round(100.51 * GIB)  # the rest of the figures is rounding
    first, *_ = readings([oom])
    assert first.kind == "other_processes" and first.helps
    assert first.text.startswith("Other processes held 100.51 GiB of GPU 0 (process 669")
    assert "without them the 30.00 GiB asked for would have fit" in first.text


def test_another_process_too_small_to_matter_is_said_not_to_be_the_cause() -> None:
    shared = SHARED_GPU.format(asked="130.00 GiB", free="117.30 GiB", other="2.00 GiB")
    [oom] = out_of_memory(shared)

    assert oom.others == 2 * GIB  # the figures add up: nothing unlisted
    first, *_ = readings([oom])
    assert first.kind == "other_processes" and not first.helps
    assert "even without them the 130.00 GiB asked for would not have fit" in first.text


def test_memory_nobody_listed_is_counted_beyond_the_figures_rounding() -> None:
    """No process listed beside this one, yet 100 GiB is neither free nor this process's:
    another container's server. A few MiB of rounding is not."""
    hidden = SHARED_GPU.replace("Process 4242 has {other} memory in use. ", "")

    [oom] = out_of_memory(hidden.format(asked="30.00 GiB", free="19.29 GiB"))
    assert oom.others == round((139.80 - 19.29 - 20.50) * GIB)
    assert "100.01 GiB by processes not listed" in readings([oom])[0].text

    [rounded] = out_of_memory(hidden.format(asked="130.00 GiB", free="119.30 GiB"))
    assert rounded.others == 0
    assert "other_processes" not in kinds(readings([rounded]))


def test_in_a_container_the_listed_processes_are_not_taken_for_others() -> None:
    """NVML gives host process ids there: PyTorch lists itself as "Process N" too."""
    two = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.25 GiB is free. Process 77 has 40.00 GiB "
        "memory in use. Process 912 has 37.84 GiB memory in use. Of the allocated memory "
        "36.02 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but "
        "unallocated.\n"
    )
    [oom] = out_of_memory(two)

    assert oom.others == 0 and not oom.self_listed
    assert kinds(readings([oom])) == ["unknown_processes"]
    assert readings([oom])[0].text.startswith("2 processes were using GPU 0: 77 (40.00 GiB)")
    alone = two.replace("Process 77 has 40.00 GiB memory in use. ", "")
    assert readings(out_of_memory(alone)) == ()


def test_cached_memory_enough_for_the_request_is_fragmentation() -> None:
    """Captured: 70 GiB cached in 1 GiB holes, 8 GiB asked (expandable segments ran it)."""
    [oom] = out_of_memory(captured("torch_cuda_oom_fragmented"))

    assert (oom.allocated, oom.cached_unused) == (65 * GIB, 70 * GIB)
    [reading] = readings([oom])
    assert reading.kind == "fragmented" and reading.helps
    assert reading.text.startswith("PyTorch had 70.00 GiB reserved but unused")
    assert "expandable_segments:True" in reading.text

    [old] = out_of_memory(TORCH_1_FRAGMENTED)  # torch 1.x gives the cache's total
    assert old.cached_unused == GIB and readings([old])[0].kind == "fragmented"


def test_torch_1_0_cached_figure_is_the_cache_beyond_the_tensors() -> None:
    [oom] = out_of_memory(TORCH_1_0)

    assert (oom.free, oom.cached_unused) == (0, round(16.43 * MIB))
    assert oom.describe().startswith("GPU 0: asked for 16.00 MiB; 0 bytes free of 4.00 GiB")


def test_each_gpu_of_a_tensor_parallel_run_is_read_and_a_reading_says_where_it_held() -> None:
    rank = SHARED_GPU.format(asked="30.00 GiB", free="19.29 GiB", other="100.00 GiB")
    log = rank + rank.replace("GPU 0", "GPU 1") + rank  # rank 0 printed twice

    found = out_of_memory(log)
    assert [oom.gpu for oom in found] == [0, 1]
    first, *_ = readings(found)
    assert first.text.endswith("The same on GPU 1.")


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not "
        "enough memory: you tried to allocate 1073741824 bytes.\n",
        "RuntimeError: CUDA error: out of memory\n",
        # SGLang's capture failure quotes the request alone: nothing to add to the error.
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.02 GiB.\n",
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n",
    ],
)
def test_other_out_of_memory_errors_give_no_figures(text: str) -> None:
    assert out_of_memory(text) == ()


def test_vllms_start_up_check_says_what_was_in_use_and_the_share_that_fits() -> None:
    log = (
        "(Worker_TP3 pid=1502) ERROR 12-02 18:30:40 [multiproc_executor.py:671] ValueError: "
        "Free memory on device cuda:3 (12.4/139.8 GiB) on startup is less than desired GPU "
        "memory utilization (0.92, 128.62 GiB). Decrease GPU memory utilization or reduce GPU "
        "memory used by other processes.\n"
    )
    [oom] = out_of_memory(log)

    assert (oom.gpu, oom.startup_share) == (3, "0.92")
    assert abs(oom.in_use_at_start - 127.4 * GIB) < 2
    assert oom.describe() == (
        "GPU 3 at start-up: 12.40 GiB free of 139.80 GiB; --gpu-memory-utilization 0.92 asks "
        "for 128.62 GiB"
    )
    [reading] = readings([oom])
    assert reading.kind == "in_use_at_start"
    assert "127.40 GiB of GPU 3 (139.80 GiB) was already in use" in reading.text
    # 12.4 of 139.8 is 0.0887: the share rounds down, so it still fits.
    assert reading.text.endswith("set --gpu-memory-utilization to at most 0.08.")
    # ... the value a "lower --gpu-memory-utilization" fix then writes into the command
    assert [(v.flag, v.value, v.bound) for v in reading.values] == [
        ("gpu-memory-utilization", "0.08", "at_most")
    ]
    unnamed = log.replace("device cuda:3 ", "device ")
    assert out_of_memory(unnamed)[0].gpu is None


def test_nvidia_smis_process_list_beside_a_memory_error_names_who_holds_the_gpu() -> None:
    """Captured while another process held 100 GiB: the table cuts its memory figure
    short ("10291..."); the --query-compute-apps lines below it give it whole."""
    table_and_apps = captured("nvidia_smi_other_process")

    [reading] = listed_processes(nvidia_smi_processes(table_and_apps))
    assert reading.kind == "processes_listed"
    assert "GPU 0: /opt/torch/.venv/bin/python3 (pid 693) 100.51 GiB." in reading.text
    table_only = table_and_apps.split("pid, process_name")[0]
    assert nvidia_smi_processes(table_only) == ((0, 693, "/opt/torch/.venv/bin/python3", None),)
    older_driver = (
        "|    0     12345      C   python                                    10000MiB |\n"
    )
    assert nvidia_smi_processes(older_driver) == ((0, 12345, "python", 10000 * MIB),)
    assert listed_processes(()) == ()


def test_a_server_quoting_the_messages_first_sentence_gives_one_entry_and_no_noise() -> None:
    """SGLang's capture failure quotes the allocator's first sentence above the whole
    message; 20 MiB nobody accounts for, when the request is 896 MiB, is the driver's."""
    log = (
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 896.00 MiB. "
        "GPU 6 has a total capacity of 94.97 GiB of which 471.31 MiB is free.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 6 has a "
        "total capacity of 94.97 GiB of which 471.31 MiB is free. Including non-PyTorch memory, "
        "this process has 94.49 GiB memory in use. Of the allocated memory 92.10 GiB is "
        "allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated.\n"
    )
    [oom] = out_of_memory(log)

    assert oom.this_process == round(94.49 * GIB) and oom.others == 0
    assert kinds(readings([oom])) == ["fragmented"]

"""A knowledge base where one unknown fact decides the first fix: the GPU.

The same Triton out-of-resource error in a fused MoE kernel has two causes. On a
consumer Blackwell card (sm_120) the shipped kernel configs ask for more shared
memory than the card has; on an Ada card (sm_89) an old Triton picks a config
the card cannot run. Pasted without a GPU, the diagnosis must ask which one.
"""

from __future__ import annotations

from kb.models import ErrorSample, Finding, Fix

MOE_OUT_OF_RESOURCES = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", line 1187, in invoke_fused_moe_kernel
    fused_moe_kernel[grid](
  File "/usr/local/lib/python3.12/dist-packages/triton/runtime/jit.py", line 390, in <lambda>
    return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)
triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.
"""
# The same error from another machine: other paths, other sizes.
MOE_OUT_OF_RESOURCES_ELSEWHERE = MOE_OUT_OF_RESOURCES.replace(
    "/usr/local/lib/python3.12/dist-packages", "/opt/venv/lib/python3.11/site-packages"
).replace("147456", "131072")

BLACKWELL_FIX = "Run the MoE layers on the FlashInfer CUTLASS kernels"
ADA_FIX = "Upgrade Triton"


def gpu_split_kb(
    blackwell_gpu: dict[str, str] | None = None, ada_gpu: dict[str, str] | None = None
) -> tuple[Finding, Finding]:
    """Two published findings of one error whose first fix depends on the GPU: by its
    architecture, or by the conditions given (a compute capability)."""
    blackwell = _finding(
        "MoE Triton kernel configs exceed the shared memory of sm_120 cards",
        "The tuned fused-MoE configs assume a data-centre card's shared memory.",
        blackwell_gpu or {"key": "gpu.arch", "value": "sm_120"},
    )
    Fix.objects.create(
        finding=blackwell,
        summary=BLACKWELL_FIX,
        outcome="resolves",
        changes=[
            {"action": "set_flag", "name": "moe-runner-backend", "value": "flashinfer_cutlass"}
        ],
    )
    ada = _finding(
        "Old Triton picks a MoE config that sm_89 cards cannot run",
        "Triton before 3.3 ignores the card's shared-memory limit when it autotunes.",
        ada_gpu or {"key": "gpu.arch", "value": "sm_89"},
    )
    Fix.objects.create(
        finding=ada,
        summary=ADA_FIX,
        outcome="resolves",
        changes=[{"action": "pin_version", "name": "triton", "value": "3.3.1"}],
    )
    return blackwell, ada


def gpu_capability_split_kb() -> tuple[Finding, Finding]:
    """The same two findings, the GPU they need said by its compute capability."""
    return gpu_split_kb(
        {"key": "gpu.capability", "value": ">=12.0"}, {"key": "gpu.capability", "value": "<12.0"}
    )


def _finding(title: str, cause: str, gpu: dict[str, str]) -> Finding:
    finding = Finding.objects.create(
        title=title,
        status=Finding.Status.PUBLISHED,
        cause=cause,
        conditions=[gpu, {"key": "framework", "value": "sglang"}],
    )
    ErrorSample.objects.create(finding=finding, text=MOE_OUT_OF_RESOURCES)
    return finding

"""The built-in vocabulary loads into the database, and loads again without duplicates."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from kb.models import Flag, Hardware

pytestmark = pytest.mark.django_db


def load() -> str:
    out = StringIO()
    call_command("load_vocabulary", stdout=out)
    return out.getvalue()


def test_it_loads_gpus_and_flags_of_both_frameworks() -> None:
    load()
    blackwell = Hardware.objects.get(name__icontains="RTX PRO 6000 Blackwell Server")
    assert (blackwell.arch, blackwell.compute_capability) == ("sm_120", "12.0")
    assert Hardware.objects.get(name="NVIDIA H200").arch == "sm_90"
    kv = Flag.objects.get(framework="sglang", name="kv-cache-dtype")
    assert "fp8_e4m3" in kv.choices
    assert Flag.objects.filter(framework="vllm", name="gpu-memory-utilization").exists()


def test_it_knows_the_nsa_to_dsa_rename() -> None:
    load()
    decode = Flag.objects.get(framework="sglang", name="dsa-decode-backend")
    assert ["nsa-decode-backend", "0.5.9"] in decode.renamed
    assert "trtllm" in decode.choices


def test_it_links_flags_that_mean_the_same_across_frameworks() -> None:
    load()
    sglang_tp = Flag.objects.get(framework="sglang", name="tp-size")
    vllm_tp = Flag.objects.get(framework="vllm", name="tensor-parallel-size")
    assert sglang_tp.concept and sglang_tp.concept == vllm_tp.concept


def test_it_loads_twice_without_duplicates() -> None:
    load()
    counts = (Hardware.objects.count(), Flag.objects.count())
    second = load()
    assert (Hardware.objects.count(), Flag.objects.count()) == counts
    assert "0 created, 0 updated" in second


def test_a_second_load_puts_back_what_was_changed_and_only_that() -> None:
    load()
    Flag.objects.filter(framework="vllm", name="gpu-memory-utilization").update(
        description="edited by hand", deprecated=True
    )
    Hardware.objects.filter(name="NVIDIA H200").update(arch="sm_00")
    second = load()
    flag = Flag.objects.get(framework="vllm", name="gpu-memory-utilization")
    assert flag.description != "edited by hand" and flag.deprecated is False
    assert Hardware.objects.get(name="NVIDIA H200").arch == "sm_90"
    assert "gpus: 0 created, 1 updated" in second
    assert "flags: 0 created, 1 updated" in second

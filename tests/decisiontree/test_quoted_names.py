"""Errors whose words are all ordinary and whose quoted names say which error it is: a
module without an attribute, a name that cannot be imported, a missing module. Two
libraries that hit the same version skew print the same message from different code; the
names in quotes are what they share, and what another skew does not."""

from __future__ import annotations

from decisiontree.context import Context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import FindingRecord, FixRecord, Outcome


def raised_in(package: str, function: str, code: str, error: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/srv/app/main.py", line 3, in <module>\n'
        f"    import {package}\n"
        f'  File "/opt/venv/lib/python3.10/site-packages/{package}/core.py", line 17, '
        f"in {function}\n"
        f"    {code}\n"
        f"{error}\n"
    )


UINT16_IN_SAFETENSORS = """\
  File "/opt/venv/lib/python3.10/site-packages/safetensors/torch.py", line 17, in <module>
    _TYPES = {"U16": torch.uint16}
AttributeError: module 'torch' has no attribute 'uint16'
"""
UINT16_IN_TRANSFORMERS = """\
  File "/usr/local/lib/python3.9/site-packages/transformers/modeling_utils.py", line 310, in <module>
    str_to_torch_dtype["U16"] = torch.uint16
AttributeError: module 'torch' has no attribute 'uint16'
"""
FP8_IN_QUANTIZER = """\
  File "/opt/venv/lib/python3.10/site-packages/quantkit/fp8.py", line 40, in <module>
    FP8 = torch.float8_e4m3fn
AttributeError: module 'torch' has no attribute 'float8_e4m3fn'
"""
# Python 3.10 and later add a hint after the message.
IMPORT_IN_SENTENCE_TRANSFORMERS = """\
Traceback (most recent call last):
  File "/app/server.py", line 4, in <module>
    from sentence_transformers import SentenceTransformer
  File "/usr/local/lib/python3.10/site-packages/sentence_transformers/SentenceTransformer.py", line 12, in <module>
    from huggingface_hub import HfApi, HfFolder, Repository, hf_hub_url, cached_download
ImportError: cannot import name 'cached_download' from 'huggingface_hub' (/usr/local/lib/python3.10/site-packages/huggingface_hub/__init__.py)
"""
IMPORT_IN_DIFFUSERS = """\
  File "/opt/venv/lib/python3.11/site-packages/diffusers/utils/dynamic_modules_utils.py", line 28, in <module>
    from huggingface_hub import cached_download, hf_hub_download, model_info
ImportError: cannot import name 'cached_download' from 'huggingface_hub' (/opt/venv/lib/python3.11/site-packages/huggingface_hub/__init__.py). Did you mean: 'hf_hub_download'?
"""


OTHER_FINDINGS = (
    raised_in(
        "servekit",
        "warmup",
        "cache = torch.empty(blocks, device=device)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.25 GiB is free.",
    ),
    raised_in(
        "tokenkit",
        "load_vocab",
        "vocab = Tokenizer.from_file(path)",
        "Exception: data did not match any variant of untagged enum ModelWrapper at line 1 "
        "column 91",
    ),
    raised_in(
        "servekit",
        "check_context",
        "raise ValueError(msg)",
        "ValueError: max_model_len 131072 is larger than the model's 32768 positions",
    ),
)


def graph_of(sample: str):
    """A knowledge base of the finding of `sample` and three of other errors: the words
    every traceback prints weigh as little as they do in a real one."""
    findings = [
        FindingRecord(
            number,
            f"Finding {number}",
            "crash",
            "a cause of its own",
            (text,),
            (),
            (FixRecord(number * 100, "Do what the finding says", (), Outcome.RESOLVES),),
        )
        for number, text in enumerate((sample, *OTHER_FINDINGS), start=1)
    ]
    return build_graph(findings)


def first_answer(sample: str, paste: str) -> int | None:
    result = diagnose(paste, Context(), graph_of(sample))
    if result.match == "none" or not result.candidates:
        return None
    return result.candidates[0].finding_id


def test_the_same_missing_attribute_from_another_library_finds_the_finding():
    assert first_answer(UINT16_IN_SAFETENSORS, UINT16_IN_TRANSFORMERS) == 1


def test_another_missing_attribute_is_not_the_finding():
    assert first_answer(UINT16_IN_SAFETENSORS, FP8_IN_QUANTIZER) is None


def test_a_name_that_cannot_be_imported_is_found_under_a_newer_pythons_hint():
    assert first_answer(IMPORT_IN_SENTENCE_TRANSFORMERS, IMPORT_IN_DIFFUSERS) == 1


def test_a_message_with_words_of_its_own_is_compared_without_its_quoted_values():
    index = graph_of(UINT16_IN_SAFETENSORS).index
    index.finish()
    said = "Cannot use FlashInfer backend for 'head_dim' 80 on this GPU"

    assert index.message_form(said) == "Cannot use FlashInfer backend for <q> 80 on this GPU"
    assert index.message_form("module 'torch' has no attribute 'uint16'") == (
        "module 'torch' has no attribute 'uint16'"
    )

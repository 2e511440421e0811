"""A finding's error sample is parsed once and kept: what is read back is what was parsed.

The knowledge base keeps each sample's signatures as JSON beside it, so a cold graph
build reads them instead of parsing every sample again; a stored form from another
parser is ignored and the sample parsed again.
"""

from __future__ import annotations

import json
from typing import Any

from decisiontree.samples import from_stored, scheme, signatures_of_sample, stored_form
from tests.decisiontree.pastes import pasted


def kept(found: Any) -> dict[str, Any]:
    """As the knowledge base keeps it: through JSON."""
    return dict(json.loads(json.dumps(stored_form(found))))


def test_a_stored_sample_reads_back_as_the_signatures_it_was_parsed_into() -> None:
    for name in ("nccl_unhandled_cuda_error", "no_kernel_image", "hf_offline_chained"):
        found = signatures_of_sample(pasted(name))
        assert isinstance(found, tuple) and found, name
        assert from_stored(kept(found)) == found, name


def test_a_sample_with_no_error_keeps_the_reason_it_has_none() -> None:
    found = signatures_of_sample(pasted("noise_only"))
    assert found == "no error found in sample"
    assert from_stored(kept(found)) == "no error found in sample"


def test_a_form_stored_by_another_parser_is_parsed_again() -> None:
    stored = kept(signatures_of_sample(pasted("no_kernel_image")))
    assert stored["scheme"] == scheme()
    assert from_stored({**stored, "scheme": "0" * 16}) is None
    assert from_stored({}) is None

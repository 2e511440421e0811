"""Values that an error's own figures give a launch flag, for a fix that names the flag
without one: vLLM's estimate of the longest context its KV cache holds, a model's own
context length that a longer setting exceeded. The corrected command then holds the value,
ready to copy, and the answer says where it came from.

Memory figures give theirs through `gpu_memory` and `server_memory` readings; the context
length a framework refused is read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class FlagValue:
    """A value the paste's own figures give a launch flag: "--max-model-len at most
    98304", the estimate vLLM printed. A fix that names the flag without a value takes
    it, so its corrected command is ready to copy."""

    flag: str  # canonical name, without dashes
    value: str
    bound: Literal["at_most", "at_least"]  # the figures allow no more, or need no less
    why: str  # where the figure comes from, in a few words

    def describe(self) -> str:
        """ "--max-model-len 98304: the longest context ..." """
        return f"--{self.flag} {self.value}: {self.why}"


# SGLang's model config and vLLM's refuse a length past the model's own (from its
# config.json): "User-specified context_length (262144) is greater than the derived
# context_length (131072)", "User-specified max_model_len (65536) is greater than the
# derived max_model_len (max_position_embeddings=32768 or model_max_length=None ...)".
MODEL_LENGTH = re.compile(
    r"User-specified (?P<setting>max_model_len|context_length) \(\d+\) is greater "
    r"than the derived (?:max_model_len|context_length) \((?:(?P<key>\w+)=)?(?P<own>\d+)"
)
LENGTH_FLAGS = {"max_model_len": "max-model-len", "context_length": "context-length"}


def length_values(text: str) -> tuple[FlagValue, ...]:
    """The model's own context length, where the paste shows a longer one refused."""
    found = MODEL_LENGTH.search(text)
    if found is None:
        return ()
    where = f"{found['key']} in" if found["key"] else "from"
    return (
        FlagValue(
            LENGTH_FLAGS[found["setting"]],
            found["own"],
            "at_most",
            f"the model's own context length ({where} its config)",
        ),
    )


# vLLM gives each GPU an equal share of the attention heads (0.34, the model config's check
# against the parallel config): "Total number of attention heads (40) must be divisible by
# tensor parallel size (3)."
HEAD_SPLIT = re.compile(
    r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by tensor "
    r"parallel size \((?P<size>\d+)\)"
)


def head_split_values(text: str) -> tuple[FlagValue, ...]:
    """The largest tensor-parallel size, up to the one refused, that divides the model's
    attention heads, where the paste shows a size that does not."""
    found = HEAD_SPLIT.search(text)
    if found is None:
        return ()
    heads, size = int(found["heads"]), int(found["size"])
    fits = max((d for d in range(1, min(heads, size) + 1) if heads % d == 0), default=0)
    if not 0 < fits < size:
        return ()
    return (
        FlagValue(
            "tensor-parallel-size",
            str(fits),
            "at_most",
            f"the largest size up to the {size} refused that divides the model's "
            f"{heads} attention heads",
        ),
    )


def paste_values(text: str) -> tuple[FlagValue, ...]:
    """Every value the paste's own figures give a launch flag."""
    return length_values(text) + head_split_values(text)


__all__ = ["FlagValue", "head_split_values", "length_values", "paste_values"]

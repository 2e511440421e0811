"""How far the weights estimate is from the real parameter counts of released models.

    .venv/bin/python bench/weights_estimate.py

`decisiontree/model_weights.py` reads a model's size off its name ("70B") and says "the
weights do not fit" only outside a band around the GPU's share (`weights.fit_band` in
decisiontree/data/models.json). This prints, for models whose model cards state their exact
parameter count, what the name gives against that count. The band must hold the names that
overstate their size (those would turn a fit into "does not fit"); names that understate
only make "does not fit" surer, and are printed for what a "fits" sentence may miss.

The counts are the model cards' (Hugging Face "Model size" or the card's own text), read
2026-12; they are the bench's data, not the product's.

A second table says which of a list of widely served models get a count at all (from the
name, or from the vocabulary's `stated_sizes`, models.json): one without gets no weights
reading.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from decisiontree.vocabulary import load  # noqa: E402

# (repo id, parameters in billions as the model card states them)
STATED = (
    ("meta-llama/Llama-3.1-8B-Instruct", 8.03),
    ("meta-llama/Llama-3.1-70B-Instruct", 70.6),
    ("meta-llama/Llama-3.1-405B-Instruct", 405.9),
    ("meta-llama/Llama-3.2-1B-Instruct", 1.24),
    ("meta-llama/Llama-3.2-3B-Instruct", 3.21),
    ("Qwen/Qwen2.5-0.5B-Instruct", 0.49),
    ("Qwen/Qwen2.5-1.5B-Instruct", 1.54),
    ("Qwen/Qwen2.5-7B-Instruct", 7.62),
    ("Qwen/Qwen2.5-14B-Instruct", 14.7),
    ("Qwen/Qwen2.5-32B-Instruct", 32.5),
    ("Qwen/Qwen2.5-72B-Instruct", 72.7),
    ("Qwen/Qwen3-30B-A3B", 30.5),
    ("Qwen/Qwen3-235B-A22B", 235.1),
    ("mistralai/Mistral-7B-Instruct-v0.3", 7.25),
    ("google/gemma-2-9b-it", 9.24),
    ("google/gemma-2-27b-it", 27.2),
    ("google/gemma-7b", 8.54),
    ("openai/gpt-oss-20b", 20.9),
    ("openai/gpt-oss-120b", 116.8),
    ("deepseek-ai/DeepSeek-R1", 671.0),
)


# Widely served models (Hugging Face repo ids), for coverage: does the vocabulary give a count?
SERVED = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.3-70B-Instruct",
    "meta-llama/Llama-3.1-405B-Instruct-FP8",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
    "Qwen/Qwen2.5-72B-Instruct",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "Qwen/QwQ-32B",
    "deepseek-ai/DeepSeek-V3",
    "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-V3.1",
    "deepseek-ai/DeepSeek-V3.2-Exp",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    "deepseek-ai/DeepSeek-V2-Lite-Chat",
    "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct",
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "mistralai/Mixtral-8x22B-Instruct-v0.1",
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    "mistralai/Mistral-Large-Instruct-2411",
    "google/gemma-3-27b-it",
    "google/gemma-2-9b-it",
    "zai-org/GLM-4.5",
    "zai-org/GLM-4.5-Air",
    "zai-org/GLM-4.6",
    "zai-org/GLM-5",
    "nvidia/GLM-5-NVFP4",
    "moonshotai/Kimi-K2-Instruct",
    "moonshotai/Kimi-K2-Thinking",
    "MiniMaxAI/MiniMax-M2",
    "microsoft/phi-4",
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8",
    "ibm-granite/granite-3.3-8b-instruct",
)


def main() -> None:
    vocabulary = load()
    band = vocabulary.weights_fit_band
    print("| model | from the name | model card | name vs card |\n| --- | ---: | ---: | ---: |")
    over = []
    for repo, stated in STATED:
        info = vocabulary.model_info(repo)
        named = info.parameters if info else None
        if named is None:
            print(f"| {repo} | - | {stated:g}B | - |")
            continue
        error = named / stated - 1
        if error > 0:
            over.append(error)
        print(f"| {repo} | {named:g}B | {stated:g}B | {error:+.1%} |")
    print()
    print(f"largest overstatement: {max(over, default=0):.1%}; band: {band:.0%}")
    understated = sum(1 for repo, stated in STATED if _understates(vocabulary, repo, stated, band))
    print(f"names understating by more than the band: {understated} of {len(STATED)}")
    print()
    print("| served model | count | precision |\n| --- | ---: | --- |")
    counted = 0
    for repo in SERVED:
        info = vocabulary.model_info(repo)
        if info and info.parameters:
            counted += 1
            print(f"| {repo} | {info.parameters:g}B | {info.quantization or '16-bit'} |")
        else:
            print(f"| {repo} | - | - |")
    print(f"\nwidely served models with a count: {counted} of {len(SERVED)}")


def _understates(vocabulary, repo: str, stated: float, band: float) -> bool:  # type: ignore[no-untyped-def]
    info = vocabulary.model_info(repo)
    return bool(info and info.parameters and info.parameters < stated * (1 - band))


if __name__ == "__main__":
    main()

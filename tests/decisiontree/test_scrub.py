"""Secrets out of a paste: each documented token shape and each secret-named setting is
replaced, what only looks alike (token counts, a tokenizer's special tokens, unset values,
a key file's path) stays, and scrubbing twice changes nothing more."""

from __future__ import annotations

import pytest

from decisiontree.scrub import MARK, scrub

HF = "hf_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB"


@pytest.mark.parametrize(
    ("pasted", "kept", "kind"),
    [
        (f"HF_TOKEN={HF} python -m sglang.launch_server", "HF_TOKEN=", "a Hugging Face token"),
        (
            "vllm serve m --api-key s3cr3t-key --port 8000",
            "--api-key [redacted] --port",
            "an --api-key value",
        ),
        (
            "server_args=ServerArgs(model_path='zai-org/GLM-5', api_key='team-key-42', tp_size=8)",
            "api_key='[redacted]', tp_size=8",
            "a secret setting",
        ),
        (
            "DATABASE_URL=postgres://fixgraph:pa55word@db:5432/kb",
            "postgres://fixgraph:[redacted]@db",
            "a password in a URL",
        ),
        ("-H 'Authorization: Bearer abcdEFGH12345678'", "Bearer [redacted]'", "a bearer token"),
        (
            "DB_PASSWORD=hunter22 ./serve.sh",
            "DB_PASSWORD=[redacted] ./serve.sh",
            "a secret environment variable",
        ),
        (
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv",
            "OPENAI_API_KEY=[redacted]",
            "an OpenAI-style API key",
        ),
        ("key id AKIAIOSFODNN7EXAMPLE in use", "key id [redacted] in use", "an AWS access key id"),
        ("SLACK_BOT_TOKEN=xoxb-1234-5678-abcdefgh", "SLACK_BOT_TOKEN=[redacted]", "a Slack token"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\nok",
            "[redacted]\nok",
            "a private key",
        ),
    ],
)
def test_it_replaces_a_secret_and_says_what_kind(pasted: str, kept: str, kind: str) -> None:
    found = scrub(pasted)
    assert kept in found.text
    assert kind in found.kinds
    secret_free = found.text.replace(MARK, "")
    for secret in (HF, "s3cr3t-key", "team-key-42", "pa55word", "abcdEFGH12345678", "hunter22",
                   "sk-proj-", "AKIAIOSFODNN7", "xoxb-", "b3BlbnNzaC1rZXk="):  # fmt: skip
        assert secret not in secret_free


@pytest.mark.parametrize(
    "pasted",
    [
        "vllm serve m --max-num-batched-tokens=8192 --max-total-tokens 65536 --tokenizer x",
        '{"eos_token": "</s>", "pad_token": "<|endoftext|>", "bos_token": "<s>"}',
        "ServerArgs(api_key=None, hf_token=None, tokenizer_path='zai-org/GLM-5')",
        "Decode batch. #running-req: 3, #token: 1841, token=1841",
        "SECRET_KEY_FILE=/run/secrets/fixgraph_key make run",
        "https://huggingface.co/zai-org/GLM-5-NVFP4 and http://127.0.0.1:30000/health",
    ],
)
def test_what_only_looks_like_a_secret_stays(pasted: str) -> None:
    found = scrub(pasted)
    assert found.text == pasted and found.kinds == ()


def test_scrubbing_twice_changes_nothing_more() -> None:
    once = scrub(f"HF_TOKEN={HF} --api-key abc123xyz api_key='k-123456' postgres://u:pw1234@h/db")
    again = scrub(once.text)
    assert again.text == once.text and again.kinds == ()

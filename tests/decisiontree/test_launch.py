"""Launch commands: read with the flag tables, edited without losing what the user wrote."""

from __future__ import annotations

import pytest

from decisiontree.launch import (
    apply_changes,
    command_in_text,
    launch_differences,
    parse_launch_command,
    release_written,
    rename_flags,
    split_at_launch,
    words,
    writable,
)
from decisiontree.records import Change, ChangeAction

QWEN = "vllm serve --enforce-eager Qwen/Qwen3-8B -tp 2"


def set_flag(name: str, value: str | None = None) -> Change:
    return Change(ChangeAction.SET_FLAG, name, value)


def remove_flag(name: str) -> Change:
    return Change(ChangeAction.REMOVE_FLAG, name)


def test_a_refused_flag_is_renamed_where_it_stands_in_either_form() -> None:
    cmd = "python -m sglang.launch_server --kv-cache-dytpe fp8_e4m3 --tp=2 --served-model-name '--tp=2'"

    renamed = rename_flags(cmd, {"--kv-cache-dytpe": "--kv-cache-dtype", "--tp": "--tp-size"})

    assert renamed == (
        "python -m sglang.launch_server --kv-cache-dtype fp8_e4m3 --tp-size=2 "
        "--served-model-name '--tp=2'"  # a quoted value is a value, not a flag
    )


def test_a_boolean_flag_takes_no_value() -> None:
    command = parse_launch_command(QWEN)
    assert command.model == "Qwen/Qwen3-8B"
    assert command.flags == {"enforce-eager": "true", "tensor-parallel-size": "2"}


def test_a_value_flag_takes_one_word_and_leaves_the_model() -> None:
    command = parse_launch_command("vllm serve --max-model-len 4096 Qwen/Qwen3-8B")
    assert (command.model, command.flags["max-model-len"]) == ("Qwen/Qwen3-8B", "4096")


def test_removing_a_boolean_flag_keeps_the_model_after_it() -> None:
    """Bug: `vllm serve --enforce-eager Qwen/Qwen3-8B -tp 2` became `vllm serve -tp 2`."""
    assert apply_changes(QWEN, [remove_flag("enforce-eager")]) == "vllm serve Qwen/Qwen3-8B -tp 2"


def test_a_fix_that_names_a_value_flag_without_a_value_keeps_the_users_value() -> None:
    """Bug: "raise --gpu-memory-utilization" turned `--gpu-memory-utilization 0.8` into a
    bare `--gpu-memory-utilization`, which the server refuses."""
    cmd = "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.8"
    changes = [set_flag("gpu-memory-utilization"), set_flag("enforce-eager")]

    assert apply_changes(cmd, changes) == f"{cmd} --enforce-eager"  # a switch needs none
    assert not writable(set_flag("gpu-memory-utilization"), "vllm")
    assert writable(set_flag("gpu-memory-utilization", "0.9"), "vllm")


def test_setting_a_flag_replaces_its_short_spelling() -> None:
    """Bug: setting --tensor-parallel-size 4 kept `-tp 2` and appended the new flag."""
    edited = apply_changes(QWEN, [set_flag("tensor-parallel-size", "4")])
    assert edited == "vllm serve --enforce-eager Qwen/Qwen3-8B --tensor-parallel-size 4"
    assert parse_launch_command(edited).flags["tensor-parallel-size"] == "4"


def test_setting_a_renamed_flag_replaces_the_old_name_in_the_releases_spelling() -> None:
    command = "python -m sglang.launch_server --model-path m --nsa-decode-backend flashmla_kv"
    edited = apply_changes(command, [set_flag("dsa-decode-backend", "trtllm")], version="0.5.9")
    assert edited == "python -m sglang.launch_server --model-path m --nsa-decode-backend trtllm"


def test_every_spelling_of_a_flag_given_twice_becomes_one() -> None:
    command = "vllm serve m -tp 2 --tensor-parallel-size=2"
    assert apply_changes(command, [set_flag("-tp", "4")]) == "vllm serve m --tensor-parallel-size 4"


def test_a_new_flag_goes_after_the_servers_last_argument() -> None:
    command = "cd /srv && vllm serve m --port 8000 > server.log 2>&1 &"
    edited = apply_changes(command, [set_flag("kv-cache-dtype", "fp8")])
    assert edited == "cd /srv && vllm serve m --port 8000 --kv-cache-dtype fp8 > server.log 2>&1 &"


def test_line_breaks_and_quotes_the_user_wrote_stay() -> None:
    command = (
        "python3 -m sglang.launch_server \\\n"
        "  --model-path /models/GLM-5 \\\n"
        "  --enable-torch-compile \\\n"
        "  --json-model-override-args '{\"a\": 1}'"
    )
    edited = apply_changes(command, [remove_flag("enable-torch-compile")])
    assert edited == (
        "python3 -m sglang.launch_server \\\n"
        "  --model-path /models/GLM-5 \\\n"
        "  --json-model-override-args '{\"a\": 1}'"
    )


def test_a_command_inside_ssh_is_edited_inside_its_quotes() -> None:
    command = "ssh gpu1 'vllm serve m --enforce-eager --max-model-len 8192'"
    edited = apply_changes(command, [remove_flag("enforce-eager")])
    assert edited == "ssh gpu1 'vllm serve m --max-model-len 8192'"


def test_a_boolean_set_to_false_uses_its_negation_or_goes() -> None:
    assert apply_changes(QWEN, [set_flag("enforce-eager", "false")]) == (
        "vllm serve --no-enforce-eager Qwen/Qwen3-8B -tp 2"
    )
    sglang = "python -m sglang.launch_server --model-path m --enable-torch-compile"
    edited = apply_changes(sglang, [set_flag("enable-torch-compile", "false")])
    assert edited == "python -m sglang.launch_server --model-path m"


def test_an_environment_change_sets_the_variable_once() -> None:
    command = "NCCL_DEBUG=INFO vllm serve m"
    edited = apply_changes(
        command,
        [
            Change(ChangeAction.SET_ENV, "NCCL_DEBUG", "WARN"),
            Change(ChangeAction.SET_ENV, "X", "a b"),
        ],
    )
    assert edited == "X='a b' NCCL_DEBUG=WARN vllm serve m"
    docker = "docker run --gpus all vllm/vllm-openai:v0.11.0 --model m"
    assert apply_changes(docker, [Change(ChangeAction.SET_ENV, "X", "1")]) == (
        "docker run -e X=1 --gpus all vllm/vllm-openai:v0.11.0 --model m"
    )


def test_a_value_with_shell_characters_is_quoted() -> None:
    edited = apply_changes("vllm serve m", [set_flag("served-model-name", "a; rm -rf /")])
    assert edited == "vllm serve m --served-model-name 'a; rm -rf /'"


def test_other_changes_leave_the_command_as_it_was() -> None:
    change = Change(ChangeAction.PIN_VERSION, "flashinfer-python", "0.6.3")
    assert apply_changes(QWEN, [change]) == QWEN


@pytest.mark.parametrize(
    ("command", "texts"),
    [
        ('a \'b c\' "d \\"e\\"" f\\ g', ["a", "b c", 'd "e"', "f g"]),
        ("x=1 && y | z; w &", ["x=1", "&&", "y", "|", "z", ";", "w", "&"]),
        ("vllm serve m > log 2>&1", ["vllm", "serve", "m"]),
        ("$ vllm serve \\\n  m", ["vllm", "serve", "m"]),
        ("vllm serve m \\  \n  --tp 2", ["vllm", "serve", "m", "--tp", "2"]),
        ("vllm serve 'unbalanced", ["vllm", "serve", "'unbalanced"]),
    ],
)
def test_it_splits_words_as_a_shell_does(command: str, texts: list[str]) -> None:
    assert [w.text for w in words(command)] == texts


def test_a_flag_written_with_a_word_processors_dashes_and_quotes_is_the_flag() -> None:
    """A command copied from a wiki, a document or a chat app that turned "--" into a dash;
    the corrected command is given back with "--", as it must be typed to run."""
    copied = (
        "python -m sglang.launch_server \u2014model-path m \u2013tp 8 \u2014mem-fraction-static 0.9"
    )

    assert parse_launch_command(copied).flags == {
        "model-path": "m",
        "tp-size": "8",
        "mem-fraction-static": "0.9",
    }
    assert apply_changes(copied, [set_flag("mem-fraction-static", "0.85")]) == (
        "python -m sglang.launch_server --model-path m --tp 8 --mem-fraction-static 0.85"
    )
    # and its quotes, “…” and ‘…’
    quoted = "vllm serve \u201c/models/My Model\u201d --chat-template \u2018{{ x }}\u2019"
    assert parse_launch_command(quoted).model == "/models/My Model"
    assert apply_changes(quoted, [set_flag("max-model-len", "4096")]) == (
        "vllm serve \"/models/My Model\" --chat-template '{{ x }}' --max-model-len 4096"
    )


@pytest.mark.parametrize("end", [" \\", " \\  "])
def test_a_first_line_copied_alone_keeps_its_continuation_after_the_change(end: str) -> None:
    """The first line of a command written over several ends in a backslash; a flag the
    fix adds goes before it, not after an empty word the backslash escaped."""
    assert apply_changes(f"vllm serve m{end}", [set_flag("dtype", "half")]) == (
        f"vllm serve m --dtype half{end}"
    )


def test_a_switch_set_to_true_in_any_case_is_written_bare() -> None:
    assert apply_changes("vllm serve Qwen/Qwen3-8B -tp 2", [set_flag("enforce-eager", "True")]) == (
        "vllm serve Qwen/Qwen3-8B -tp 2 --enforce-eager"
    )


def test_a_negated_switch_given_a_value_reads_as_its_opposite() -> None:
    assert parse_launch_command("vllm serve m --no-enforce-eager=false").flags == {
        "enforce-eager": "true"
    }
    assert parse_launch_command("vllm serve m --no-enforce-eager").flags == {
        "enforce-eager": "false"
    }


def test_an_environment_change_to_bare_flags_goes_before_them() -> None:
    edited = apply_changes("--tp 2", [Change(ChangeAction.SET_ENV, "X", "1")], framework="sglang")
    assert edited == "X=1 --tp 2"
    assert apply_changes("", [Change(ChangeAction.SET_ENV, "X", "1")], framework="sglang") == "X=1 "


def test_a_switch_followed_by_true_or_false_takes_that_word_not_the_model() -> None:
    command = parse_launch_command("vllm serve --enforce-eager false Qwen/Qwen3-8B")
    assert (command.model, command.flags) == ("Qwen/Qwen3-8B", {"enforce-eager": "false"})


def test_a_server_started_from_a_path_with_a_space_keeps_its_arguments() -> None:
    command = 'python "/home/ana/my code/sglang/launch_server.py" --model-path org/M --tp 2'

    parsed = parse_launch_command(command)
    assert (parsed.framework, parsed.model) == ("sglang", "org/M")
    assert parsed.flags["tp-size"] == "2"
    assert apply_changes(command, [set_flag("tp-size", "4")]) == (
        'python "/home/ana/my code/sglang/launch_server.py" --model-path org/M --tp-size 4'
    )


def test_a_command_handed_to_a_shell_inside_the_vllm_image_is_the_one_read() -> None:
    command = (
        "docker run --gpus all --entrypoint bash vllm/vllm-openai:v0.11.0 "
        '-c "vllm serve Qwen/Qwen3-8B -tp 2"'
    )

    parsed = parse_launch_command(command)
    assert (parsed.model, dict(parsed.flags)) == ("Qwen/Qwen3-8B", {"tensor-parallel-size": "2"})
    assert apply_changes(command, [set_flag("tensor-parallel-size", "4")]).endswith(
        "-c 'vllm serve Qwen/Qwen3-8B --tensor-parallel-size 4'"
    )


def test_a_command_with_an_unclosed_quote_is_still_read_up_to_its_pipe() -> None:
    parsed = parse_launch_command('vllm serve Qwen/Qwen3-8B -tp 2 2>&1 | tee "server.log')
    assert (parsed.model, dict(parsed.flags)) == ("Qwen/Qwen3-8B", {"tensor-parallel-size": "2"})


def test_flags_without_a_server_are_read_when_the_framework_named_is_none_we_know() -> None:
    # A write-up's "Framework: gpustack" names a wrapper: its vLLM flags still count.
    launched = parse_launch_command("--max-model-len 8000 --tensor-parallel-size 2", "gpustack")

    assert launched.flags == {"max-model-len": "8000", "tensor-parallel-size": "2"}


def test_a_flag_added_to_a_command_that_writes_old_names_is_spelled_for_that_release() -> None:
    """Bug: with the release unknown, a fix added `--dsa-decode-backend` to a command that
    wrote `--nsa-prefill-backend`: SGLang 0.5.9, which the old name shows, refuses it."""
    command = "python -m sglang.launch_server --model-path m --nsa-prefill-backend flashmla_auto"

    edited = apply_changes(command, [set_flag("dsa-decode-backend", "trtllm")])

    assert edited == command + " --nsa-decode-backend trtllm"
    assert release_written(command) == "0.5.9"
    assert release_written("python -m sglang.launch_server --dsa-decode-backend x") is None
    assert release_written(f"ssh gpu-1 '{command}'") == "0.5.9"


@pytest.mark.parametrize(
    ("text", "command"),
    [
        (
            "[2026-03-01 09:00:00] launching: CUDA_VISIBLE_DEVICES=0,1 python3 -m "
            "sglang.launch_server --model-path m \\\n    --tp 2 2>&1 | tee server.log\n"
            "Traceback (most recent call last):\n",
            "CUDA_VISIBLE_DEVICES=0,1 python3 -m sglang.launch_server --model-path m \\\n"
            "    --tp 2 2>&1 | tee server.log",
        ),
        ("I ran\n$ vllm serve Qwen/Qwen3-8B -tp 2\nand got", "vllm serve Qwen/Qwen3-8B -tp 2"),
        ('  File "/x/sglang/launch_server.py", line 3, in <module>\n', None),
        ("python -m sglang.launch_server is what we use", None),
    ],
)
def test_a_launch_command_inside_a_paste_is_found_as_written(text: str, command: str) -> None:
    assert command_in_text(text) == command


def test_a_server_started_in_a_container_gets_its_environment_through_docker() -> None:
    """`docker run ... lmsysorg/sglang python3 -m sglang.launch_server`: a variable set
    before `docker` would never reach the server inside."""
    pasted = (
        "$ docker run --gpus all --shm-size 32g lmsysorg/sglang:latest "
        "python3 -m sglang.launch_server --model-path m --tp 2\nTraceback ..."
    )
    command = command_in_text(pasted)
    assert command is not None and command.startswith("docker run --gpus all")

    edited = apply_changes(command, [Change(ChangeAction.SET_ENV, "NCCL_P2P_DISABLE", "1")])

    assert edited.startswith("docker run -e NCCL_P2P_DISABLE=1 --gpus all --shm-size 32g ")
    assert parse_launch_command(edited).env == {"NCCL_P2P_DISABLE": "1"}


def test_a_vllm_image_run_inside_a_paste_is_the_command_found() -> None:
    pasted = (
        "Started it with:\n"
        "sudo docker run --runtime nvidia --gpus all -p 8000:8000 --ipc=host "
        "vllm/vllm-openai:latest --model Qwen/Qwen3-8B --max-model-len 32768\nthen:"
    )

    command = command_in_text(pasted)

    assert command == (
        "sudo docker run --runtime nvidia --gpus all -p 8000:8000 --ipc=host "
        "vllm/vllm-openai:latest --model Qwen/Qwen3-8B --max-model-len 32768"
    )
    assert command_in_text("docker run -it lmsysorg/sglang:latest bash") is None


def test_a_command_run_through_ssh_is_found_whole() -> None:
    """Bug: the finder started at the entry point inside the quotes, so the command lost
    `ssh gpu-1 '` and kept the closing quote; it reads a launch as write-ups are read."""
    pasted = (
        "$ ssh gpu-1 'python -m sglang.launch_server --model-path m \\\n"
        "    --nsa-decode-backend flashmla_kv'\nTraceback (most recent call last):\n"
    )

    command = command_in_text(pasted)

    assert command == (
        "ssh gpu-1 'python -m sglang.launch_server --model-path m \\\n"
        "    --nsa-decode-backend flashmla_kv'"
    )
    edited = apply_changes(command, [set_flag("dsa-decode-backend", "trtllm")])
    assert edited.endswith("--nsa-decode-backend trtllm'")


# ---- comparing with the launch known to work

WORKS = (
    "python3 -m sglang.launch_server --model-path GLM-5-NVFP4 --tp-size 8 "
    "--mem-fraction-static 0.88 --nsa-prefill-backend trtllm --nsa-decode-backend trtllm"
)


def test_it_names_each_setting_that_differs_the_known_good_ones_first() -> None:
    yours = (
        "NCCL_P2P_DISABLE=1 python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 "
        "--tp 8 --kv-cache-dtype fp8_e4m3 --dsa-decode-backend flashmla_kv --host 0.0.0.0 "
        "--port 30000"
    )
    found = launch_differences(yours, WORKS, framework="sglang", version="0.5.9")
    assert [(d.name, d.yours, d.works) for d in found] == [
        ("--mem-fraction-static", None, "0.88"),
        ("--nsa-prefill-backend", None, "trtllm"),
        ("--nsa-decode-backend", "flashmla_kv", "trtllm"),  # one flag, two spellings
        ("--kv-cache-dtype", "fp8_e4m3", None),
        ("NCCL_P2P_DISABLE", "1", None),
    ]  # the model's path, --tp for --tp-size, the address and port are no difference


def test_the_same_launch_differs_in_nothing() -> None:
    assert launch_differences(WORKS, WORKS) == []
    newer = WORKS.replace("--nsa-", "--dsa-")
    assert launch_differences(newer, WORKS, framework="sglang", version="0.5.23") == []


@pytest.mark.parametrize(
    ("command", "release"),
    [
        ("docker run --gpus all vllm/vllm-openai:v0.9.1 --model Qwen/Qwen3-8B", "0.9.1"),
        (
            "docker run --gpus all lmsysorg/sglang:v0.5.9-cu129 python3 -m sglang.launch_server "
            "--model-path zai-org/GLM-5-NVFP4",
            "0.5.9",
        ),
        (
            "uv run --with 'sglang[all]==0.5.9' python -m sglang.launch_server --model-path m",
            "0.5.9",
        ),
        ("pip install vllm==0.9.1 && vllm serve Qwen/Qwen3-8B", "0.9.1"),
        (
            "ssh gpu1 'docker run lmsysorg/sglang:v0.4.6.post1-cu124 sglang serve --model-path m'",
            "0.4.6.post1",
        ),  # fmt: skip
        ("docker run docker.io/vllm/vllm-openai:v0.9.1 --model m", "0.9.1"),
        ("docker run mirror.lan:5000/lmsysorg/sglang:v0.5.9 sglang serve --model-path m", "0.5.9"),
        # No release: a floating tag, or another framework's pin.
        ("docker run vllm/vllm-openai:latest --model m", None),
        ("pip install vllm==0.9.1 && python -m sglang.launch_server --model-path m", None),
    ],
)
def test_the_release_a_command_installs_or_runs_is_read(command: str, release: str | None) -> None:
    assert parse_launch_command(command).release == release


def test_a_message_naming_the_setup_before_the_launch_is_split_at_the_launch() -> None:
    """A chat message: where it runs, then the command, on one line or in a code block."""
    launch = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2"
    assert split_at_launch(f"on 2x H100, sglang 0.5.9: {launch}") == (
        "on 2x H100, sglang 0.5.9:",
        launch,
    )
    assert split_at_launch(f"B200\n```\n{launch} \\\n  --kv-cache-dtype bf16\n```") == (
        "B200",
        f"{launch} \\\n  --kv-cache-dtype bf16",
    )
    assert split_at_launch(f"H200 CUDA_VISIBLE_DEVICES=0,1 {launch}") == (
        "H200",
        f"CUDA_VISIBLE_DEVICES=0,1 {launch}",
    )
    assert split_at_launch("Check failed: x == y (3 vs. 4)") is None


DEPLOYMENT = """\
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args:
        - --model
        - meta-llama/Llama-3.1-70B-Instruct
        - "--tensor-parallel-size=4"
        - --max-model-len
        - "32768"
        resources:
          limits:
            nvidia.com/gpu: 4
"""
DESCRIBED = """\
Containers:
  vllm:
    Image:          vllm/vllm-openai:v0.6.3
    Args:
      --model
      meta-llama/Llama-3.1-70B-Instruct
      --tensor-parallel-size
      4
    State:          Waiting
      Reason:       CrashLoopBackOff
"""


@pytest.mark.parametrize("pasted", [DEPLOYMENT, DESCRIBED], ids=["manifest", "kubectl-describe"])
def test_a_pods_container_args_are_the_servers_launch(pasted: str) -> None:
    """No shell line: the image's entry point is the server, its args are the flags."""
    found = command_in_text(pasted)
    assert found is not None
    launch = parse_launch_command(found)

    assert (launch.framework, launch.model) == ("vllm", "meta-llama/Llama-3.1-70B-Instruct")
    assert launch.flags["tensor-parallel-size"] == "4"


@pytest.mark.parametrize(
    "container",
    [
        'command: ["/bin/sh", "-c"]\n'
        'args: ["python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2"]\n',
        'command: ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B",'
        ' "--tp", "2"]\n',
        "command:\n- python3\n- -m\n- sglang.launch_server\nargs:\n- --model-path\n"
        "- Qwen/Qwen3-8B\n- --tp\n- '2'\n",
    ],
    ids=["sh-c", "flow-list", "block-lists"],
)
def test_a_containers_command_is_read_as_the_shell_would_run_it(container: str) -> None:
    launch = parse_launch_command(command_in_text(container) or "")
    assert (launch.framework, launch.model, launch.flags.get("tp-size")) == (
        "sglang",
        "Qwen/Qwen3-8B",
        "2",
    )


def test_args_for_an_image_that_names_no_server_are_no_launch() -> None:
    assert command_in_text('image: myorg/worker:1.2\nargs: ["--model", "m"]\n') is None

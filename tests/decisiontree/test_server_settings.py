"""A launch command rebuilt from the settings a server logged at start-up, so a whole
log attached without its command still gets a corrected command."""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.launch import parse_launch_command
from decisiontree.server_settings import rebuilt_command, settings_dumps

# As SGLang 0.5.9 logs it (every field; here a few dozen of its hundreds).
SGLANG_LOG = (
    "[2026-03-02 10:00:01] server_args=ServerArgs(model_path='zai-org/GLM-5-NVFP4', "
    "tokenizer_path='zai-org/GLM-5-NVFP4', tokenizer_mode='auto', skip_tokenizer_init=False, "
    "load_format='auto', trust_remote_code=True, dtype='auto', kv_cache_dtype='fp8_e4m3', "
    "quantization='modelopt_fp4', served_model_name='zai-org/GLM-5-NVFP4', "
    "host='0.0.0.0', port=30000, mem_fraction_static=0.87, max_running_requests=None, "
    "chunked_prefill_size=8192, tp_size=8, pp_size=1, random_seed=170553478, "
    "api_key='[redacted]', log_level='info', enable_metrics=False, "
    "attention_backend='nsa', nsa_decode_backend='flashmla_kv', "
    "nsa_prefill_backend='flashmla_sparse', cuda_graph_bs=[1, 2, 4, 8], "
    "disable_cuda_graph=False, json_model_override_args='{}', "
    "hicache_storage_backend_extra_config=None)\n"
    "[2026-03-02 10:00:09] Load weight begin.\n"
)

VLLM_LOG = (
    "INFO 03-02 10:00:00 [api_server.py:1900] vLLM API server version 0.11.0\n"
    "INFO 03-02 10:00:00 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
    "'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 2, 'max_model_len': 8192, "
    "'enable_prefix_caching': False, 'gpu_memory_utilization': 0.95, "
    "'compilation_config': {'level': 3, 'cudagraph_capture_sizes': [1, 2, 4]}}\n"
    "INFO 03-02 10:00:05 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
    "model='Qwen/Qwen3-8B', tokenizer='Qwen/Qwen3-8B', dtype=torch.bfloat16, "
    "max_seq_len=8192, tensor_parallel_size=2, seed=0\n"
)


def test_sglang_settings_that_differ_from_the_defaults_become_the_command() -> None:
    rebuilt = rebuilt_command(settings_dumps(SGLANG_LOG))

    assert rebuilt is not None and rebuilt.source == "ServerArgs"
    assert rebuilt.text == (
        "python3 -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --trust-remote-code "
        "--kv-cache-dtype fp8_e4m3 --quantization modelopt_fp4 --host 0.0.0.0 "
        "--mem-fraction-static 0.87 --chunked-prefill-size 8192 --tp-size 8 "
        "--random-seed 170553478 --api-key '[redacted]' --attention-backend nsa "
        "--nsa-decode-backend flashmla_kv --nsa-prefill-backend flashmla_sparse "
        "--cuda-graph-bs 1 2 4 8"
    )
    # Defaults, unset fields and the model repeated (tokenizer, served name) are left out.
    command = parse_launch_command(rebuilt.text)
    assert command.model == "zai-org/GLM-5-NVFP4"
    assert not {"tokenizer-path", "served-model-name", "port", "pp-size", "log-level"} & set(
        command.flags
    )


def test_knobs_sglang_decides_at_start_up_are_named_and_a_list_is_written_as_typed() -> None:
    rebuilt = rebuilt_command(settings_dumps(SGLANG_LOG))

    assert rebuilt is not None
    assert "mem-fraction-static" in rebuilt.server_chosen
    assert "chunked-prefill-size" in rebuilt.server_chosen
    assert "nsa-decode-backend" in rebuilt.server_chosen  # as the command writes it
    # A key, a path or a name is the user's: nothing fills it in.
    assert "api-key" not in rebuilt.server_chosen and "tp-size" not in rebuilt.server_chosen
    assert rebuilt.left_out == ()
    assert "--cuda-graph-bs 1 2 4 8 " in rebuilt.text + " "
    assert parse_launch_command(rebuilt.text).flags["cuda-graph-bs-decode"] == "1 2 4 8"


def test_vllm_non_default_args_are_the_command_as_typed() -> None:
    rebuilt = rebuilt_command(settings_dumps(VLLM_LOG))

    assert rebuilt is not None and rebuilt.source == "non-default args"
    assert rebuilt.text == (
        "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --max-model-len 8192 "
        "--disable-prefix-caching --gpu-memory-utilization 0.95 "
        """--compilation-config '{"level": 3, "cudagraph_capture_sizes": [1, 2, 4]}'"""
    )
    assert rebuilt.server_chosen == ()
    assert parse_launch_command(rebuilt.text).flags["enable-prefix-caching"] == "false"


# As vLLM before 0.9 logs it: every option of `vllm serve`, defaults included.
OLD_VLLM_LOG = (
    "INFO 11-20 09:00:00 api_server.py:585] vLLM API server version 0.6.4\n"
    "INFO 11-20 09:00:00 api_server.py:586] args: Namespace(subparser='serve', "
    "model_tag='Qwen/Qwen2.5-32B-Instruct', config='', host=None, port=8000, "
    "model='Qwen/Qwen2.5-32B-Instruct', trust_remote_code=False, max_model_len=32768, "
    "tensor_parallel_size=2, gpu_memory_utilization=0.85, enforce_eager=True, "
    "dispatch_function=<function serve at 0x7f2b1c3d5e40>)\n"
)


def test_an_older_vllm_namespace_printout_is_read_as_its_launch() -> None:
    rebuilt = rebuilt_command(settings_dumps(OLD_VLLM_LOG))

    assert rebuilt is not None and rebuilt.source == "Namespace"
    assert rebuilt.text == (
        "vllm serve Qwen/Qwen2.5-32B-Instruct --max-model-len 32768 "
        "--tensor-parallel-size 2 --gpu-memory-utilization 0.85 --enforce-eager"
    )
    context = build_context(OLD_VLLM_LOG)
    assert context.framework == "vllm"
    assert context.flags["gpu-memory-utilization"] == "0.85"


def test_a_benchmark_scripts_bare_namespace_is_no_server_launch() -> None:
    bench_output = "Namespace(backend='vllm', model='Qwen/Qwen3-8B', num_prompts=1000)\n"

    assert list(settings_dumps(bench_output)) == []


def test_the_last_start_in_a_log_is_the_one_rebuilt() -> None:
    restarted = SGLANG_LOG + SGLANG_LOG.replace("tp_size=8", "tp_size=4")

    rebuilt = rebuilt_command(settings_dumps(restarted))

    assert (
        rebuilt is not None and "--tp-size 4" in rebuilt.text and "--tp-size 8" not in rebuilt.text
    )


def test_an_engine_config_alone_rebuilds_nothing() -> None:
    """The resolved engine config names fields, not the flags the user typed."""
    engine_only = VLLM_LOG.splitlines()[-1]

    assert rebuilt_command(settings_dumps(engine_only)) is None
    assert rebuilt_command(settings_dumps("RuntimeError: CUDA out of memory")) is None


def test_a_paste_without_a_typed_command_carries_the_one_it_holds() -> None:
    pasted = "$ vllm serve Qwen/Qwen3-8B -tp 2\n" + VLLM_LOG

    assert build_context(pasted).found_command.text == "vllm serve Qwen/Qwen3-8B -tp 2"
    assert build_context(VLLM_LOG).found_command.source == "non-default args"
    typed = build_context(VLLM_LOG, launch_command="vllm serve Qwen/Qwen3-8B")
    assert typed.found_command is None


def test_old_flag_names_in_the_log_set_the_release_flags_are_spelled_for() -> None:
    context = build_context(SGLANG_LOG)

    assert context.framework_version is None  # a bound, never taken for the release itself
    assert context.spelling_version == "0.5.9"


def test_a_printout_cut_short_loses_only_its_last_value() -> None:
    """An excerpt or a paste can end inside the printout: the value it cut is not taken."""
    cut = SGLANG_LOG.split(", nsa_prefill_backend=")[0] + ", nsa_prefill_backend='flash"

    rebuilt = rebuilt_command(settings_dumps(cut))

    assert rebuilt is not None and "--nsa-decode-backend flashmla_kv" in rebuilt.text
    assert "prefill-backend" not in rebuilt.text
    assert build_context(cut).flags.get("dsa-prefill-backend") is None

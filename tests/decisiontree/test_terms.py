"""The words of a paste: what two reports of one bug share once machine details are gone."""

from decisiontree.terms import demangled_name, expand, facets_of, path_words, words_of


def test_it_keeps_the_package_and_module_of_a_python_path_but_not_the_home_directory() -> None:
    words = words_of(
        'File "/home/mlops/.venvs/serve/lib/python3.12/site-packages/sglang/srt/layers/'
        'quantization/fp8_kernel.py", line 77, in per_token_group_quant'
    )

    assert {"sglang", "srt", "quantization", "fp8_kernel", "per_token_group_quant"} <= set(words)
    assert "mlops" not in words and "venvs" not in words and "home" not in words


def test_it_reads_a_windows_path_inside_site_packages_like_a_posix_one() -> None:
    posix = path_words("/opt/py/lib/python3.10/site-packages/accelerate/utils/modeling.py")
    windows = path_words(
        r"C:\Users\ana\AppData\Python310\site-packages\accelerate\utils\modeling.py"
    )

    assert posix == windows == ["accelerate", "utils", "modeling"]


def test_it_keeps_the_last_directories_of_a_source_file_outside_any_package() -> None:
    words = path_words("/build/src/deps/cutlass/include/cute/arch/mma_sm90_desc.hpp")

    assert words == ["cute", "arch", "mma_sm90_desc"]


def test_a_shared_library_is_named_by_its_base_name_wherever_it_lives() -> None:
    installed = words_of("OSError: /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9: cannot open")
    bare = words_of("ImportError: libcudnn_ops.so.9: cannot open shared object file")

    assert "libcudnn_ops" in installed and "libcudnn_ops" in bare
    assert "so" not in installed and "so" not in bare


def test_it_demangles_cpp_symbols_into_namespaces_and_function_names() -> None:
    name = demangled_name("_ZN5flash11run_mha_fwdINS_12Flash_paramsELi128EEEvRS1_P11CUstream_st")
    words = words_of("#4 0x7f11 in _ZN3c106detail14torchCheckFailEPKcS2_jRKSs + 0x6a")

    assert name == "flash run_mha_fwd"  # no return type, template or argument plumbing
    assert {"c10", "detail", "torchcheckfail", "torch", "check", "fail"} <= set(words)
    assert not any(w.startswith("_z") for w in words)


def test_identifiers_come_whole_and_in_parts_and_acronyms_stay_whole() -> None:
    assert expand("flashinfer_prefill_ragged") == (
        "flashinfer_prefill_ragged",
        "flashinfer",
        "prefill",
        "ragged",
    )
    assert expand("cudaErrorLaunchTimeout") == (
        "cudaerrorlaunchtimeout",
        "cuda",
        "error",
        "launch",
        "timeout",
    )
    assert expand("QLoRA") == ("qlora", "lora")  # not "lo" + "ra"
    assert expand("--max-num-batched-tokens")[0] == "max-num-batched-tokens"


def test_an_error_code_keeps_its_number_and_other_numbers_go() -> None:
    words = words_of("cudaMalloc returned error 2 (code=2) after 1536 tries on rank 3, pid 4411")

    assert "code2" in words
    assert not any(w.isdigit() for w in words)
    assert "1536" not in " ".join(words)


def test_ids_addresses_urls_and_sizes_leave_no_words() -> None:
    words = words_of(
        "request 9f86d081-884c-4d63-a99b-6ae2c7d0e4a1 at 0x7f3b2c5a1eb8 failed, see "
        "https://example.org/docs/troubleshooting#oom, tried 3.50 GiB"
    )

    assert words == ["request", "at", "failed", "see", "tried"]


def test_a_name_cut_at_a_number_leaves_words_not_its_tail() -> None:
    """Two reports naming different 8B models share no made-up word "b-instruct"."""
    words = words_of(
        "loading meta-llama/Llama-3.1-8B-Instruct and Qwen2.5-7B-Instruct-AWQ on 8xH100"
    )

    assert {"instruct", "awq", "h100", "llama"} <= set(words)
    assert not [w for w in words if w.startswith(("b-", "xh"))]


def test_numbered_ranks_and_devices_are_not_words() -> None:
    assert set(words_of("[TP3] rank7 on cuda0 gpu2 worker12")) == {"on"}


def test_facets_keep_flags_env_names_versions_libraries_and_kernels_apart() -> None:
    facets = facets_of(
        "NCCL_P2P_DISABLE=1 python -m sglang.launch_server --enable-torch-compile "
        "--tp 4 with torch 2.6.0+cu126 and sglang 0.4.9.post2; libnccl.so.2 raised in "
        "void vectorized_elementwise_kernel<4>"
    )

    assert "enable-torch-compile" in facets.flags and "tp" in facets.flags
    assert facets.env == ("NCCL_P2P_DISABLE",)
    assert {"2.6.0+cu126", "0.4.9.post2"} <= set(facets.versions)
    assert facets.libraries == ()  # no path: the library facet comes from paths
    assert "vectorized_elementwise_kernel" in facets.kernels


def test_versions_are_facets_not_words() -> None:
    assert words_of("vllm 0.8.5.post1 with flashinfer 0.2.5") == ["vllm", "with", "flashinfer"]

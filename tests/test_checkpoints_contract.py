"""Contract of data/checkpoints.yaml (advisor.deploy.tables.CheckpointTable): every published
checkpoint names its repository, a format the table defines, and the evidence that the repository
exists and holds that dtype; a model/dtype without a confirmed entry is quantized first."""

from __future__ import annotations

import copy

import pytest
import yaml

from advisor.catalog import loader
from advisor.catalog.loader import DATA_DIR, CatalogError
from advisor.deploy.checkpoints import choose
from advisor.deploy.tables import checkpoints, load_checkpoint_table


def _raw() -> dict:
    return yaml.safe_load((DATA_DIR / "checkpoints.yaml").read_text("utf-8"))


def _broken(model: str, dtype: str, **change) -> dict:
    raw = copy.deepcopy(_raw())
    entry = raw["models"][model][dtype]
    for key, value in change.items():
        if value is None:
            del entry[key]
        else:
            entry[key] = value
    return raw


def test_every_entry_names_a_catalog_model_and_a_source():
    table = checkpoints()
    assert set(table["models"]) <= set(loader.models())
    for model, by_dtype in table["models"].items():
        for dtype, entry in by_dtype.items():
            assert entry["source"].startswith(("https://", "github:")), (model, dtype)


def test_missing_source_is_refused_naming_the_field():
    with pytest.raises(CatalogError, match=r"(?s)llama-3\.1-70b.*fp8.*source.*Field required"):
        load_checkpoint_table(_broken("llama-3.1-70b", "fp8", source=None))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": "the model page"}, "source"),  # not a URL nor github:owner/name@commit path
        ({"source": "github:ai-dynamo/aiconfigurator some/path.json"}, "source"),  # no commit
        ({"repo": "Llama-3.1-70B-Instruct-FP8"}, "repo"),  # no owner
        ({"format": "gguf"}, r"'gguf' is not one of \['awq', 'compressed-tensors'"),
        ({"tag": "x"}, "Extra inputs are not permitted"),
    ],
)
def test_bad_entries_are_refused(change, message):
    with pytest.raises(CatalogError, match=message):
        load_checkpoint_table(_broken("llama-3.1-70b", "fp8", **change))


def test_unknown_dtype_and_engine_are_refused():
    raw = copy.deepcopy(_raw())
    raw["models"]["llama-3.1-70b"]["fp6"] = raw["models"]["llama-3.1-70b"]["fp8"]
    with pytest.raises(CatalogError, match="fp6"):
        load_checkpoint_table(raw)
    raw = copy.deepcopy(_raw())
    raw["formats"]["awq"] = ["vllm", "tgi"]
    with pytest.raises(CatalogError, match="tgi"):
        load_checkpoint_table(raw)


def test_a_named_checkpoint_carries_its_source():
    # huggingface.co/nvidia/Llama-3.1-70B-Instruct-FP8: ModelOpt FP8, TensorRT-LLM and vLLM.
    c = choose("llama-3.1-70b", "fp8", "trtllm")
    assert c.published and c.repo == "nvidia/Llama-3.1-70B-Instruct-FP8"
    assert c.source.startswith("https://huggingface.co/nvidia/Llama-3.1-70B-Instruct-FP8")


def test_unconfirmed_or_unloadable_checkpoints_are_quantized_first():
    # Qwen/Qwen3-8B-FP8 has no confirmed source in the table: TensorRT-LLM quantizes first,
    # vLLM quantizes at load.
    c = choose("qwen3-8b", "fp8", "trtllm")
    assert not c.published and c.repo == "Qwen/Qwen3-8B" and "Model Optimizer" in c.prepare
    assert choose("qwen3-8b", "fp8", "vllm").online_quantization == "fp8"
    # Qwen's fine-grained FP8 card names transformers, SGLang and vLLM, not TensorRT-LLM.
    assert choose("qwen3-32b", "fp8", "sglang").repo == "Qwen/Qwen3-32B-FP8"
    assert not choose("qwen3-32b", "fp8", "trtllm").published


def test_remote_code_names_a_listed_model_with_evidence():
    raw = copy.deepcopy(_raw())
    raw["remote_code"]["qwen9-xl"] = raw["remote_code"]["minimax-m2"]
    with pytest.raises(CatalogError, match=r"remote_code\.qwen9-xl: not a model of 'models'"):
        load_checkpoint_table(raw)
    raw = copy.deepcopy(_raw())
    raw["remote_code"]["minimax-m2"] = "published commands pass it"  # no URL or commit
    with pytest.raises(CatalogError, match="remote_code"):
        load_checkpoint_table(raw)


#: The quantization methods each engine's ROCm build accepts, copied from the sources that
#: ``rocm_formats_source`` cites: vLLM vllm/platforms/rocm.py (RocmPlatform.supported_quantization)
#: and SGLang python/sglang/srt/configs/model_config.py (rocm_supported_quantization). A server
#: started with any other method exits with "... quantization is currently not supported in ROCm".
ROCM_METHODS = {
    "vllm": {"awq", "awq_marlin", "gptq", "gptq_marlin", "fp8", "compressed-tensors",
             "fbgemm_fp8", "gguf", "quark", "mxfp4", "petit_nvfp4", "torchao", "bitsandbytes"},
    "sglang": {"awq", "gptq", "fp8", "compressed_tensors", "compressed-tensors", "fbgemm_fp8",
               "w8a8_fp8", "petit_nvfp4", "quark", "mxfp4", "auto-round", "quark_int4fp8_moe",
               "quark_mxfp4"},
}  # fmt: skip
#: The method each engine reads off a checkpoint of each format (its quantization_config's
#: quant_method, or for ModelOpt exports hf_quant_config.json: vLLM "modelopt", SGLang
#: "modelopt_fp8"/"modelopt_fp4"); None: not quantized (a 16-bit original needs no method).
METHOD_OF_FORMAT = {
    "original": {"vllm": None, "sglang": None},
    "modelopt": {"vllm": "modelopt", "sglang": "modelopt_fp8"},
    "compressed-tensors": {"vllm": "compressed-tensors", "sglang": "compressed-tensors"},
    "awq": {"vllm": "awq", "sglang": "awq"},
    "qwen-fp8": {"vllm": "fp8", "sglang": "fp8"},
}


def test_rocm_formats_are_the_formats_whose_method_the_rocm_builds_accept():
    table = checkpoints()
    assert set(METHOD_OF_FORMAT) == set(table["formats"])
    for fmt, by_engine in METHOD_OF_FORMAT.items():
        for engine, method in by_engine.items():
            loads = engine in table["formats"][fmt] and (method is None
                                                         or method in ROCM_METHODS[engine])  # fmt: skip
            assert (engine in table["rocm_formats"][fmt]) == loads, (fmt, engine)
    # TensorRT-LLM has no ROCm build
    assert not any("trtllm" in e for e in table["rocm_formats"].values())


def test_rocm_formats_must_list_every_format_and_only_engines_that_load_it():
    raw = copy.deepcopy(_raw())
    del raw["rocm_formats"]["awq"]
    with pytest.raises(CatalogError, match=r"rocm_formats: lists .*every format"):
        load_checkpoint_table(raw)
    raw = copy.deepcopy(_raw())
    raw["rocm_formats"]["awq"] = ["vllm", "trtllm"]
    with pytest.raises(CatalogError, match=r"rocm_formats\.awq: \['trtllm'\] do not load awq"):
        load_checkpoint_table(raw)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_amd_launch_never_names_a_checkpoint_its_rocm_build_refuses(tmp_path, engine):
    """Llama-3.1-70B in fp8 on MI300X named nvidia/Llama-3.1-70B-Instruct-FP8 (a ModelOpt
    export) in launch.sh, Compose and Kubernetes: both ROCm builds refuse it at start. The
    files now quantize the 16-bit release at load, and the README says why."""
    from advisor.cli import main

    code = main(["deploy", "--model", "llama-3.1-70b", "--gpu", "mi300x", "--qps", "5", "--isl",
                 "2000", "--osl", "300", "--weights", "fp8", "--engine", engine, "--out",
                 str(tmp_path)])  # fmt: skip
    assert code in (0, None)
    text = "".join(p.read_text() for p in tmp_path.iterdir() if p.is_file())
    assert "nvidia/Llama-3.1-70B-Instruct-FP8" in (tmp_path / "README.md").read_text()
    for name in ("launch.sh", "docker-compose.yaml", "kubernetes.yaml"):
        body = (tmp_path / name).read_text()
        assert "nvidia/Llama-3.1-70B-Instruct-FP8" not in body, name
        assert "meta-llama/Llama-3.1-70B-Instruct" in body and "fp8" in body, name
    assert "does not load on" in text
    # on NVIDIA GPUs the same engine still loads the published export
    assert choose("llama-3.1-70b", "fp8", engine, "NVIDIA").repo == (
        "nvidia/Llama-3.1-70B-Instruct-FP8"
    )

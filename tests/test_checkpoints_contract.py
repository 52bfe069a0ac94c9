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

"""Layouts an engine refuses at start (advisor/physics/engine_limits.py): refused by
``deploy --deployment`` with the nearest layout the engine runs, and left out of the search for
that engine. Expected values come from the engines' sources (cited per test) and the models'
config.json sizes (data/models.yaml)."""

from __future__ import annotations

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.deploy.bundle import deploy_bundle
from advisor.physics.engine_limits import block_quantized_moe_tp_blocker
from advisor.scenario import Hardware, Options, Scenario
from advisor.search.deployment_spec import parse_spec
from advisor.search.space import shapes


def _reasons(sc: Scenario, text: str, engine: str) -> list[str]:
    return deploy_bundle(sc, parse_spec(text), engine).reasons


@pytest.mark.parametrize(
    ("model", "text"),
    [
        # MiniMax-M2.5 and Qwen3-235B-A22B-FP8: moe_intermediate_size 1536, 128 x 128 FP8 blocks
        # (data/checkpoints.yaml weight_block); 1536 / 8 = 192 columns per GPU, and SGLang
        # 0.5.23 raises "The output_size of gate's and up's weight = 192 is not divisible by
        # weight quantization block_n = 128" (srt/layers/quantization/fp8.py:1587-1592).
        ("minimax-m2", "h100-sxm.tp8.pp1.dp1.dpa8.fp8.fp8"),
        ("qwen3-235b-a22b", "h100-sxm.tp8.pp1.dp1.fp8.fp8"),
    ],
)
def test_sglang_refuses_block_fp8_experts_split_below_a_block(model, text):
    sc = Scenario(model=model, hardware=Hardware(gpus=["h100-sxm"]))
    (why,) = [r for r in _reasons(sc, text, "sglang") if "SGLang refuses" in r]
    assert "1536/8 = 192 columns" in why and "nearest: EP=8 on the same GPUs" in why
    # expert parallel keeps the 1536 columns whole (MoE-TP = TP / EP = 1): loads
    ep = text.replace("dp1.", "dp1.ep8.")
    assert not any("SGLang refuses" in r for r in _reasons(sc, ep, "sglang"))
    # vLLM 0.34.0 refines the block grid to the slice (quantization/fp8.py): no refusal
    assert not any("refuses" in r for r in _reasons(sc, text, "vllm"))


def test_the_search_leaves_the_refused_splits_out_for_sglang_only():
    sc = Scenario(model="minimax-m2", hardware=Hardware(gpus=["h100-sxm"]))
    moe_tp8 = [s for s in shapes(sc) if s.tp == 8 and not s.ep]
    assert moe_tp8  # plain TP 8 and attention DP 8 are searched for vLLM (the default engine)
    sg = shapes(sc.model_copy(update={"options": Options(engine="sglang")}))
    assert not [s for s in sg if s.tp == 8 and not s.ep]
    # EP 8 (alone and with attention DP) and TP 4 (1536 / 4 = 384 = 3 x 128) stay
    assert {(s.ep, s.dpa) for s in sg if s.tp == 8} == {(True, False), (True, True)}
    assert any(s.tp == 4 and not s.ep for s in sg)


def test_sm100_qwen3_moe_fp8_is_padded_and_not_refused():
    # SGLang 0.5.23 picks the flashinfer_trtllm MoE runner for Qwen3-MoE FP8 on sm100
    # (srt/arg_groups/model_overrides/qwen3_moe.py:78-86), which rounds the 192-column slice up
    # to 256 before the block check (layers/moe/fused_moe_triton/layer.py:514-522).
    m = get_model("qwen3-235b-a22b")
    assert (
        block_quantized_moe_tp_blocker(m, get_accelerator("b200"), 8, False, "fp8", "sglang")
        is None
    )
    h100 = get_accelerator("h100-sxm")
    assert block_quantized_moe_tp_blocker(m, h100, 8, False, "fp8", "sglang") is not None
    # a 16-bit deployment loads no block-quantized checkpoint
    assert block_quantized_moe_tp_blocker(m, h100, 8, False, "bf16", "sglang") is None


def test_trtllm_refuses_a_separate_draft_model_with_pipeline_parallelism():
    # TensorRT-LLM's PyExecutor raises NotImplementedError("Drafting is not supported for
    # selected executor loop. ...") when a drafter runs under the PP executor loop
    # (tensorrt_llm/_torch/pyexecutor/py_executor.py; NVIDIA/TensorRT-LLM issue 9009).
    sc = Scenario(model="qwen3-235b-a22b", hardware=Hardware(gpus=["h100-sxm"]),
                  options=Options(speculative=True, draft_model="qwen3-8b", engine="trtllm"))  # fmt: skip
    text = "h100-sxm.tp4.pp2.dp1.fp8.fp8.spec"
    (why,) = [r for r in _reasons(sc, text, "trtllm") if "draft model" in r]
    assert "nearest: TP=8, PP=1 on the same GPUs" in why
    assert not any("draft model" in r for r in _reasons(sc, text, "vllm"))
    # the search keeps speculation at PP 1 only, for TensorRT-LLM
    assert {s.pp for s in shapes(sc) if s.spec} == {1}
    vllm = sc.model_copy(update={"options": sc.options.model_copy(update={"engine": "vllm"})})
    assert {s.pp for s in shapes(vllm) if s.spec} > {1}


def test_trtllm_mtp_with_pipeline_parallelism_is_not_refused():
    # One-model MTP builds no drafter (the PyExecutor check is on self.drafter).
    sc = Scenario(model="deepseek-r1", hardware=Hardware(gpus=["h100-sxm"], nodes=2),
                  options=Options(speculative=True, engine="trtllm"))  # fmt: skip
    assert not any(
        "draft model" in r for r in _reasons(sc, "h100-sxm.tp8.pp2.dp1.fp8.fp8.spec", "trtllm")
    )
    assert any(s.spec and s.pp == 2 for s in shapes(sc))

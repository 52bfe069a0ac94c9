"""Memory model: parameter counts, weights, KV cache, budget. Each expected value names its source."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.catalog import get_accelerator, get_model, models
from advisor.physics.memory import (
    article_kv_bytes_per_sequence,
    bytes_per_weight,
    kv_bytes_per_sequence,
    kv_bytes_per_sequence_per_gpu,
    kv_bytes_per_token,
    memory_budget,
    weight_placement,
)
from advisor.physics.params import param_breakdown
from tests.test_catalog_contracts import _allowed


@pytest.mark.parametrize("model_id", sorted(models()))
def test_param_count_within_1pct_of_published(model_id):
    m = get_model(model_id)
    assert m.published_params, f"{model_id} has no published size"
    b = param_breakdown(m)
    total = b.total
    # Llama 4's headline totals include a vision encoder the text spec leaves out (model card).
    low = 0.02 if m.published_params_scope == "with_vision" else 0.01
    assert -low < total / m.published_params - 1 < 0.01, (total, m.published_params)
    if m.published_active_params:
        # gpt-oss card: the active count leaves out the input embedding (a lookup).
        active = b.active - (b.embedding if m.published_active_excludes_embedding else 0)
        active -= b.lm_head if m.published_active_excludes_lm_head else 0
        # 2%, or 1% beyond the headline's rounding ("10B active" claims 9.5-10.5B)
        published = m.published_active_params
        assert abs(active - published) <= max(0.02 * published, _allowed(published)), (
            active,
            published,
        )


def test_known_param_counts():
    # formulas.md: Llama-2-70B 68.98e9, Llama-3.1-405B 405.85e9, Mixtral 46.7e9 / 12.9e9.
    assert round(param_breakdown(get_model("llama-2-70b")).total / 1e9, 2) == 68.98
    assert round(param_breakdown(get_model("llama-3.1-405b")).total / 1e9, 2) == 405.85
    b = param_breakdown(get_model("mixtral-8x7b"))
    assert round(b.total / 1e9, 1) == 46.7 and round(b.active / 1e9, 1) == 12.9
    # DeepSeek-V3 technical report: 671B total, 37B activated.
    d = param_breakdown(get_model("deepseek-v3"))
    assert abs(d.total / 671e9 - 1) < 0.01 and abs(d.active / 37e9 - 1) < 0.03


def test_kv_per_token_examples():
    # formulas.md: Llama-2-70B fp16 = 2 x 80 x 8 x 128 x 2 = 327,680 bytes.
    assert kv_bytes_per_token(get_model("llama-2-70b"), "fp16") == 327_680
    # Llama-2-7B (MHA): 2 x 32 x 32 x 128 x 2 = 524,288 bytes.
    assert kv_bytes_per_token(get_model("llama-2-7b"), "fp16") == 524_288
    # DeepSeek-V3 MLA: 61 x (512 + 64) x 2 = 70,272 bytes (formulas.md).
    assert kv_bytes_per_token(get_model("deepseek-v3"), "bf16") == 70_272
    # fp8 halves it.
    assert kv_bytes_per_token(get_model("llama-2-70b"), "fp8") == 163_840


def test_sliding_window_caps_gemma_half_the_layers():
    m = get_model("gemma-2-27b")
    per_layer = 2 * 16 * 128 * 2  # 16 KV heads x 128 x K,V x 2 bytes
    # 8192 tokens: 23 global layers hold 8192, 23 windowed layers hold 4096 (hand calculation).
    assert kv_bytes_per_sequence(m, "bf16", 8192) == per_layer * (23 * 8192 + 23 * 4096)


def test_article_formula_vs_gqa():
    # Article: 2 x L x B x d_model x layers x bytes; 4096 tokens, 8192, 80 layers, fp16 = 10.7 GB.
    assert article_kv_bytes_per_sequence(4096, 1, 8192, 80, 2) == pytest.approx(10.737e9, rel=1e-3)
    # GQA (8 KV heads x 128 = 1024 wide) gives 1.34 GB: 8x smaller.
    assert kv_bytes_per_sequence(get_model("llama-2-70b"), "fp16", 4096) == pytest.approx(
        1.342e9, rel=1e-3
    )


def test_tp_splits_kv_heads_and_replicates_beyond():
    m = get_model("llama-2-70b")  # 8 KV heads
    one = kv_bytes_per_sequence_per_gpu(m, "fp16", 4096, 1, 1)
    assert kv_bytes_per_sequence_per_gpu(m, "fp16", 4096, 4, 1) == one / 4
    assert kv_bytes_per_sequence_per_gpu(m, "fp16", 4096, 8, 1) == one / 8
    # TP 16 > 8 KV heads: each rank still holds one head (replicated), not half a head.
    assert kv_bytes_per_sequence_per_gpu(m, "fp16", 4096, 16, 1) == one / 8


def test_int4_scale_overhead():
    # GPTQ/AWQ group 128: 0.5 + (2 + 0.5) / 128 bytes per weight.
    assert bytes_per_weight("int4", 128) == pytest.approx(0.51953125)
    assert bytes_per_weight("int4", 32) == pytest.approx(0.578125)


def test_70b_fp16_does_not_fit_one_h100_and_says_why():
    b = memory_budget(get_model("llama-2-70b"), get_accelerator("h100-sxm"), weights_dtype="fp16")
    assert not b.fits
    assert "weights need 138.0 GB" in b.reasons[0] and "77.0 GB usable" in b.reasons[0]
    assert any("TP=2" in s for s in b.suggestions)


def test_70b_tp4_sequences_fit():
    # usable 0.9 x 85.52 GB = 76.97; weights 34.49; reserve 1.74; KV/seq/GPU = 327,680/4 x 4096
    # -> floor(40.73e9 / 335.5e6) = 121 (hand calculation from the numbers above).
    b = memory_budget(get_model("llama-2-70b"), get_accelerator("h100-sxm"), tp=4)
    assert b.fits and b.max_concurrent_sequences == 121
    assert b.max_concurrent_sequences_contiguous == 121  # max length 4096 = context


def test_paged_beats_contiguous_for_short_sequences():
    b = memory_budget(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), context_tokens=1000)
    # Contiguous reserves 131,072 tokens per sequence (the model's maximum): 131x fewer.
    assert b.max_concurrent_sequences > 100 * max(b.max_concurrent_sequences_contiguous, 1)
    assert b.paged_utilisation == pytest.approx(1000 / 1008)


def test_pp_puts_embeddings_on_end_stages():
    m = get_model("llama-3.1-70b")
    w1 = weight_placement(m, "fp16", 1, 1).per_gpu_bytes
    w2 = weight_placement(m, "fp16", 1, 2).per_gpu_bytes
    assert w1 / 2 < w2 < w1 / 2 * 1.05


@settings(max_examples=60, deadline=None)
@given(
    model_id=st.sampled_from(sorted(models())),
    ctx=st.integers(1, 200_000),
    k=st.integers(2, 5),
)
def test_kv_linear_in_context_without_window(model_id, ctx, k):
    m = get_model(model_id)
    if m.num_sliding_window_layers:
        ctx = min(ctx, m.sliding_window // k)
    assert kv_bytes_per_sequence(m, "fp16", ctx * k) == pytest.approx(
        k * kv_bytes_per_sequence(m, "fp16", ctx)
    )


@settings(max_examples=60, deadline=None)
@given(model_id=st.sampled_from(sorted(models())), tp=st.sampled_from([1, 2, 4, 8]))
def test_more_tp_never_raises_weights_per_gpu(model_id, tp):
    m = get_model(model_id)
    assert (
        weight_placement(m, "fp16", tp * 2, 1).per_gpu_bytes
        <= weight_placement(m, "fp16", tp, 1).per_gpu_bytes
    )
    w = {d: weight_placement(m, d, tp, 1).per_gpu_bytes for d in ("int4", "int8", "fp16")}
    assert w["int4"] < w["int8"] < w["fp16"]


@settings(max_examples=80, deadline=None)
@given(
    model_id=st.sampled_from(sorted(models())),
    gpu_id=st.sampled_from(["h100-sxm", "l4", "mi300x", "a100-sxm-80gb"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    ctx=st.integers(1, 500_000),
    util=st.floats(0.05, 1.0),
)
def test_concurrency_never_negative(model_id, gpu_id, tp, ctx, util):
    b = memory_budget(get_model(model_id), get_accelerator(gpu_id), tp=tp, context_tokens=ctx,
                      gpu_memory_utilization=util, suggest=False)  # fmt: skip
    assert b.max_concurrent_sequences >= 0 and b.max_concurrent_sequences_contiguous >= 0
    assert b.fits == (not b.reasons)
    assert math.isfinite(b.kv_budget_bytes_per_gpu)


def test_speculative_draft_weights_and_kv_come_off_the_budget():
    """Llama-3.1-8B target with a Llama-3.2-1B draft on one H100, fp16, 4096-token sequences.

    Draft weights by hand from the Llama-3.2-1B config (hidden 2048, 16 layers, 32 q / 8 kv
    heads of 64, MLP 8192, vocab 128256, tied embeddings): embeddings 128256 x 2048 =
    262,668,288; per layer q 2048^2 + k, v 2 x 2048 x 512 + o 2048^2 = 10,485,760, MLP
    3 x 2048 x 8192 = 50,331,648, 2 norms 4096; x 16 = 973,144,064; final norm 2048:
    1,235,814,400 params x 2 B = 2,471,628,800 B (the bf16 checkpoint's 2.47 GB).
    KV per token: target 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B; draft 16 x 2 x 8 x 64
    x 2 B = 32,768 B. A 4096-token sequence: 536,870,912 + 134,217,728 = 671,088,640 B.
    """
    t, d, g = get_model("llama-3.1-8b"), get_model("llama-3.2-1b"), get_accelerator("h100-sxm")
    plain = memory_budget(t, g, context_tokens=4096)
    spec = memory_budget(t, g, context_tokens=4096, draft=d)
    assert spec.draft_weights_bytes_per_gpu == 2_471_628_800
    assert spec.draft_kv_bytes_per_sequence_per_gpu == 134_217_728
    budget = plain.kv_budget_bytes_per_gpu - 2_471_628_800
    assert spec.kv_budget_bytes_per_gpu == pytest.approx(budget)
    assert spec.max_concurrent_sequences == math.floor(budget / 671_088_640)  # 83 (109 without)
    assert spec.fits and any("draft llama-3.2-1b" in a for a in spec.assumptions)


def test_a_draft_that_does_not_fit_next_to_the_target_is_a_reason():
    """Llama-3.1-70B fp8 at TP=1 on an H200 (141 GiB = 150.8 GB x 0.9 = 135.7 GB usable): the
    target's 72.7 GB (70.6e9 params, fp8 linears, 16-bit embeddings and lm_head) leaves room; a
    second copy as the draft (2 x 72.7 = 145.3 GB) does not fit beside it."""
    t, g = get_model("llama-3.1-70b"), get_accelerator("h200-sxm")
    assert memory_budget(t, g, weights_dtype="fp8", context_tokens=4096).fits
    spec = memory_budget(t, g, weights_dtype="fp8", context_tokens=4096, draft=t)
    assert not spec.fits and "draft llama-3.1-70b" in spec.reasons[0]


# --- issue 17: new attention layouts and 4-bit float formats ---------------------------------


def test_fp4_bytes_per_weight_count_block_scales():
    # OCP MX spec v1.0: MXFP4 = 32 E2M1 elements + one E8M0 byte -> (32 x 4 + 8) / 32 = 4.25 bits.
    # NVIDIA NVFP4: 16 E2M1 elements + one E4M3 byte -> (16 x 4 + 8) / 16 = 4.5 bits.
    assert bytes_per_weight("mxfp4") * 8 == pytest.approx(4.25)
    assert bytes_per_weight("nvfp4") * 8 == pytest.approx(4.5)


def test_gpt_oss_120b_weights_mxfp4_experts_bf16_rest():
    # By hand from config.json: experts 36 x 128 x (3 x 2880^2 + 3 x 2880 biases) = 114.70e9
    # x 0.53125 B = 60.94e9; attention 36 x 26.54e6 + router 36 x (2880 x 128 + 128) = 0.968e9
    # x 2 B = 1.94e9; embedding + lm_head 2 x 201088 x 2880 = 1.158e9 x 2 B = 2.32e9.
    # Sum 65.19e9 B = 60.7 GiB; the gpt-oss model card gives the checkpoint as 60.8 GiB.
    from advisor.physics.memory import weight_bytes

    w = weight_bytes(get_model("gpt-oss-120b"), "mxfp4")
    assert w / 1e9 == pytest.approx(65.19, abs=0.02)
    assert w / 2**30 == pytest.approx(60.8, rel=0.01)
    # Dequantized to bf16 every weight is 2 bytes: 116.83e9 x 2 = 233.7e9 B (hand).
    assert weight_bytes(get_model("gpt-oss-120b"), "bf16") / 1e9 == pytest.approx(233.66, abs=0.1)


def test_gpt_oss_120b_kv_per_token_at_4k_and_128k():
    # Per layer 2 x 8 KV heads x 64 x 2 B = 2048 B. 18 full layers hold every token, 18
    # sliding layers at most 128 (config.json layer_types, sliding_window 128):
    # 4k: 2048 x (18 + 18 x 128 / 4096) = 38,016 B/token; 128k: 2048 x (18 + 18 x 128 /
    # 131072) = 36,900 B/token (hand calculation). Without the window it would be 73,728.
    g = get_model("gpt-oss-120b")
    assert kv_bytes_per_sequence(g, "bf16", 4096) / 4096 == 38_016
    assert kv_bytes_per_sequence(g, "bf16", 131072) / 131072 == 36_900
    assert kv_bytes_per_token(g, "bf16") == 73_728


def test_llama4_chunked_layers_hold_one_chunk():
    # Llama 4 Scout: 12 global layers of every token, 36 chunked layers of at most 8192 tokens;
    # 2 x 8 x 128 x 2 B = 4096 B per layer-token. At 128k: 4096 x (12 x 131072 + 36 x 8192)
    # = 7.650e9 B (hand), against 25.8e9 B if every layer kept every token.
    s = get_model("llama-4-scout")
    assert kv_bytes_per_sequence(s, "bf16", 131072) == 4096 * (12 * 131072 + 36 * 8192)


def test_gpt_oss_120b_fits_one_h100_in_mxfp4_not_in_bf16():
    # 65.2 GB of weights in 0.9 x 85.5 GB usable: fits (OpenAI: "runs on a single 80GB GPU");
    # 233.7 GB in bf16 does not.
    h100 = get_accelerator("h100-sxm")
    g = get_model("gpt-oss-120b")
    fp4 = memory_budget(g, h100, weights_dtype="mxfp4", kv_dtype="bf16", context_tokens=4096)
    assert fp4.fits and fp4.max_concurrent_sequences > 0
    assert any("experts in mxfp4" in a for a in fp4.assumptions)
    bf16 = memory_budget(g, h100, weights_dtype="bf16", kv_dtype="bf16", context_tokens=4096)
    assert not bf16.fits


def test_nvfp4_counts_a_per_tensor_scale_per_matrix():
    # Llama 3.3 70B: 80 layers x (4 attention + 3 MLP) = 560 matrices, 4 B each on top of
    # 0.5625 B per linear weight (hand calculation).
    from advisor.physics.memory import linear_weight_bytes
    from advisor.physics.params import param_breakdown

    m = get_model("llama-3.3-70b")
    e, o = linear_weight_bytes(m, "nvfp4")
    assert e == 0 and o == param_breakdown(m).linear_layers * 0.5625 + 560 * 4


def test_maverick_interleaved_moe_counts_dense_and_moe_layers():
    # Maverick config: 24 dense layers of width 16384 and 24 MoE layers (128 + 1 shared
    # experts of 8192): dense MLP = 24 x 3 x 5120 x 16384 = 6.04e9 (hand).
    b = param_breakdown(get_model("llama-4-maverick"))
    assert b.dense_mlp == 24 * 3 * 5120 * 16384
    assert b.moe_experts == 24 * 128 * 3 * 5120 * 8192


def test_gemma3_27b_kv_five_local_layers_per_global():
    # Gemma 3 report / DeepMind Gemma3_27B: 10 global layers keep every token, 52 local layers
    # at most 1024; 2 x 16 KV heads x 128 x 2 B = 8192 B per layer-token. At 128k context:
    # 8192 x (10 + 52 x 1024 / 131072) = 85,248 B/token, a sixth of 62 x 8192 = 507,904.
    m = get_model("gemma-3-27b")
    assert kv_bytes_per_sequence(m, "bf16", 131072) / 131072 == 85_248
    assert kv_bytes_per_token(m, "bf16") == 507_904


def test_windowed_layers_with_their_own_kv_heads():
    # MiMo-V2-Flash's config.json (ai-dynamo/aiconfigurator copy) gives its sliding layers 8 KV
    # heads and its full layers 4: per-kind heads. Here gpt-oss-120b with 16 KV heads in its 18
    # sliding layers (8 in the 18 full ones), by hand: per token at 128k context
    # 18 x 2048 + 18 x 4096 x 128 / 131072 = 36,936 B; on one of TP=16 ranks the 8 full-layer
    # heads are replicated (1/8 each) and the 16 windowed split (1/16): 18 x 2048 / 8 +
    # 18 x 4096 / 16 = 9,216 B per token before the window.
    from advisor.physics.memory import kv_bytes_per_token_split

    g = get_model("gpt-oss-120b").model_copy(update={"window_num_key_value_heads": 16})
    assert kv_bytes_per_sequence(g, "bf16", 131072) / 131072 == 36_936
    assert kv_bytes_per_token_split(g, "bf16", tp=16) == (4608.0, 4608.0)
    assert kv_bytes_per_sequence_per_gpu(g, "bf16", 4096, 16, 1) == 4608 * 4096 + 4608 * 128
    # A spec naming per-kind heads without windowed layers is refused with both values.
    import pydantic

    raw = get_model("llama-3.1-8b").model_dump() | {"window_num_key_value_heads": 4}
    with pytest.raises(pydantic.ValidationError, match="window_num_key_value_heads=4"):
        type(g).model_validate(raw)


def test_suggestion_keeps_attention_dp():
    """A suggestion promises what taking it gives: DeepSeek-V3 fp8 on 8 H100 does not fit (671 GB
    of fp8 weights / 8 = 84 GB per 80 GB GPU); with attention DP each sequence's latent KV sits
    on one rank instead of all eight, so int4 weights fit several times more sequences than
    without it. The suggestion used to be counted without attention DP (109 instead of 731)."""
    m, g = get_model("deepseek-v3"), get_accelerator("h100-sxm")
    common = dict(tp=8, kv_dtype="fp8", context_tokens=8192)
    b = memory_budget(m, g, weights_dtype="fp8", attention_dp=True, **common)
    assert not b.fits
    taken = memory_budget(m, g, weights_dtype="int4", attention_dp=True, **common)
    without = memory_budget(m, g, weights_dtype="int4", attention_dp=False, **common)
    assert taken.max_concurrent_sequences > 4 * without.max_concurrent_sequences
    expected = (
        f"int4 weights at TP=8: {taken.max_concurrent_sequences} sequences of 8192 tokens fit"
    )
    assert expected in b.suggestions

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
        assert abs(active / m.published_active_params - 1) < 0.02, (
            active,
            m.published_active_params,
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

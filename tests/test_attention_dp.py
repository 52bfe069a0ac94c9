"""Attention data parallelism over the TP group (SGLang --enable-dp-attention, TensorRT-LLM
enable_attention_dp): memory, step time, parsing of published rows, the estimate CLI.

Expected values are hand calculations from the models' config.json dimensions (quoted).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.perf.model.estimate import EstimateInput, estimate
from advisor.perf.model.replica import ReplicaConfig, build_replicas, max_running
from advisor.perf.model.step import decode_step, prefill, tp_communication_s
from advisor.perf.validation.measurements import cases
from advisor.physics.memory import (
    kv_bytes_per_sequence_per_gpu,
    memory_budget,
    weight_placement,
)

# DeepSeek-V3 (config.json): hidden 7168, 61 layers, 128 heads, q_lora_rank 1536,
# kv_lora_rank 512, qk_nope 128 + qk_rope 64 = 192, v_head_dim 128. Attention params per layer:
# q_a 7168 x 1536 + q_b 1536 x 128 x 192 + kv_a 7168 x (512 + 64) + kv_b 512 x 128 x (128 + 128)
# + o 128 x 128 x 7168 = 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 + 117,440,512, plus
# the latent norms inside attention (q_a_layernorm 1536 + kv_a_layernorm 512) = 187,107,328.
DSV3_ATTENTION_PARAMS = 61 * 187_107_328


def replica(model: str, gpu: str, **kw):
    return build_replicas([ReplicaConfig(model=get_model(model), gpu=get_accelerator(gpu), **kw)])


def test_attention_weights_are_whole_on_every_gpu():
    m = get_model("deepseek-v3")
    tp = weight_placement(m, "fp8", 8, 1).per_gpu_bytes
    dp = weight_placement(m, "fp8", 8, 1, attention_dp=True).per_gpu_bytes
    # fp8: 1 byte per weight; each GPU keeps the 7/8 of the attention projections TP would shard.
    assert dp - tp == pytest.approx(DSV3_ATTENTION_PARAMS * 7 / 8, rel=1e-9)


# Kimi-K2 (advisor's param_breakdown of its config.json): routed experts 1,014,686,023,680,
# attention 6,168,569,856, dense-layer MLP 396,361,728, shared experts and routers 2,807,562,240
# (fp8: 1 byte each), embedding = lm_head = 163,840 x 7,168 = 1,174,405,120 (bf16: 2 bytes),
# norms 881,664 (bf16).
K2_EXPERTS, K2_ATTN, K2_DENSE, K2_SHARED = (
    1_014_686_023_680,
    6_168_569_856,
    396_361_728,
    2_807_562_240,
)
K2_TABLE_BYTES, K2_NORM_BYTES = 1_174_405_120 * 2, 881_664 * 2


def test_what_each_engine_keeps_whole_under_attention_dp():
    m = get_model("kimi-k2")

    def per_gpu(engine: str) -> float:
        return weight_placement(m, "fp8", 16, 1, attention_dp=True, engine=engine).per_gpu_bytes

    # vLLM: --tensor-parallel-size 1 --data-parallel-size 16; only the MoE layers are sharded
    # over the 16 ranks (vllm 0.34.0 vllm/config/parallel.py:155-157); attention, dense MLP,
    # shared experts (deepseek_v2.py:364-372), embedding (:1460) and lm_head (:1918) sit on a TP
    # group of 1: 63,417,876,480 + 9,372,493,824 + 4,697,620,480 + 1,763,328 = 77,489,754,112.
    vllm = K2_EXPERTS / 16 + K2_ATTN + K2_DENSE + K2_SHARED + 2 * K2_TABLE_BYTES + K2_NORM_BYTES
    assert per_gpu("vllm") == pytest.approx(vllm, rel=1e-12)
    assert vllm == 77_489_754_112
    # SGLang 0.5.23: whole attention and input embedding (vocab_parallel_embedding.py:182-185,
    # the attention-TP group is one GPU); lm_head, dense MLP and shared experts split 16 ways
    # (deepseek_v2.py:3291-3297, :874-896, :2665): 72,284,065,792.
    split = (K2_EXPERTS + K2_DENSE + K2_SHARED + K2_TABLE_BYTES) / 16
    sglang = split + K2_ATTN + K2_TABLE_BYTES + K2_NORM_BYTES
    assert per_gpu("sglang") == pytest.approx(sglang, rel=1e-12)
    # TensorRT-LLM (unconfirmed at the pinned 1.1.0) and the generic engine: attention whole.
    generic = split + K2_TABLE_BYTES / 16 + K2_ATTN + K2_NORM_BYTES
    assert per_gpu("trtllm") == per_gpu("generic") == pytest.approx(generic, rel=1e-12)


def test_the_kimi_k2_vllm_attention_dp_16_layout_no_longer_fits_two_h100_nodes():
    # The layout the search picked for Kimi-K2 on 2 x 8 H100 with vLLM (audit helperB, defect 1):
    # its 77.49 GB of weights per GPU (test above) exceed 0.9 x 85.5 GB = 77.0 GB usable, so
    # vLLM would stop at start ("No available memory for the cache blocks"); the budget says so.
    m, g = get_model("kimi-k2"), get_accelerator("h100-sxm")
    kw = dict(tp=16, weights="fp8", kv="fp8", dp_attention=True, gpus_per_node=8)
    both = build_replicas([
        ReplicaConfig(model=m, gpu=g, engine="vllm", **kw),
        ReplicaConfig(model=m, gpu=g, engine="sglang", **kw),
    ])  # fmt: skip
    assert both.kv_budget_bytes[0] <= 0 < both.kv_budget_bytes[1]
    # the decode step reads what each GPU holds: one split, two engines, two weight figures
    # (the engine is part of the split's memo key)
    assert both.dense_weight_bytes[0] - both.dense_weight_bytes[1] == pytest.approx(
        (K2_DENSE + K2_SHARED + K2_TABLE_BYTES) * 15 / 16, rel=1e-12
    )
    b = memory_budget(m, g, tp=16, weights_dtype="fp8", kv_dtype="fp8", context_tokens=1280,
                      attention_dp=True, engine="vllm")  # fmt: skip
    assert not b.fits and "weights need 77.5 GB per GPU" in b.reasons[0]


def test_each_sequence_keeps_its_mla_latent_on_one_gpu():
    m = get_model("deepseek-v3")
    # bf16 latent + rope key: 61 layers x (512 + 64) x 2 bytes x 2048 tokens = 143,917,056 bytes,
    # on every TP rank under TP (one latent for all heads), on one rank under attention DP.
    whole = 61 * 576 * 2 * 2048
    assert kv_bytes_per_sequence_per_gpu(m, "bf16", 2048, 8, 1) == whole
    dp = kv_bytes_per_sequence_per_gpu(m, "bf16", 2048, 8, 1, attention_dp=True)
    assert dp == whole / 8


def test_gqa_heads_replicated_under_tp_are_not_under_attention_dp():
    m = get_model("qwen3-235b-a22b")
    # Qwen3-235B-A22B: 4 KV heads x 128 x 2 (K, V) x 2 bytes x 94 layers = 192,512 bytes/token.
    # TP=8 > 4 KV heads: each head lives on 2 ranks, a rank holds 1/4 of it; DP holds 1/8.
    per_token = 4 * 128 * 2 * 2 * 94
    assert kv_bytes_per_sequence_per_gpu(m, "bf16", 1, 8, 1) == per_token / 4
    assert kv_bytes_per_sequence_per_gpu(m, "bf16", 1, 8, 1, attention_dp=True) == per_token / 8


def test_mla_capacity_grows_tp_fold_and_budget_names_the_layout():
    m, g = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    tp = memory_budget(m, g, tp=8, weights_dtype="fp8", kv_dtype="bf16", context_tokens=4096)
    dp = memory_budget(
        m, g, tp=8, weights_dtype="fp8", kv_dtype="bf16", context_tokens=4096, attention_dp=True
    )
    # Less KV budget per GPU (the whole attention weights), but each GPU holds 1/8 of the
    # sequences instead of all of them: about 8 x (budget_dp / budget_tp) more sequences.
    ratio = dp.kv_budget_bytes_per_gpu / tp.kv_budget_bytes_per_gpu
    assert dp.max_concurrent_sequences == pytest.approx(
        8 * ratio * tp.max_concurrent_sequences, rel=0.01
    )
    assert any("attention data parallel" in a for a in dp.assumptions)


def test_one_sequence_does_its_attention_on_one_gpu():
    # Prefill of one 4096-token prompt: under attention DP the prompt's attention projections
    # and causal attention run on one of the 8 GPUs (the others wait at the MoE layer), so the
    # busiest GPU does 8 x the attention FLOPs TP spreads. The expert FLOPs are unchanged.
    tp = replica("deepseek-v3", "h200-sxm", tp=8, weights="fp8", kv="bf16")
    dp = replica("deepseek-v3", "h200-sxm", tp=8, weights="fp8", kv="bf16", dp_attention=True)
    t = np.array([4096.0])
    extra = dp.attn_active_params[0] * 2 * 4096 * 7  # projections: 7 more shares on one GPU
    # 4 x layers x width / TP x T x T/2, width = heads x (d_qk + d_v) / 2 (MLA prefill: 192, 128)
    attn_tp = 4 * 61 * (128 * (192 + 128) / 2 / 8) * 4096 * 2048
    flop_gap = prefill(dp, t).flops_per_gpu[0] - prefill(tp, t).flops_per_gpu[0]
    assert flop_gap == pytest.approx(extra + 7 * attn_tp, rel=0.02)


def test_collectives_halve_without_the_attention_all_reduce():
    # TP: an all-reduce after attention and one after the MLP, per layer. Attention DP: an
    # all-gather before the MLP and a reduce-scatter after it, which together move what one ring
    # all-reduce moves (Patarasuk and Yuan 2009: ring all-reduce = reduce-scatter + all-gather).
    tp = replica("qwen3-235b-a22b", "h100-sxm", tp=8, weights="fp8")
    dp = replica("qwen3-235b-a22b", "h100-sxm", tp=8, weights="fp8", dp_attention=True)
    tokens = np.array([256.0])
    assert tp_communication_s(dp, tokens)[0] == pytest.approx(tp_communication_s(tp, tokens)[0] / 2)


def test_large_batches_decode_faster_small_ones_slower():
    # Batch 1: every GPU still reads the whole attention weights (TP read 1/8), so DP is slower.
    # Batch 4096 at 4k context: MLA's latent is no longer read by every GPU for every sequence
    # (each reads its 1/8), which outweighs the extra weight reads.
    tp = replica("deepseek-v3", "h200-sxm", tp=8, weights="fp8", kv="bf16")
    dp = replica("deepseek-v3", "h200-sxm", tp=8, weights="fp8", kv="bf16", dp_attention=True)
    assert decode_step(dp, 1.0, 4096.0).memory_raw[0] > decode_step(tp, 1.0, 4096.0).memory_raw[0]
    assert decode_step(dp, 4096.0, 4096.0).total[0] < decode_step(tp, 4096.0, 4096.0).total[0]
    assert max_running(dp, np.array([8192.0]))[0] > 4 * max_running(tp, np.array([8192.0]))[0]


def test_dense_models_and_one_gpu_ignore_it():
    assert not replica("llama-3.1-70b", "h100-sxm", tp=4, dp_attention=True).dp_attn[0]
    assert not replica("mixtral-8x7b", "h100-sxm", tp=1, dp_attention=True).dp_attn[0]
    r = estimate(
        get_model("llama-3.1-8b"),
        get_accelerator("h100-sxm"),
        EstimateInput(tp=2, dp_attention=True),
    )
    assert r["attention_data_parallel"] is False and any("dense" in n for n in r["notes"])


def test_published_dep_rows_parse_as_attention_dp_with_ep():
    items, _ = cases()
    by_id = {c.id: c for c in items}
    # TensorRT-LLM developer-guide perf-overview: "B200 DEP4 (FP4)" and "H100 DEP8 (FP8)" are
    # --tp N --ep N with enable_attention_dp (data/measurements-engine-perf-pages.csv E0484, E0562).
    for rid, tp in (("E0484", 4), ("E0562", 8)):
        c = by_id[rid]
        assert (c.config.tp, c.config.ep, c.config.dp_attention) == (tp, True, True)
    # A dense model's rows keep plain TP whatever the notes say (the flag needs experts).
    assert not any(c.config.dp_attention and not c.config.model.is_moe for c in items)


def test_cli_names_the_layout():
    cmd = [sys.executable, "-m", "advisor", "estimate", "--model", "deepseek-r1", "--gpu",
           "h200-sxm", "--tp", "8", "--weights", "fp8", "--kv", "fp8", "--isl", "1000",
           "--osl", "1000", "--concurrency", "64", "--dp-attention"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "(TP=8 PP=1 DP=1, attention DP)" in out.splitlines()[0]
    js = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=True).stdout
    d = json.loads(js)
    assert d["attention_data_parallel"] is True
    # estimate's default engine is vLLM, whose attention DP is N ranks of TP 1: only the routed
    # experts split 8 ways (653,908,770,816 fp8 bytes / 8 = 81,738,596,352), the rest whole:
    # attention, dense MLPs, shared experts and routers 15,263,393,792 fp8 bytes, embedding and
    # lm_head 2 x 926,679,040 x 2 bytes = 3,706,716,160, norms 881,664 x 2 = 1,763,328
    # (param_breakdown of DeepSeek-V3/R1): 100,710,469,632 bytes.
    assert d["memory"]["weights_gb_per_gpu"] == pytest.approx(100.710469632, abs=1e-6)


def test_a_piggy_backed_prompt_is_prefilled_on_its_own_rank():
    # Offline/chunked serving adds prompt tokens to a decode step. Under attention DP the prompt
    # belongs to one rank, which runs its attention alone while the other 7 wait at the MoE
    # layer: 7 more even shares of the prompt's attention projections and causal attention
    # (1024 tokens, 512 keys each). The 256 running sequences split evenly (32 per rank).
    tp = replica("deepseek-v3", "h200-sxm", tp=8, weights="fp8", kv="bf16")
    dp = replica("deepseek-v3", "h200-sxm", tp=8, weights="fp8", kv="bf16", dp_attention=True)

    def flops(r):
        return decode_step(r, 256.0, 2048.0, prefill_tokens=1024.0, prompt_tokens=1024.0)

    proj = 2 * dp.attn_active_params[0] * 1024
    attn = 4 * 61 * (128 * (192 + 128) / 2 / 8) * 1024 * 512
    gap = flops(dp).flops_per_gpu[0] - flops(tp).flops_per_gpu[0]
    assert gap == pytest.approx(7 * (proj + attn), rel=0.02)


def test_memory_cli_takes_the_layout_and_refuses_it_for_dense_models():
    base = [sys.executable, "-m", "advisor", "memory", "--model", "deepseek-v3", "--gpu",
            "h200-sxm", "--tp", "8", "--weights", "fp8", "--kv", "bf16", "--context", "1280"]  # fmt: skip
    tp = json.loads(subprocess.run([*base, "--json"], capture_output=True, text=True).stdout)
    dp = json.loads(
        subprocess.run([*base, "--dp-attention", "--json"], capture_output=True, text=True).stdout
    )
    m, g = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    kw = dict(tp=8, weights_dtype="fp8", kv_dtype="bf16", context_tokens=1280)
    assert tp["max_concurrent_sequences"] == memory_budget(m, g, **kw).max_concurrent_sequences
    # the CLI counts the default engine's (vLLM's) attention-DP placement
    want = memory_budget(m, g, attention_dp=True, engine="vllm", **kw).max_concurrent_sequences
    assert dp["max_concurrent_sequences"] == want and dp["attention_data_parallel"] is True
    dense = subprocess.run(
        [sys.executable, "-m", "advisor", "memory", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
         "--tp", "2", "--dp-attention"], capture_output=True, text=True,
    )  # fmt: skip
    assert dense.returncode == 2 and "--dp-attention: the model is dense" in dense.stderr


def test_an_attention_dp_estimate_takes_its_range_from_that_layouts_held_out_rows():
    # data/crossval.yaml marks the 74 held-out rows of attention-DP deployments. TensorRT-LLM's
    # DEP runs on Hopper are 34 throughput rows but from two pages (its perf-overview, old and
    # new paths), fewer than the 3 sources a level needs (intervals.MIN_SOURCES): the range comes
    # from every held-out attention-DP row (all of MoE models, from 3 sources).
    inp = EstimateInput(tp=8, weights="fp8", kv="fp8", isl=1000, osl=1000, concurrency="max",
                        engine="trtllm", ep=True, dp_attention=True)  # fmt: skip
    r = estimate(get_model("deepseek-r1"), get_accelerator("h200-sxm"), inp)
    basis = r["intervals"]["basis"]
    assert "attention-DP deployments: MoE models: all engines and accelerators" in basis
    plain = estimate(get_model("deepseek-r1"), get_accelerator("h200-sxm"),
                     inp.model_copy(update={"dp_attention": False}))  # fmt: skip
    assert "attention-DP" not in plain["intervals"]["basis"]

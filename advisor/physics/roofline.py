"""Roofline arithmetic: FLOPs and bytes of prefill and decode, and the time they take.

Every function accepts numpy arrays as well as scalars (the search evaluates many deployments
at once). Units: FLOP, bytes, seconds, FLOP/s, bytes/s.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from advisor.catalog.specs import ModelSpec


def attention_width(model: ModelSpec, phase: Literal["prefill", "decode"]) -> float:
    """Attention width w of one layer over all query heads: 4 x w FLOPs per (query, key) pair.

    w = n_q x (d_qk + d_v) / 2: Q.K^T costs 2 x d_qk and P.V 2 x d_v FLOPs per pair and head.
    Standard attention: d_qk = d_v = head_dim, the same in both phases. MLA (DeepSeek-V2/V3) runs
    two paths: prefill up-projects the cached latent into ordinary MHA heads, d_qk = qk_nope +
    qk_rope, d_v = v_head_dim (compute-friendly); decode absorbs W_UK and W_UV into the query and
    output and attends MQA-style over the latent itself, d_qk = kv_lora + qk_rope, d_v = kv_lora
    (data-movement friendly). Source: vLLM vllm/v1/attention/backends/mla/common.py (module
    docstring, MLACommonImpl ``_forward_prefill`` / ``_forward_decode``); DeepSeek-V2 paper
    (arXiv 2405.04434) sec. 2.1; DeepSeek-V3 config.json (128 heads, kv_lora_rank 512,
    qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128).

    >>> from advisor.catalog import get_model
    >>> attention_width(get_model("deepseek-v3"), "prefill")  # 128 x (128 + 64 + 128) / 2
    20480.0
    >>> attention_width(get_model("deepseek-v3"), "decode")  # 128 x (512 + 64 + 512) / 2
    69632.0
    >>> attention_width(get_model("llama-2-7b"), "prefill")  # 32 heads x 128
    4096.0
    """
    nq = model.num_attention_heads
    if not model.is_mla:
        return float(nq * model.head_dim)
    lora, nope = model.kv_lora_rank, model.qk_nope_head_dim
    rope, v = model.qk_rope_head_dim, model.v_head_dim
    if phase == "prefill":
        return nq * (nope + rope + v) / 2.0  # type: ignore[operator]
    return nq * (lora + rope + lora) / 2.0  # type: ignore[operator]


def decode_flops_per_token(
    linear_params: float, layers: float, context_tokens: float, attn_width: float
) -> float:
    """FLOPs to decode one token: 2 x params (matmuls) + 4 x layers x context x n_q x d_head.

    The attention term is Q.K^T and P.V over the cached context (2 FLOPs per multiply-add each);
    ``attn_width`` is ``attention_width(model, "decode")``.
    Source: formulas.md "Roofline"; Kaplan et al. 2020 (C_forward ~ 2N + 2 n_layer n_ctx d_attn).

    >>> decode_flops_per_token(6.5e9, 32, 4096, 4096) / 1e9  # Llama-2-7B at 4k context
    15.147483648
    """
    return 2.0 * linear_params + 4.0 * layers * context_tokens * attn_width


def prefill_flops(
    linear_params: float, layers: float, prompt_tokens: float, attn_width: float
) -> float:
    """FLOPs to prefill a prompt of T tokens: 2 x params x T + 2 x layers x n_q x d_head x T^2.

    The causal mask halves the 4 x T^2 attention work; ``attn_width`` is
    ``attention_width(model, "prefill")``. Source: formulas.md "Roofline".

    >>> prefill_flops(6.5e9, 32, 2048, 4096) / 1e12  # 2 x 6.5e9 x 2048 + 2 x 32 x 4096 x 2048^2
    27.723511627776
    """
    return 2.0 * linear_params * prompt_tokens + 2.0 * layers * attn_width * prompt_tokens**2


def roofline_time_s(
    flops: float, bytes_moved: float, peak_flops_per_s: float, bandwidth_bytes_per_s: float
) -> float:
    """Time bounded by compute or memory: max(FLOPs / peak, bytes / bandwidth).

    Pass achievable (not datasheet) peak and bandwidth. Source: Williams, Waterman and Patterson,
    "Roofline", CACM 2009.

    >>> float(roofline_time_s(2e12, 1.0e9, 1e15, 2e12))  # compute 2 ms > memory 0.5 ms
    0.002
    """
    return np.maximum(flops / peak_flops_per_s, bytes_moved / bandwidth_bytes_per_s)


def ridge_point_flops_per_byte(peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """Arithmetic intensity where a kernel turns compute-bound: peak / bandwidth.

    >>> round(ridge_point_flops_per_byte(989e12, 3.35e12))  # H100 bf16 dense (formulas.md: ~295)
    295
    """
    return peak_flops_per_s / bandwidth_bytes_per_s


def expected_experts_touched(
    num_experts: float, top_k: float, tokens: float, draw_exponent: float = 1.0
) -> float:
    """Expected number of distinct experts a batch of tokens routes to:

        E x (1 - (1 - k/E)^(n^g))

    With g = 1 each of the n tokens is an independent, uniform draw of k experts (a
    load-balanced router's target: occupancy of E bins by n draws of k, balls into bins). Real
    routers concentrate: tokens of one batch share popular experts more often than independent
    draws would, so a batch of n tokens touches as many experts as n^g < n independent ones
    (``draw_exponent`` g, fitted: ``profiles.routing_draw_exponent``). One token still touches
    exactly k and a large batch all E, which is why MoE decode at batch 1 reads far fewer bytes
    than the model's size. Source: balls into bins for g = 1; Mixtral paper (Jiang et al. 2024)
    for top-2 of 8; skewed expert popularity in decode: Huang et al. 2023, "Towards MoE
    Deployment: Mitigating Inefficiencies in Mixture-of-Expert (MoE) Inference"
    (arXiv:2303.06182).

    >>> float(expected_experts_touched(8, 2, 1))
    2.0
    >>> round(float(expected_experts_touched(8, 2, 16)), 2)  # Mixtral at batch 16: nearly all 8
    7.92
    >>> # Qwen3-235B (8 of 128) at 16 tokens: 128 x (1 - (120/128)^16) = 82.4 independent; as
    >>> # 16^0.8 = 9.19 draws: 128 x (1 - (120/128)^9.19) = 57.3; one token: 8 either way
    >>> [round(float(expected_experts_touched(128, 8, n, g)), 1) for n, g in
    ...  ((16, 1.0), (16, 0.8), (1, 0.8))]
    [82.4, 57.3, 8.0]
    """
    n = np.maximum(np.asarray(tokens, dtype=float), 0.0)
    draws = np.where(n > 1.0, np.power(n, draw_exponent), n)
    frac = 1.0 - np.power(1.0 - top_k / num_experts, draws)
    return num_experts * frac


def expected_max_load(mean: float, variance: float, n_bins: float, cap: float) -> float:
    """Expected load of the busiest of n bins: min(cap, mean + sqrt(2 ln n) x sd).

    The leading term of the expected maximum of n independent normal variables (extreme-value
    theory; e.g. David and Nagaraja, "Order Statistics", 2003, sec. 10.5). Used for expert
    parallelism: with tokens routed to experts spread over n GPUs, the step waits for the GPU
    with the most assignments (or the most distinct experts to read). n = 1 gives the mean.

    >>> # 128 assignments over 8 GPUs: mean 16, variance 128 x 1/8 x 7/8 = 14;
    >>> # 16 + sqrt(2 ln 8 x 14) = 16 + 7.63
    >>> round(float(expected_max_load(16.0, 14.0, 8, 128)), 2)
    23.63
    """
    spread = np.sqrt(2.0 * np.log(np.maximum(n_bins, 1.0)) * np.maximum(variance, 0.0))
    return np.minimum(cap, mean + spread)

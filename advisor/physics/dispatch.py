"""Eager forward passes: the host's kernel dispatch sets a floor under a prefill's time.

A decode step replays a CUDA graph, but a prefill (an "extend" batch) runs eagerly in SGLang and
in TensorRT-LLM's PyTorch backend, and outside the captured sizes in vLLM: the Python forward
issues each layer's kernels one by one. The GPU runs them asynchronously, so a pass takes the
longer of the GPU's work and the host's dispatch of every kernel, not their sum:

    T_pass = max(T_gpu, N_kernels x t_dispatch)

A short prompt on a large mixture-of-experts model is dispatch-bound: its GEMMs finish before the
host has issued the next layer's kernels, and its first token takes about as long at 600 as at
4,000 tokens (sgl-cookbook DeepSeek-R1 on 8 x B200: 126-141 ms at ~600 tokens, 155 ms at ~4,200).
Source: CUDA C++ Programming Guide, "Asynchronous Concurrent Execution" (kernel launches return
to the host before the kernel completes); PyTorch docs, "CUDA semantics: asynchronous execution".
"""

from __future__ import annotations

import numpy as np

from advisor.catalog.specs import ModelSpec

#: Kernels of one eager layer, per block, as the engines' model code issues them (SGLang
#: python/sglang/srt/models: llama.py, qwen3_moe.py, deepseek_v2.py, gpt_oss.py; vLLM's are alike):
#: the two fused residual-add + RMSNorms; GQA/MHA attention (fused QKV GEMM, rotary embedding,
#: KV-cache write, attention, output GEMM); per-head q/k RMSNorm (Qwen3, Gemma 3); MLA prefill
#: (q_a GEMM and norm, q_b GEMM, kv_a GEMM and norm, kv_b GEMM, rotary, the copies that build
#: the uncompressed keys, KV-cache write, attention, output GEMM); a TP all-reduce after the
#: attention and after the MLP; a gated MLP (gate-up GEMM, activation, down GEMM); a routed MoE
#: (router GEMM, top-k, token sort, two grouped GEMMs, activation, weighted sum); a shared expert
#: (its gated MLP and the add).
KERNELS = {
    "norms": 2,
    "gqa": 5,
    "qk_norm": 2,
    "mla": 13,
    "mla_no_q_lora": 11,
    "allreduce": 2,
    "mlp": 3,
    "moe": 7,
    "shared_expert": 4,
}
#: Quantized GEMMs of each block (weights and activations in fp8/fp4): each is preceded by a
#: kernel that quantizes its input activations on the fly (vLLM/SGLang Fp8LinearMethod:
#: per-token(-group) quantization before the W8A8 GEMM; NVFP4/MXFP8 the same). The router
#: stays 16-bit.
GEMMS = {"gqa": 2, "mla": 5, "mla_no_q_lora": 4, "mlp": 2, "moe": 2, "shared_expert": 2}


def kernels_per_layer(
    model: ModelSpec, tp: int, quantized_experts: bool = False, quantized_dense: bool = False
) -> float:
    """Mean kernels one eager layer of ``model`` issues at tensor parallelism ``tp``.

        N = norms + attention + all-reduces (TP > 1) + (dense MLP or routed MoE + shared
            experts) + one activation-quantization kernel per quantized GEMM,

    averaged over dense and MoE layers. ``quantized_experts`` / ``quantized_dense``: the routed
    experts' / the other layers' GEMMs take quantized activations (fp8 or fp4 weights on tensor
    cores that multiply them; weight-only formats dequantize the weights instead).
    Source: the counts of ``KERNELS`` and ``GEMMS`` (engines' model code).

    >>> from advisor.catalog import get_model
    >>> kernels_per_layer(get_model("llama-3.1-70b"), 4)  # 2 + 5 + 2 + 3
    12.0
    >>> round(kernels_per_layer(get_model("deepseek-v3"), 8), 2)  # (3 x 20 + 58 x 28) / 61
    27.61
    >>> # fp8: + 5 (MLA) + 2 (dense MLP) or 2 + 2 (experts, shared expert): (3 x 27 + 58 x 37) / 61
    >>> round(kernels_per_layer(get_model("deepseek-v3"), 8, True, True), 2)
    36.51
    """
    k, g = KERNELS, GEMMS
    mla = "mla" if model.q_lora_rank else "mla_no_q_lora"
    attn_kind = mla if model.is_mla else "gqa"
    attn = k[attn_kind] + (k["qk_norm"] if model.qk_norm and not model.is_mla else 0)
    shared = bool(model.num_shared_experts)
    q_dense, q_exp = float(quantized_dense), float(quantized_experts)
    base = k["norms"] + attn + (k["allreduce"] if tp > 1 else 0) + q_dense * g[attn_kind]
    dense_layer = k["mlp"] + q_dense * g["mlp"]
    moe_layer = k["moe"] + q_exp * g["moe"]
    if shared:
        moe_layer += k["shared_expert"] + q_dense * g["shared_expert"]
    layers = model.num_hidden_layers
    moe_layers = model.num_moe_layers
    return base + (moe_layers * moe_layer + (layers - moe_layers) * dense_layer) / layers


def eager_pass_s(gpu_s: np.ndarray, kernels: np.ndarray, dispatch_s: np.ndarray) -> np.ndarray:
    """Time of an eager pass: the GPU's work or the host's dispatch, whichever is longer.

        T = max(T_gpu, N_kernels x t_dispatch)

    Source: asynchronous kernel launches (CUDA C++ Programming Guide, "Asynchronous Concurrent
    Execution").

    >>> float(eager_pass_s(np.array(0.030), np.array(1700.0), np.array(50e-6))[()])  # host-bound
    0.085
    >>> float(eager_pass_s(np.array(0.200), np.array(1700.0), np.array(50e-6))[()])  # GPU-bound
    0.2
    """
    return np.maximum(gpu_s, kernels * dispatch_s)

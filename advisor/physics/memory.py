"""Memory per GPU: weights, KV cache, activation reserve, and how many sequences fit.

Units: bytes throughout (GB = 1e9 and GiB = 2^30 appear only in messages, labelled).
Sources: formulas.md (KV cache, parameters); Kwon et al. 2023, "Efficient Memory Management for
Large Language Model Serving with PagedAttention" (SOSP), for paged allocation; vLLM's
``gpu_memory_utilization`` (default 0.90) for the usable fraction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.catalog.specs import Accelerator, ModelSpec
from advisor.physics.params import ParamBreakdown, active_params_as_published, param_breakdown

#: Bytes per element of each storage dtype (before any quantization-scale overhead).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "mxfp4": 0.5,
    "nvfp4": 0.5,
}
#: OCP Microscaling (MX) Formats Specification v1.0 (2023), MXFP4: blocks of 32 FP4 (E2M1)
#: elements sharing one 8-bit E8M0 scale.
MXFP4_BLOCK_SIZE = 32
#: NVIDIA NVFP4 (Blackwell; NVIDIA Transformer Engine / TensorRT Model Optimizer docs, "NVFP4"):
#: blocks of 16 FP4 (E2M1) elements sharing one FP8 E4M3 scale, plus one FP32 scale per tensor.
NVFP4_BLOCK_SIZE = 16
NVFP4_TENSOR_SCALE_BYTES = 4.0

#: Default vLLM ``gpu_memory_utilization``. Source: vLLM EngineArgs docs (default 0.9).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.90
#: Default group size of grouped int4 (GPTQ/AWQ checkpoints use 128).
DEFAULT_INT4_GROUP_SIZE = 128
#: vLLM V1 default ``max_num_batched_tokens`` with chunked prefill (8192), used to size the
#: activation reserve. Source: vLLM SchedulerConfig defaults.
DEFAULT_MAX_BATCHED_TOKENS = 8192
#: vLLM default ``max_num_seqs`` (256): logits are materialised for up to this many sequences.
DEFAULT_MAX_NUM_SEQS = 256
#: Memory the runtime holds outside PyTorch tensors: CUDA/HIP context, NCCL buffers, cuBLAS
#: workspace, CUDA graphs. vLLM's memory profiler reports "non-torch memory" of roughly 0.5-1.5
#: GiB on H100 and charges it against the budget; 1 GiB is the assumed middle.
DEFAULT_RUNTIME_OVERHEAD_BYTES = 1 * 2**30
#: Block sizes vLLM's paged KV cache supports for CUDA (16 default, 32; 64 on some backends).
PAGED_BLOCK_SIZES = (16, 32, 64)


def bytes_per_weight(dtype: str, group_size: int = DEFAULT_INT4_GROUP_SIZE) -> float:
    """Stored bytes per linear-layer weight, including quantization metadata.

    int4 (GPTQ/AWQ layout): 0.5 byte per weight + one fp16 scale and one packed 4-bit zero point
    per group: 0.5 + (2 + 0.5) / group_size. fp8/int8 use one scale per output channel, under
    0.1% of the weights, so 1 byte. Source: AutoGPTQ/AutoAWQ checkpoint formats (qweight, qzeros
    packed in int32, fp16 scales per group).
    MXFP4: 0.5 + 1 / 32 (one E8M0 byte per 32 elements; OCP MX spec v1.0). NVFP4: 0.5 + 1 / 16
    (one E4M3 byte per 16 elements; NVIDIA NVFP4 docs); its per-tensor FP32 scale is counted
    per matrix by ``weight_bytes``.

    >>> bytes_per_weight("int4")  # 0.5 + 2.5/128
    0.51953125
    >>> bytes_per_weight("fp16"), bytes_per_weight("fp8")
    (2.0, 1.0)
    >>> bytes_per_weight("mxfp4"), bytes_per_weight("nvfp4")  # 4.25 and 4.5 bits per weight
    (0.53125, 0.5625)
    """
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"weights dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    if dtype == "mxfp4":
        return 0.5 + 1.0 / MXFP4_BLOCK_SIZE
    if dtype == "nvfp4":
        return 0.5 + 1.0 / NVFP4_BLOCK_SIZE
    if dtype == "int4":
        if not 8 <= group_size <= 8192:
            raise ValueError(f"int4 group size {group_size}; allowed: 8..8192")
        return 0.5 + 2.5 / group_size
    return DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class WeightPlacement:
    """Weight bytes on the busiest GPU, and what the split assumed."""

    total_bytes: float  # whole model, all GPUs of one replica
    per_gpu_bytes: float  # the most loaded GPU (first or last pipeline stage)
    layers_per_stage: int
    note: str


def linear_dtypes(model: ModelSpec, dtype: str) -> tuple[str, str]:
    """(routed experts' dtype, other linear layers' dtype) of a deployment at weights ``dtype``.

    A checkpoint that ships its routed experts in a 4-bit format and everything else in bf16
    (gpt-oss: MXFP4 experts; quantization_config keeps attention, router, embeddings and lm_head
    unconverted) keeps that split when served in the experts' format; vLLM loads it as is. Any
    other choice applies to every linear layer.

    >>> from advisor.catalog import get_model
    >>> linear_dtypes(get_model("gpt-oss-120b"), "mxfp4"), linear_dtypes(get_model("gpt-oss-120b"), "fp8")
    (('mxfp4', 'bf16'), ('fp8', 'fp8'))
    """
    if model.expert_weights_dtype is not None and dtype == model.expert_weights_dtype:
        return dtype, "bf16"
    return dtype, dtype


def linear_matrices(model: ModelSpec) -> int:
    """Weight matrices inside the layers (attention projections, MLPs, experts; not routers).

    Attention: Q, K, V, O (MLA: q_a, q_b, kv_a, kv_b, o; q_b alone without q_lora_rank);
    gated MLP 3, plain 2, per dense layer, per routed and per shared expert. Used to count the
    per-tensor scales of NVFP4.

    >>> from advisor.catalog import get_model
    >>> linear_matrices(get_model("llama-2-70b"))  # 80 x (4 + 3)
    560
    """
    m = model
    attn = (5 if m.q_lora_rank else 4) if m.is_mla else 4
    mlp = 3 if m.mlp_kind == "gated" else 2
    moe = m.num_moe_layers
    per_moe = mlp * ((m.num_experts or 0) + m.num_shared_experts)
    return m.num_hidden_layers * attn + (m.num_hidden_layers - moe) * mlp + moe * per_moe


def linear_weight_bytes(
    model: ModelSpec,
    dtype: str,
    group_size: int = DEFAULT_INT4_GROUP_SIZE,
    breakdown: ParamBreakdown | None = None,
) -> tuple[float, float]:
    """(routed experts' bytes, other linear layers' bytes), whole model, with scales.

    = experts x bytes_per_weight(expert dtype), (linear - experts) x bytes_per_weight(other
    dtype), plus 4 bytes per matrix for NVFP4's per-tensor FP32 scale. Source: as
    ``bytes_per_weight`` and ``linear_dtypes``.

    >>> from advisor.catalog import get_model
    >>> e, o = linear_weight_bytes(get_model("gpt-oss-120b"), "mxfp4")
    >>> round(e / 1e9, 2), round(o / 1e9, 2)  # 114.70e9 x 0.53125; 0.968e9 x 2 (bf16)
    (60.94, 1.94)
    """
    b = breakdown or param_breakdown(model)
    e_dtype, o_dtype = linear_dtypes(model, dtype)
    experts = b.moe_experts * bytes_per_weight(e_dtype, group_size)
    other = (b.linear_layers - b.moe_experts) * bytes_per_weight(o_dtype, group_size)
    if dtype == "nvfp4":
        n_exp = (
            model.num_moe_layers
            * (model.num_experts or 0)
            * (3 if model.mlp_kind == "gated" else 2)
        )
        experts += NVFP4_TENSOR_SCALE_BYTES * n_exp
        other += NVFP4_TENSOR_SCALE_BYTES * (linear_matrices(model) - n_exp)
    return experts, other


def weight_bytes(
    model: ModelSpec,
    dtype: str,
    group_size: int = DEFAULT_INT4_GROUP_SIZE,
    breakdown: ParamBreakdown | None = None,
) -> float:
    """Weight bytes of the whole model: quantized linear layers + 16-bit embeddings and norms.

    Weight quantization applies to the matmul weights inside the layers; embeddings, lm_head and
    norms stay in 16-bit (fp32 when the model runs in fp32), as GPTQ/AWQ/fp8 checkpoints keep them.
    A model whose checkpoint stores only its experts in ``dtype`` keeps the rest in bf16
    (``linear_dtypes``).

    >>> from advisor.catalog import get_model
    >>> round(weight_bytes(get_model("llama-2-70b"), "fp16") / 1e9, 1)  # 68.98e9 params x 2 bytes
    138.0
    >>> # gpt-oss model card: checkpoint 60.8 GiB (MXFP4 experts, the rest bf16)
    >>> round(weight_bytes(get_model("gpt-oss-120b"), "mxfp4") / 2**30, 1)
    60.7
    """
    b = breakdown or param_breakdown(model)
    other_bytes = 4.0 if dtype == "fp32" else 2.0
    experts, other = linear_weight_bytes(model, dtype, group_size, b)
    return experts + other + other_bytes * (b.embedding + b.lm_head + b.norms)


def weight_placement(
    model: ModelSpec,
    dtype: str,
    tp: int,
    pp: int,
    group_size: int = DEFAULT_INT4_GROUP_SIZE,
    breakdown: ParamBreakdown | None = None,
    attention_dp: bool = False,
    engine: str = "generic",
) -> WeightPlacement:
    """Weight bytes on the most loaded GPU under tensor (TP) and pipeline (PP) parallelism.

    Linear layers and the vocabulary-parallel embedding and lm_head are split TP ways
    (Megatron-LM; vLLM's VocabParallelEmbedding); norms are replicated. Pipeline stages hold
    ceil(layers / PP) layers; the embedding sits on the first stage and the lm_head on the last,
    so the busiest stage is the larger of the two. With ``attention_dp`` (attention data
    parallel over the TP group) every GPU also holds whole what ``engine`` keeps whole there
    (``attention_dp_extra_bytes``) on top of the 1/TP share.

    >>> from advisor.catalog import get_model
    >>> w = weight_placement(get_model("llama-2-70b"), "fp16", tp=4, pp=1)
    >>> round(w.per_gpu_bytes / 1e9, 2)  # 137.95 GB / 4
    34.49

    ``breakdown`` is ``param_breakdown(model)`` when the caller already has it.
    """
    b = breakdown or param_breakdown(model)
    other = 4.0 if dtype == "fp32" else 2.0
    layers = model.num_hidden_layers
    per_layer_linear = sum(linear_weight_bytes(model, dtype, group_size, b)) / layers
    per_layer_norm = (b.norms - model.hidden_size) / layers * other
    layers_per_stage = math.ceil(layers / pp)
    stage_layers = layers_per_stage * (per_layer_linear / tp + per_layer_norm)
    emb = b.embedding * other / tp
    head = (b.lm_head * other / tp) if b.lm_head else (emb if pp > 1 else 0.0)
    if attention_dp:
        extra = attention_dp_extra_bytes(model, dtype, tp, engine, group_size, b)
        stage_layers += layers_per_stage * extra.layers_bytes / layers
        # a tied lm_head is the embedding's table: whole with it (duplicated on a last stage)
        extra_head = (
            extra.lm_head_bytes if b.lm_head else (extra.embedding_bytes if pp > 1 else 0.0)
        )
        emb, head = emb + extra.embedding_bytes, head + extra_head
    if pp == 1:
        per_gpu = stage_layers + emb + head + model.hidden_size * other
        note = "embedding and lm_head split across TP ranks (vocab-parallel)"
    else:
        first = stage_layers + emb
        last = stage_layers + head + model.hidden_size * other
        per_gpu = max(first, last)
        note = (
            "embedding on the first pipeline stage, lm_head on the last (a tied embedding is "
            "duplicated there); each split across TP ranks"
        )
    if attention_dp:
        note += f"; {extra.whole} whole on every GPU (attention data parallel, {engine})"
    return WeightPlacement(
        total_bytes=weight_bytes(model, dtype, group_size, b),
        per_gpu_bytes=per_gpu,
        layers_per_stage=layers_per_stage,
        note=note,
    )


@dataclass(frozen=True)
class AttentionDpExtra:
    """Bytes per GPU attention data parallel adds over the 1/TP split, by where they sit."""

    layers_bytes: float  # all layers' share (a pipeline stage holds its layers' part)
    embedding_bytes: float  # first pipeline stage
    lm_head_bytes: float  # last pipeline stage
    whole: str  # what is whole per GPU, in words


#: What each engine keeps whole on every GPU under attention data parallel, beyond the routed
#: experts' split over the TP (or EP) GPUs; see ``attention_dp_extra_bytes`` for the sources.
_ATTENTION_DP_WHOLE = {
    "vllm": ("attention", "dense_mlp", "moe_shared_and_router", "embedding", "lm_head"),
    "sglang": ("attention", "embedding"),
}
_ATTENTION_DP_WHOLE_WORDS = {
    "attention": "attention projections",
    "dense_mlp": "dense-layer MLPs",
    "moe_shared_and_router": "shared experts and routers",
    "embedding": "embedding",
    "lm_head": "lm_head",
}


def attention_dp_extra_bytes(
    model: ModelSpec,
    dtype: str,
    tp: int,
    engine: str = "generic",
    group_size: int = DEFAULT_INT4_GROUP_SIZE,
    breakdown: ParamBreakdown | None = None,
) -> AttentionDpExtra:
    """Extra weight bytes per GPU when attention runs data parallel over TP GPUs.

        extra = sum over the parts ``engine`` keeps whole of params x bytes x (1 - 1 / TP)

    bytes: bytes_per_weight(non-expert dtype) for linear parts, 2 (fp32: 4) for the embedding
    and lm_head. Each rank runs attention for its own sequences with all heads, so it keeps the
    whole attention projections (MLA: q_a, q_b, kv_a, kv_b, o) instead of a 1/TP slice; what
    else is whole depends on how the engine builds the layout:

    - vLLM (``--tensor-parallel-size 1 --data-parallel-size N``): only the MoE layers are
      sharded over the N ranks; everything else is built on a TP group of 1, so attention,
      dense-layer MLPs, shared experts, routers, embedding and lm_head are whole.
      Source: vllm 0.34.0 vllm/config/parallel.py:155-157 (data_parallel_size: "MoE layers
      will be sharded according to the product of the tensor, prefill-context, and data
      parallel sizes"), model_executor/layers/fused_moe/config.py:1143-1151 (the MoE TP size is
      DP x PCP x TP), model_executor/models/deepseek_v2.py:364-372 (shared experts: a
      DeepseekV2MLP on the TP group, :261-275), :1339 (dense layers' MLP), :1460
      (VocabParallelEmbedding), :1918 (ParallelLMHead).
    - SGLang (``--tp-size N --attn-dp-size N``): the attention-TP group is 1 GPU, and the input
      embedding is sharded within it (whole); the lm_head stays vocab-parallel over the full TP
      group unless --enable-dp-lm-head (not written), and dense MLPs and shared experts stay on
      the TP group (no --moe-dense-tp-size, no DeepEP/Mooncake all-to-all written). Source:
      sglang 0.5.23 srt/layers/vocab_parallel_embedding.py:182-185 (use_attn_tp_group under DP
      attention; the same flag in qwen2_moe.py:1118, minimax_m2.py:932, llama4.py:493,
      gpt_oss.py:662), models/deepseek_v2.py:3291-3297 (lm_head: use_attn_tp_group =
      enable_dp_lm_head), :874-896 (shared experts on "tp" unless an all-to-all backend),
      :2665 (dense MLP "tp" unless moe_dense_tp_size == 1).
    - TensorRT-LLM (``enable_attention_dp``) and the generic engine: the attention projections
      only. TensorRT-LLM's model code of mid-2025 to 2026, every version the code index holds,
      keeps the dense MLPs (``_compute_mlp_tp_size``: "If using attention DP, the MLP also uses
      DP instead of TP"), the shared experts (``overridden_tp_size``), the embedding and the
      lm_head (unless ``enable_lm_head_tp_in_adp``) whole as well; 1.1.0 itself (commit
      48b7b5d) could not be read here. Its 86 attention-DP rows are in the fitted calibration,
      so the vLLM rule for TensorRT-LLM waits for a refit; until then its budget is optimistic
      by those bytes (DeepSeek-R1 fp8 at TP 8: ~6.6 GB per GPU) and ``kv_cache_free_gpu_memory_
      fraction``, a share of what is free after the engine's own load, leaves less KV than
      budgeted, not a failed start.

    >>> from advisor.catalog import get_model
    >>> # DeepSeek-V3, 61 layers x 187,107,328 attention params (q_a 7168 x 1536, q_b 1536 x
    >>> # 128 x 192, kv_a 7168 x 576, kv_b 512 x 128 x 256, o 16384 x 7168, and the latent
    >>> # norms 1536 + 512), 1 byte in fp8: x 7/8
    >>> round(attention_dp_extra_bytes(get_model("deepseek-v3"), "fp8", 8).layers_bytes / 1e9, 3)
    9.987
    >>> # Kimi-K2 on vLLM, DP 16 (param_breakdown): attention 6,168,569,856 + dense MLP
    >>> # 396,361,728 + shared experts and routers 2,807,562,240 = 9,372,493,824 fp8 bytes, x 15/16
    >>> # = 8,786,712,960; embedding = lm_head = 163,840 x 7,168 = 1,174,405,120 x 2 bytes x 15/16
    >>> # = 2,202,009,600 each
    >>> x = attention_dp_extra_bytes(get_model("kimi-k2"), "fp8", 16, "vllm")
    >>> x.layers_bytes, x.embedding_bytes, x.lm_head_bytes
    (8786712960.0, 2202009600.0, 2202009600.0)
    """
    b = breakdown or param_breakdown(model)
    parts = _ATTENTION_DP_WHOLE.get(engine.split("-")[0], ("attention",))
    linear = bytes_per_weight(linear_dtypes(model, dtype)[1], group_size)
    table = 4.0 if dtype == "fp32" else 2.0
    keep = 1.0 - 1.0 / tp
    layer_params = sum(getattr(b, k) for k in parts if k not in ("embedding", "lm_head"))
    return AttentionDpExtra(
        layers_bytes=layer_params * linear * keep,
        embedding_bytes=b.embedding * table * keep if "embedding" in parts else 0.0,
        lm_head_bytes=b.lm_head * table * keep if "lm_head" in parts else 0.0,
        whole=", ".join(_ATTENTION_DP_WHOLE_WORDS[k] for k in parts),
    )


def _kv_heads(model: ModelSpec, windowed: bool) -> int:
    """KV heads of a full-attention layer, or of a windowed one (where they may differ)."""
    if windowed and model.window_num_key_value_heads is not None:
        return model.window_num_key_value_heads
    return model.num_key_value_heads


def kv_bytes_per_token_per_layer(model: ModelSpec, kv_dtype: str, windowed: bool = False) -> float:
    """KV-cache bytes one token adds in one layer, on one GPU holding all KV heads.

    MHA/GQA/MQA: 2 (K and V) x n_kv x d_head x bytes, n_kv of a windowed layer when
    ``windowed`` (window_num_key_value_heads where the two kinds differ). MLA caches the
    compressed latent and the decoupled RoPE key: (kv_lora_rank + qk_rope_head_dim) x bytes.
    Source: formulas.md "KV cache"; DeepSeek-V2 paper (arXiv 2405.04434) section 2.1.

    >>> from advisor.catalog import get_model
    >>> kv_bytes_per_token_per_layer(get_model("llama-2-70b"), "fp16")  # 2 x 8 x 128 x 2
    4096.0
    >>> kv_bytes_per_token_per_layer(get_model("deepseek-v3"), "bf16")  # (512 + 64) x 2
    1152.0
    """
    if kv_dtype not in ("fp16", "bf16", "fp8", "int8", "fp32"):
        raise ValueError(f"KV dtype {kv_dtype!r}; allowed: fp16, bf16, fp8, int8")
    e = DTYPE_BYTES[kv_dtype]
    if model.is_mla:
        return (model.kv_lora_rank + model.qk_rope_head_dim) * e  # type: ignore[operator]
    return 2.0 * _kv_heads(model, windowed) * model.head_dim * e


def kv_bytes_per_token_split(
    model: ModelSpec, kv_dtype: str, tp: int = 1, attention_dp: bool = False
) -> tuple[float, float]:
    """(full-attention layers', windowed layers') KV bytes per token on one GPU of a TP group.

    = (full_layers x per_layer(full) x tp_fraction(full), window_layers x per_layer(windowed)
    x tp_fraction(windowed)); ``tp`` = 1: the whole model. Source: formulas.md "KV cache".
    With ``attention_dp`` each rank holds all the KV of 1/TP of the sequences: per token and
    GPU, on average, the whole model's KV / TP (``kv_tp_fraction``).

    >>> from advisor.catalog import get_model
    >>> kv_bytes_per_token_split(get_model("gpt-oss-120b"), "bf16")  # 18 x 2048 each
    (36864.0, 36864.0)
    """
    w_layers = model.num_sliding_window_layers
    full = (model.num_hidden_layers - w_layers) * kv_bytes_per_token_per_layer(model, kv_dtype)
    win = w_layers * kv_bytes_per_token_per_layer(model, kv_dtype, windowed=True)
    return (
        full * kv_tp_fraction(model, tp, attention_dp=attention_dp),
        win * kv_tp_fraction(model, tp, windowed=True, attention_dp=attention_dp),
    )


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str) -> float:
    """KV-cache bytes per token for the whole model (all layers), no sliding-window cap.

    = layers x kv_bytes_per_token_per_layer (each kind of layer with its own KV heads).
    Source: formulas.md.

    >>> from advisor.catalog import get_model
    >>> kv_bytes_per_token(get_model("llama-2-70b"), "fp16")  # 2 x 80 x 8 x 128 x 2 (formulas.md)
    327680.0
    >>> kv_bytes_per_token(get_model("llama-2-7b"), "fp16")  # 2 x 32 x 32 x 128 x 2 (MHA)
    524288.0
    """
    return sum(kv_bytes_per_token_split(model, kv_dtype))


def kv_bytes_per_sequence(model: ModelSpec, kv_dtype: str, context_tokens: int) -> float:
    """KV bytes of one sequence of ``context_tokens``: windowed layers hold at most the window.

    = per_layer x (full_layers x T + window_layers x min(T, W)).
    A sliding layer keeps the last W tokens; a chunked-attention layer (Llama 4) the tokens of
    its current W-token chunk, at most W (vLLM's local-attention KV manager frees earlier
    chunks). gpt-oss's attention sinks are a learned logit per head, not cached tokens: no KV.
    Source: formulas.md; Beltagy et al. 2020 (sliding window); Llama 4 attention_chunk_size.

    >>> from advisor.catalog import get_model
    >>> kv_bytes_per_sequence(get_model("llama-2-70b"), "fp16", 4096) / 1e9  # 327,680 x 4096
    1.34217728
    >>> m = get_model("mistral-7b")  # all 32 layers windowed at 4096: 32k context costs 4k
    >>> kv_bytes_per_sequence(m, "fp16", 32768) == kv_bytes_per_sequence(m, "fp16", 4096)
    True
    >>> g = get_model("gpt-oss-120b")  # 2 x 8 x 64 x 2 B x (18 x 131072 + 18 x 128)
    >>> kv_bytes_per_sequence(g, "bf16", 131072)
    4836556800.0
    """
    return _kv_sequence(model, kv_dtype, context_tokens, tp=1)


def _kv_sequence(
    model: ModelSpec, kv_dtype: str, context_tokens: int, tp: int, attention_dp: bool = False
) -> float:
    full, win = kv_bytes_per_token_split(model, kv_dtype, tp, attention_dp)
    windowed = min(context_tokens, model.sliding_window) if win else 0
    return full * context_tokens + win * windowed


def moe_spread_blocker(model: ModelSpec, tp: int) -> str | None:
    """Why expert or attention data parallelism cannot apply to ``model`` at ``tp``; None if it can.

    Both spread an MoE model's work over its TP GPUs differently from plain TP: EP the experts,
    attention DP the sequences' attention. A dense model has no experts to gather tokens for, and
    one GPU has nothing to spread.

    >>> from advisor.catalog import get_model
    >>> moe_spread_blocker(get_model("llama-3.1-8b"), 2), moe_spread_blocker(get_model("mixtral-8x7b"), 1)
    ('the model is dense', 'TP=1 leaves nothing to spread')
    >>> moe_spread_blocker(get_model("mixtral-8x7b"), 2) is None
    True
    """
    if not model.is_moe:
        return "the model is dense"
    if tp < 2:
        return f"TP={tp} leaves nothing to spread"
    return None


def expert_parallel_blocker(model: ModelSpec, ep: int) -> str | None:
    """Why ``ep`` GPUs cannot split ``model``'s routed experts whole; None if they can.

    Expert parallelism gives each of the EP GPUs num_experts / EP whole experts, so EP must
    divide the expert count (and so be at most that count: a GPU holds whole experts, never a
    slice of one). Source: TensorRT-LLM MoE load balancer and SGLang's EP MoE both place
    num_experts / ep_size experts per rank; vLLM's FusedMoE gives each EP rank
    num_experts // ep_size local experts.

    >>> from advisor.catalog import get_model
    >>> expert_parallel_blocker(get_model("mixtral-8x7b"), 16)
    'EP=16 > 8 experts: a GPU holds whole experts (allowed EP: 2, 4, 8)'
    >>> expert_parallel_blocker(get_model("deepseek-v3"), 8) is None
    True
    >>> expert_parallel_blocker(get_model("deepseek-v3"), 6)
    'EP=6 must divide the 256 experts (allowed EP: 2, 4, 8, 16, 32, 64, 128, 256)'
    """
    spread = moe_spread_blocker(model, ep)
    if spread:
        return spread
    n = int(model.num_experts or 0)
    allowed = ", ".join(str(d) for d in range(2, n + 1) if n % d == 0)
    if ep > n:
        return f"EP={ep} > {n} experts: a GPU holds whole experts (allowed EP: {allowed})"
    if n % ep:
        return f"EP={ep} must divide the {n} experts (allowed EP: {allowed})"
    return None


def tp_head_split(model: ModelSpec, tp: int) -> tuple[str | None, str]:
    """(why TP cannot split the attention heads or None, how the KV heads are laid out).

    Tensor parallelism shards attention by head, so TP must divide the query heads
    (n_q mod TP = 0); the KV heads are either sharded (n_kv mod TP = 0, n_kv/TP per rank) or,
    when TP > n_kv, replicated (TP mod n_kv = 0, each KV head on TP/n_kv ranks). MLA's latent
    KV is replicated on every rank, so only the query heads constrain TP.

    Source: vLLM ModelConfig.verify_with_parallel_config ("Total number of attention heads (n)
    must be divisible by tensor parallel size (tp)") and QKVParallelLinear (num_kv_head_replicas
    = divide(tp_size, total_num_kv_heads) when tp_size >= total_num_kv_heads, else
    divide(total_num_kv_heads, tp_size)); TensorRT-LLM applies the same rules.

    >>> from advisor.catalog import get_model
    >>> m = get_model("llama-2-70b")  # 64 query heads, 8 KV heads (config.json)
    >>> tp_head_split(m, 16)
    (None, 'TP=16 > 8 KV heads: each KV head is replicated on 2 ranks')
    >>> tp_head_split(m, 3)[0]
    'TP=3 must divide the 64 attention heads (allowed TP: 1, 2, 4, 8, 16, 32, 64)'
    """
    nq, nkv = model.num_attention_heads, model.num_key_value_heads
    allowed = [t for t in range(1, nq + 1) if nq % t == 0 and (model.is_mla or nkv % t == 0
               or t % nkv == 0)]  # fmt: skip
    ok = ", ".join(map(str, allowed))
    if nq % tp:
        return f"TP={tp} must divide the {nq} attention heads (allowed TP: {ok})", ""
    if model.is_mla:
        return None, f"TP={tp}: {nq // tp} query heads per rank; the MLA latent KV on every rank"
    if tp <= nkv:
        if nkv % tp:
            return (f"TP={tp} must divide the {nkv} KV heads or be a multiple of them "
                    f"(allowed TP: {ok})"), ""  # fmt: skip
        return None, f"TP={tp}: {nkv // tp} KV head(s) per rank"
    if tp % nkv:
        return (f"TP={tp} > {nkv} KV heads must be a multiple of them, so each KV head is "
                f"replicated on the same number of ranks (allowed TP: {ok})"), ""  # fmt: skip
    return None, f"TP={tp} > {nkv} KV heads: each KV head is replicated on {tp // nkv} ranks"


def kv_heads_per_gpu(model: ModelSpec, tp: int, windowed: bool = False) -> int:
    """KV heads each TP rank holds: ceil(n_kv / TP); heads are replicated when TP > n_kv.

    MLA's latent is shared by all heads and is replicated on every rank (vLLM's MLA backend).

    >>> from advisor.catalog import get_model
    >>> kv_heads_per_gpu(get_model("llama-2-70b"), 16)  # 8 KV heads: each rank keeps one copy
    1
    """
    if model.is_mla:
        return 1
    return math.ceil(_kv_heads(model, windowed) / tp)


def kv_tp_fraction(
    model: ModelSpec, tp: int, windowed: bool = False, attention_dp: bool = False
) -> float:
    """Fraction of a layer's KV cache one TP rank holds (1/TP, or more when heads replicate).

    Under attention data parallelism a rank keeps whole sequences, 1/TP of them: 1/TP on
    average, MLA's shared latent included (under TP it is replicated on every rank).

    >>> from advisor.catalog import get_model
    >>> m = get_model("deepseek-v3")
    >>> kv_tp_fraction(m, 8), kv_tp_fraction(m, 8, attention_dp=True)
    (1.0, 0.125)
    """
    if attention_dp:
        return 1.0 / tp
    if model.is_mla:
        return 1.0
    return kv_heads_per_gpu(model, tp, windowed) / _kv_heads(model, windowed)


def kv_bytes_per_sequence_per_gpu(
    model: ModelSpec,
    kv_dtype: str,
    context_tokens: int,
    tp: int,
    pp: int,
    attention_dp: bool = False,
) -> float:
    """KV bytes one sequence occupies on the busiest GPU: TP splits heads, PP splits layers.

    = (full-layer KV x T + windowed-layer KV x min(T, W)) per TP rank x ceil(layers / PP) /
    layers (each kind of layer split by its own KV heads). Under attention data parallelism a
    sequence lives whole on one rank: 1/TP of it per GPU on average (``kv_tp_fraction``).

    >>> from advisor.catalog import get_model
    >>> kv_bytes_per_sequence_per_gpu(get_model("llama-2-70b"), "fp16", 4096, 4, 1) / 1e6
    335.54432
    """
    layers = model.num_hidden_layers
    stage_share = math.ceil(layers / pp) / layers
    return _kv_sequence(model, kv_dtype, context_tokens, tp, attention_dp) * stage_share


def article_kv_bytes_per_sequence(
    context_tokens: int, batch: int, d_model: int, n_layers: int, bytes_per_element: float
) -> float:
    """The article's KV formula: 2 x L x B x d_model x n_layers x bytes (ignores GQA/MQA/MLA).

    Correct only for multi-head attention, where n_kv x d_head = d_model. Source: the reference
    article (data/article-claims.md); compare ``kv_bytes_per_sequence``.

    >>> article_kv_bytes_per_sequence(4096, 1, 8192, 80, 2) / 1e9  # 70B: 10.7 GB, not "2.1 GB"
    10.73741824
    """
    return 2.0 * context_tokens * batch * d_model * n_layers * bytes_per_element


def activation_reserve_bytes(
    model: ModelSpec,
    tp: int,
    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    activation_bytes: float = 2.0,
    runtime_overhead_bytes: float = DEFAULT_RUNTIME_OVERHEAD_BYTES,
) -> float:
    """Peak activation memory of one forward pass, plus the runtime's fixed overhead.

    Live at the widest point of a layer for ``max_batched_tokens`` tokens: residual and normed
    input (2h), Q/K/V (d_qkv / TP), the MLP's gate, up and activated outputs (3 f_active / TP),
    each ``activation_bytes``; plus fp32 logits for up to ``max_num_seqs`` sequences over the
    vocabulary (V / TP x 4). This is what vLLM's profiling run measures before it sizes the KV
    cache (vLLM Worker.determine_num_available_blocks).

    >>> from advisor.catalog import get_model
    >>> # 8192 x (2 x 8192 + 10240/4 + 3 x 28672/4) x 2 B + 256 x 8000 x 4 B + 1 GiB, in GiB
    >>> round(activation_reserve_bytes(get_model("llama-2-70b"), 4) / 2**30, 2)
    1.62
    """
    m = model
    h = m.hidden_size
    if m.is_mla:
        qkv = m.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) * 2  # type: ignore[operator]
    else:
        qkv = (m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim
    if m.is_moe:
        has_dense = m.num_moe_layers < m.num_hidden_layers
        f = max(
            m.intermediate_size if has_dense else 0,
            m.moe_intermediate_size * (m.num_experts_per_tok + m.num_shared_experts),
        )  # type: ignore[operator]
    else:
        f = m.intermediate_size
    per_token = 2 * h + qkv / tp + 3 * f / tp
    logits = min(max_num_seqs, max_batched_tokens) * m.vocab_size / tp * 4.0
    return max_batched_tokens * per_token * activation_bytes + logits + runtime_overhead_bytes


@dataclass(frozen=True)
class MemoryBudget:
    """Per-GPU memory budget of one deployment and the concurrency it allows."""

    params: int
    active_params: int
    capacity_bytes: float
    usable_bytes: float  # capacity x gpu_memory_utilization
    weights_bytes_per_gpu: float
    weights_bytes_total: float
    activation_reserve_bytes: float
    #: Never negative: 0 when the weights and reserve take all usable memory (``reasons`` then
    #: say how much they need against what the GPU has).
    kv_budget_bytes_per_gpu: float
    kv_bytes_per_token: float  # whole model, all layers
    kv_bytes_per_token_per_gpu: float
    kv_bytes_per_sequence: float  # whole model, at context
    kv_bytes_per_sequence_per_gpu: float
    max_concurrent_sequences: int  # paged
    max_concurrent_sequences_contiguous: int
    paged_utilisation: float  # tokens stored / tokens reserved, paged
    contiguous_utilisation: float  # tokens stored / tokens reserved, contiguous at max length
    fits: bool
    reasons: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    #: A speculative draft on the same GPUs: its weights and, per sequence at context, its KV.
    draft_weights_bytes_per_gpu: float = 0.0
    draft_kv_bytes_per_sequence_per_gpu: float = 0.0


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"


def memory_budget(
    model: ModelSpec,
    gpu: Accelerator,
    *,
    tp: int = 1,
    pp: int = 1,
    weights_dtype: str = "fp16",
    kv_dtype: str = "fp16",
    context_tokens: int = 4096,
    block_size: int = 16,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    max_model_len: int | None = None,
    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS,
    int4_group_size: int = DEFAULT_INT4_GROUP_SIZE,
    suggest: bool = True,
    draft: ModelSpec | None = None,
    draft_tp: int = 1,
    attention_dp: bool = False,
    engine: str = "generic",
) -> MemoryBudget:
    """Budget per GPU = capacity x utilisation - weights - activation reserve = KV budget.

    Paged allocation (Kwon et al. 2023): a sequence of T tokens takes ceil(T / block) blocks, so
    only the last block is partly used. Contiguous allocation reserves ``max_model_len`` tokens
    per sequence (the model's maximum context unless given), as pre-vLLM servers did.
    A speculative ``draft`` (same weight and KV dtypes, TP ``draft_tp``, no PP) shares the GPUs:
    its weights come off the budget and every sequence also holds the draft's KV of its context
    (vLLM allocates the drafter's KV blocks from the same pool; vllm/v1/spec_decode).
    ``attention_dp``: attention data parallel over the TP group (what ``engine`` keeps whole on
    every GPU, each sequence's KV on one rank; ``weight_placement``, ``kv_tp_fraction``).

    >>> from advisor.catalog import get_model, get_accelerator
    >>> b = memory_budget(get_model("llama-2-70b"), get_accelerator("h100-sxm"), tp=4)
    >>> b.fits, b.max_concurrent_sequences, b.max_concurrent_sequences_contiguous
    (True, 121, 121)
    """
    _check_budget_args(model, tp, pp, context_tokens, block_size, gpu_memory_utilization)
    if max_model_len is not None and max_model_len < context_tokens:
        raise ValueError(
            f"context_tokens={context_tokens:,} exceeds max_model_len={max_model_len:,}: a "
            "server started with that max_model_len refuses such sequences"
        )
    # a context past the model's trained maximum is warned about where it is entered
    max_len = max(max_model_len or model.max_position_embeddings, context_tokens)

    pb = param_breakdown(model)
    placement = weight_placement(
        model, weights_dtype, tp, pp, int4_group_size, attention_dp=attention_dp, engine=engine
    )
    reserve = activation_reserve_bytes(model, tp, max_batched_tokens)
    usable = gpu.memory_bytes * gpu_memory_utilization
    draft_w = 0.0
    if draft is not None:
        draft_w = weight_placement(draft, weights_dtype, draft_tp, 1, int4_group_size).per_gpu_bytes
    kv_budget = usable - placement.per_gpu_bytes - draft_w - reserve

    def draft_kv(tokens: int) -> float:
        if draft is None:
            return 0.0
        return kv_bytes_per_sequence_per_gpu(draft, kv_dtype, tokens, draft_tp, 1)

    def seq_gpu(tokens: int) -> float:
        return kv_bytes_per_sequence_per_gpu(model, kv_dtype, tokens, tp, pp, attention_dp)

    layers = model.num_hidden_layers
    stage_share = math.ceil(layers / pp) / layers
    kv_tok = kv_bytes_per_token(model, kv_dtype)
    kv_tok_gpu = sum(kv_bytes_per_token_split(model, kv_dtype, tp, attention_dp)) * stage_share
    kv_seq = kv_bytes_per_sequence(model, kv_dtype, context_tokens)
    kv_seq_gpu = seq_gpu(context_tokens)

    paged_tokens = math.ceil(context_tokens / block_size) * block_size
    paged_seq_gpu = seq_gpu(paged_tokens) + draft_kv(paged_tokens)
    contig_seq_gpu = seq_gpu(max_len) + draft_kv(max_len)
    n_paged = max(0, math.floor(kv_budget / paged_seq_gpu)) if kv_budget > 0 else 0
    n_contig = max(0, math.floor(kv_budget / contig_seq_gpu)) if kv_budget > 0 else 0

    reasons = _budget_reasons(
        gpu, placement.per_gpu_bytes, draft, draft_w, reserve, usable, kv_budget, n_paged,
        paged_seq_gpu, context_tokens, f"{weights_dtype}, TP={tp}"
        f"{' (attention DP)' if attention_dp else ''}, PP={pp}", gpu_memory_utilization,
    )  # fmt: skip
    fits = not reasons

    suggestions: list[str] = []
    if not fits and suggest:
        # every argument but the one a suggestion changes: a suggestion for an attention-DP
        # deployment counted without attention DP said 109 sequences where taking it gives 731
        same = dict(
            tp=tp, pp=pp, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
            context_tokens=context_tokens, block_size=block_size,
            gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
            max_batched_tokens=max_batched_tokens, int4_group_size=int4_group_size,
            draft=draft, draft_tp=draft_tp, attention_dp=attention_dp, engine=engine,
        )  # fmt: skip
        suggestions = _suggestions(model, gpu, same)

    draft_kv_seq = draft_kv(context_tokens)
    assumptions = _budget_assumptions(
        model, gpu, tp, weights_dtype, max_len, gpu_memory_utilization, max_batched_tokens,
        int4_group_size, placement.note, draft, draft_tp, draft_w, draft_kv_seq,
    )  # fmt: skip

    return MemoryBudget(
        params=pb.total,
        active_params=active_params_as_published(model),
        capacity_bytes=float(gpu.memory_bytes),
        usable_bytes=usable,
        weights_bytes_per_gpu=placement.per_gpu_bytes,
        weights_bytes_total=placement.total_bytes,
        activation_reserve_bytes=reserve,
        kv_budget_bytes_per_gpu=max(kv_budget, 0.0),
        kv_bytes_per_token=kv_tok,
        kv_bytes_per_token_per_gpu=kv_tok_gpu,
        kv_bytes_per_sequence=kv_seq,
        kv_bytes_per_sequence_per_gpu=kv_seq_gpu,
        max_concurrent_sequences=n_paged,
        max_concurrent_sequences_contiguous=n_contig,
        paged_utilisation=context_tokens / paged_tokens,
        contiguous_utilisation=context_tokens / max_len,
        fits=fits,
        reasons=reasons,
        suggestions=suggestions,
        assumptions=assumptions,
        draft_weights_bytes_per_gpu=draft_w,
        draft_kv_bytes_per_sequence_per_gpu=draft_kv_seq,
    )


def _check_budget_args(
    model: ModelSpec, tp: int, pp: int, context_tokens: int, block_size: int,
    gpu_memory_utilization: float,
) -> None:  # fmt: skip
    """ValueError naming the argument, its value and the allowed range."""
    if tp < 1 or pp < 1:
        raise ValueError(f"tp={tp}, pp={pp}; both must be >= 1")
    if context_tokens < 1:
        raise ValueError(f"context_tokens={context_tokens}; must be >= 1")
    if block_size not in PAGED_BLOCK_SIZES:
        raise ValueError(f"block_size={block_size}; allowed: {PAGED_BLOCK_SIZES}")
    if not 0.05 <= gpu_memory_utilization <= 1.0:
        raise ValueError(f"gpu_memory_utilization={gpu_memory_utilization}; allowed: 0.05..1.0")
    if pp > model.num_hidden_layers:
        raise ValueError(f"pp={pp} exceeds the model's {model.num_hidden_layers} layers")


def _budget_reasons(
    gpu: Accelerator, weights_b: float, draft: ModelSpec | None, draft_w: float, reserve: float,
    usable: float, kv_budget: float, n_paged: int, paged_seq_gpu: float, context_tokens: int,
    where: str, gpu_memory_utilization: float,
) -> list[str]:  # fmt: skip
    """Why the deployment does not fit, first cause only (empty when it fits):

    weights + draft > usable;  else KV budget = usable - weights - draft - reserve <= 0;
    else not one paged sequence of ``context_tokens`` in the KV budget.
    """
    usable_txt = (
        f"{_gb(usable)} usable ({gpu_memory_utilization:.2f} x {_gb(gpu.memory_bytes)} "
        f"on {gpu.name})"
    )
    with_draft = f" + draft {draft.id} {_gb(draft_w)}" if draft is not None else ""
    if weights_b + draft_w > usable:
        return [f"weights need {_gb(weights_b)}{with_draft} per GPU ({where}); "
                f"the GPU has {usable_txt}"]  # fmt: skip
    if kv_budget <= 0:
        return [f"weights {_gb(weights_b)}{with_draft} + activation reserve {_gb(reserve)} per "
                f"GPU leave no room for the KV cache in {usable_txt}"]  # fmt: skip
    if n_paged == 0:
        return [
            f"one {context_tokens}-token sequence needs {_gb(paged_seq_gpu)} of KV cache per GPU"
            f"{' (target + draft)' if draft is not None else ''}; only {_gb(kv_budget)} is left "
            "after weights and activations"
        ]
    return []


def _budget_assumptions(
    model: ModelSpec, gpu: Accelerator, tp: int, weights_dtype: str, max_len: int,
    gpu_memory_utilization: float, max_batched_tokens: int, int4_group_size: int,
    placement_note: str, draft: ModelSpec | None, draft_tp: int, draft_w: float,
    draft_kv_bytes: float,
) -> list[str]:  # fmt: skip
    """What the budget assumes, in the words the Memory page and the PDF show."""
    assumptions = [
        f"usable memory = {gpu_memory_utilization:.2f} x {gpu.memory_bytes / 2**30:.1f} GiB "
        "(vLLM gpu_memory_utilization)",
        f"activation reserve for {max_batched_tokens} batched tokens + runtime overhead "
        f"{DEFAULT_RUNTIME_OVERHEAD_BYTES / 2**30:.1f} GiB",
        placement_note,
        "quantized weights: linear layers only; embeddings, lm_head and norms stay 16-bit",
        f"contiguous allocation reserves {max_len} tokens per sequence",
    ]
    if draft is not None:
        assumptions.append(
            f"speculative draft {draft.id} at TP={draft_tp} on the same GPUs: "
            f"{_gb(draft_w)} of weights and {_gb(draft_kv_bytes)} of KV per sequence"
        )
    e_dtype, o_dtype = linear_dtypes(model, weights_dtype)
    if e_dtype != o_dtype and model.is_moe:
        assumptions.append(
            f"routed experts in {e_dtype} as the checkpoint ships them; attention, router, "
            f"shared layers in {o_dtype}"
        )
    if weights_dtype in ("mxfp4", "nvfp4"):
        block = MXFP4_BLOCK_SIZE if weights_dtype == "mxfp4" else NVFP4_BLOCK_SIZE
        assumptions.append(
            f"{weights_dtype}: 4-bit elements + one 8-bit scale per {block} weights"
            + (" + one fp32 scale per matrix" if weights_dtype == "nvfp4" else "")
        )
    if weights_dtype == "int4":
        assumptions.append(
            f"int4 with one fp16 scale and a 4-bit zero per {int4_group_size} weights"
        )
    if not model.is_mla and tp > model.num_key_value_heads and tp_head_split(model, tp)[1]:
        assumptions.append(tp_head_split(model, tp)[1])
    return assumptions


def _suggestions(model: ModelSpec, gpu: Accelerator, same: dict) -> list[str]:
    """The smallest changes that make the deployment fit: more TP, then lower-bit weights.

    ``same``: the budget's own arguments; each suggestion is that budget with one of them
    changed, so the sequences it promises are the ones the changed deployment gets.
    """
    tp, weights_dtype, kv_dtype = same["tp"], same["weights_dtype"], same["kv_dtype"]
    context_tokens, group = same["context_tokens"], same["int4_group_size"]

    def fits(**over: object) -> MemoryBudget:
        return memory_budget(model, gpu, **{**same, **over, "suggest": False})

    out: list[str] = []
    t = tp * 2
    while t <= max(gpu.scale_up_domain, 8):
        b = fits(tp=t)
        if b.fits:
            out.append(
                f"TP={t}: {b.max_concurrent_sequences} sequences of {context_tokens} tokens fit"
            )
            break
        t *= 2
    for d in ("fp8", "int8", "int4"):
        if bytes_per_weight(d, group) < bytes_per_weight(weights_dtype, group):
            b = fits(weights_dtype=d)
            if b.fits:
                out.append(
                    f"{d} weights at TP={tp}: {b.max_concurrent_sequences} sequences of "
                    f"{context_tokens} tokens fit"
                )
                break
    if kv_dtype in ("fp16", "bf16"):
        b = fits(kv_dtype="fp8")
        if b.fits:
            out.append(f"fp8 KV cache: {b.max_concurrent_sequences} sequences fit")
    if not out:
        out.append("no single change fits: combine more GPUs (TP/PP) with lower-bit weights")
    return out

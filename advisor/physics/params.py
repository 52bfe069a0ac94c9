"""Parameter counts of a decoder-only transformer, from its architecture.

Conventions (formulas.md "Parameters"; the Hugging Face modelling code of each family):
attention Q, K, V, O projections; gated MLP = 3 matrices (SwiGLU), plain MLP = 2 (Falcon);
MoE layer = experts x MLP + router + shared experts; embeddings V x h, lm_head V x h unless
tied; norm weights counted (RMSNorm: h, LayerNorm: 2h; per-head Q/K RMSNorm: 2 x d_head).
Biases only where the family has them (Qwen2's Q/K/V bias; gpt-oss's output, expert and router
biases); gpt-oss's attention sinks are one weight per query head.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.specs import ModelSpec


def attention_params_per_layer(m: ModelSpec) -> int:
    """Weights of one attention block (projections and biases, not norms).

    Standard attention: h*(n_q*d) + 2*h*(n_kv*d) + (n_q*d)*h.
    MLA (DeepSeek-V3 modeling code): q_a (h x q_lora) + q_a_norm + q_b (q_lora x n_q*(nope+rope))
    + kv_a (h x (kv_lora + rope)) + kv_a_norm + kv_b (kv_lora x n_q*(nope+v)) + o (n_q*v x h).
    Source: formulas.md; transformers modeling_llama.py / modeling_deepseek_v3.py.

    >>> from advisor.catalog import get_model
    >>> attention_params_per_layer(get_model("llama-2-70b"))  # 8192*8192*2 + 2*8192*1024
    150994944
    """
    h, nq = m.hidden_size, m.num_attention_heads
    if m.is_mla:
        nope, rope, v = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
        kv_lora = m.kv_lora_rank
        qk = nq * (nope + rope)  # type: ignore[operator]
        # q_lora_rank None: DeepSeek-V2-Lite projects Q directly.
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * qk if m.q_lora_rank else h * qk
        kv = h * (kv_lora + rope) + kv_lora + kv_lora * nq * (nope + v)  # type: ignore[operator]
        return q + kv + nq * v * h  # type: ignore[operator]
    d, nkv = m.head_dim, m.num_key_value_heads
    params = h * nq * d + 2 * h * nkv * d + nq * d * h
    if m.attention_bias:
        params += nq * d + 2 * nkv * d
    if m.attention_out_bias:
        params += h
    if m.attention_sinks:
        params += nq
    return params


def mlp_params(hidden_size: int, intermediate_size: int, gated: bool) -> int:
    """Weights of one feed-forward block: (3 if gated else 2) x h x f.

    Source: formulas.md (SwiGLU: gate, up, down; plain GeLU MLP: up, down).

    >>> mlp_params(8192, 28672, gated=True)  # Llama-2-70B: 3 x 8192 x 28672
    704643072
    """
    return (3 if gated else 2) * hidden_size * intermediate_size


def norm_params_per_layer(m: ModelSpec) -> int:
    """RMSNorm has a weight vector (h), LayerNorm a weight and a bias (2h); Q/K norms 2 d_head."""
    per_norm = m.hidden_size * (2 if m.norm_kind == "layernorm" else 1)
    return m.norms_per_layer * per_norm + (2 * m.head_dim if m.qk_norm else 0)


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameter counts by where they live; all in parameters (not bytes)."""

    embedding: int
    lm_head: int
    attention: int  # all layers
    dense_mlp: int  # all dense-FFN layers
    moe_experts: int  # all routed experts of all MoE layers
    moe_shared_and_router: int  # shared experts + router weights, all MoE layers
    norms: int  # per-layer norms + final norm
    moe_active_experts: int  # routed experts one token uses, all MoE layers

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.moe_experts
            + self.moe_shared_and_router
            + self.norms
        )

    @property
    def active(self) -> int:
        """Parameters one token touches: the routed experts counted at top-k, not all."""
        return self.total - self.moe_experts + self.moe_active_experts

    @property
    def linear_layers(self) -> int:
        """Matmul weights inside the layers (what weight quantization applies to)."""
        return self.attention + self.dense_mlp + self.moe_experts + self.moe_shared_and_router


def active_params_as_published(m: ModelSpec) -> int:
    """Parameters one token uses, counted as the model's publisher counts them: the one active
    count every view shows (issue 38: 22.2B in the catalog, 21.6B on the Recommendation page).

    active = total - routed experts + the top-k routed experts, less the input embedding (a
    table lookup) when the publisher leaves it out and the output layer when it does too
    (``published_active_excludes_*`` in data/models.yaml); Qwen and DeepSeek count both.
    Source: OpenAI, gpt-oss model card (arXiv 2508.10925) Table 1: gpt-oss-120b 5.13B active
    (the unembedding counted, not the embedding); Qwen3-235B-A22B card: 22B activated.

    >>> from advisor.catalog import get_model
    >>> [round(active_params_as_published(get_model(k)) / 1e9, 2)
    ...  for k in ("gpt-oss-120b", "qwen3-235b-a22b")]
    [5.13, 22.19]
    """
    b = param_breakdown(m)
    out = b.active - (b.embedding if m.published_active_excludes_embedding else 0)
    return out - (b.lm_head if m.published_active_excludes_lm_head else 0)


def active_convention(m: ModelSpec) -> str:
    """How :func:`active_params_as_published` counts ``m``'s active parameters, in words (the
    convention every view states beside the count, issue 38).

    >>> from advisor.catalog import get_model
    >>> active_convention(get_model("gpt-oss-120b"))
    'as its publisher counts them: without the input embedding, a table lookup'
    >>> active_convention(get_model("qwen3-235b-a22b"))
    'as its publisher counts them: the embeddings included'
    """
    if m.published_active_excludes_embedding and m.published_active_excludes_lm_head:
        left_out = "without the input embedding and the output layer"
    elif m.published_active_excludes_embedding:
        left_out = "without the input embedding, a table lookup"
    else:
        left_out = "the embeddings included"
    return f"as its publisher counts them: {left_out}"


def param_breakdown(m: ModelSpec) -> ParamBreakdown:
    """Count parameters by component.

    >>> from advisor.catalog import get_model
    >>> round(param_breakdown(get_model("llama-2-70b")).total / 1e9, 3)  # formulas.md: 68.98e9
    68.977
    >>> b = param_breakdown(get_model("mixtral-8x7b"))
    >>> round(b.total / 1e9, 1), round(b.active / 1e9, 1)  # Mistral AI: 46.7B total, 12.9B active
    (46.7, 12.9)
    """
    h, layers = m.hidden_size, m.num_hidden_layers
    gated = m.mlp_kind == "gated"
    embedding = m.vocab_size * h
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * h
    attention = layers * attention_params_per_layer(m)
    norms = layers * norm_params_per_layer(m) + h * (2 if m.norm_kind == "layernorm" else 1)
    if m.is_moe:
        moe_layers = m.num_moe_layers
        dense_layers = layers - moe_layers
        f, n_exp = m.moe_intermediate_size, m.num_experts
        expert = mlp_params(h, f, gated)  # type: ignore[arg-type]
        shared_expert = expert
        if m.expert_bias:  # gpt-oss: gate_up bias (2f), down bias (h)
            expert += (2 if gated else 1) * f + h  # type: ignore[operator]
        router = h * n_exp + (n_exp if m.expert_bias else 0)  # type: ignore[operator]
        moe_experts = moe_layers * n_exp * expert  # type: ignore[operator]
        moe_active = moe_layers * m.num_experts_per_tok * expert  # type: ignore[operator]
        shared = moe_layers * (m.num_shared_experts * shared_expert + router)
    else:
        dense_layers, moe_experts, moe_active, shared = layers, 0, 0, 0
    dense_mlp = dense_layers * mlp_params(h, m.intermediate_size, gated)
    return ParamBreakdown(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        dense_mlp=dense_mlp,
        moe_experts=moe_experts,
        moe_shared_and_router=shared,
        norms=norms,
        moe_active_experts=moe_active,
    )

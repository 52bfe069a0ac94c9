"""Qwen3 (dense) and Qwen3-MoE: GQA with QK norm, no sliding window."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.errors import PREFIX, HFConfigError, show
from advisor.catalog.hf.mapper import (
    REQ,
    RMS_PAIR,
    Family,
    derived_head_dim,
    dflt,
    experts,
    fixed,
    gqa,
    no_sliding,
    read,
)
from advisor.catalog.hf.reader import Reader

QK_NORM = "q_norm and k_norm RMSNorm over head_dim"


def map_qwen3(r: Reader) -> dict[str, Any]:
    # Qwen3Config: num_key_value_heads=32 (null -> num_attention_heads), head_dim=128,
    # max_position_embeddings=32768, tie_word_embeddings=False, attention_bias=False.
    out = read(r, **gqa(32))
    no_sliding(r, "qwen3")
    return read(
        r,
        out,
        qk_norm=fixed(True, f"Qwen3Attention: {QK_NORM}"),
        norms_per_layer=fixed(2, RMS_PAIR),
        intermediate_size=REQ,
        head_dim=128,
        max_position_embeddings=32768,
        tie_word_embeddings=False,
        attention_bias=False,
    )


def map_qwen3_moe(r: Reader) -> dict[str, Any]:
    # Qwen3MoeConfig: num_key_value_heads=4, head_dim absent -> hidden_size // heads,
    # decoder_sparse_step=1, mlp_only_layers=[] (MoE on layer i when i not in mlp_only_layers and
    # (i + 1) % decoder_sparse_step == 0).
    out = read(r, **gqa(4))
    no_sliding(r, "qwen3_moe")
    read(
        r,
        out,
        intermediate_size=REQ,
        head_dim=derived_head_dim,
        max_position_embeddings=32768,
        tie_word_embeddings=False,
        attention_bias=False,
        norms_per_layer=fixed(2),
        **experts("num_experts"),
        moe_intermediate_size=REQ,
        moe_layer_step=dflt(1, "decoder_sparse_step"),
        qk_norm=fixed(True, f"Qwen3MoeAttention: {QK_NORM}"),
    )
    mlp_only = r.cfg.get("mlp_only_layers")
    if mlp_only not in (None, []):
        raise HFConfigError(
            f"{PREFIX}: 'mlp_only_layers'={show(mlp_only)} is not supported; allowed: [] "
            "(every layer follows decoder_sparse_step)"
        )
    return out


FAMILIES = (
    Family(
        name="qwen3",
        hf_class="Qwen3Config (configuration_qwen3.py)",
        map=map_qwen3,
        model_types=("qwen3",),
        architectures=("Qwen3ForCausalLM",),
    ),
    Family(
        name="qwen3_moe",
        hf_class="Qwen3MoeConfig (configuration_qwen3_moe.py)",
        map=map_qwen3_moe,
        model_types=("qwen3_moe",),
        architectures=("Qwen3MoeForCausalLM",),
    ),
)

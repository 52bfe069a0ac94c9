"""GLM-4.5 / 4.6 (Glm4MoeForCausalLM): DeepSeek-style MoE (shared expert, first layer dense) on
GQA attention, optional QK norm."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import REQ, RMS_PAIR, Family, dflt, experts, fixed, gqa, read
from advisor.catalog.hf.reader import Reader


def map_glm4_moe(r: Reader) -> dict[str, Any]:
    # Glm4MoeConfig: num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
    # tie_word_embeddings=False, attention_bias=False (Q/K/V only), n_shared_experts=1,
    # first_k_dense_replace=1, use_qk_norm=False. The num_nextn_predict_layers MTP layers are
    # not counted (as DeepSeek's).
    return read(
        r,
        **gqa(8),
        intermediate_size=REQ,
        head_dim=128,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        attention_bias=False,
        qk_norm=dflt(False, "use_qk_norm"),
        **experts("n_routed_experts"),
        moe_intermediate_size=REQ,
        num_shared_experts=dflt(1, "n_shared_experts"),
        first_k_dense_layers=dflt(1, "first_k_dense_replace"),
        norms_per_layer=fixed(2, RMS_PAIR),
    )


FAMILIES = (
    Family(
        name="glm4_moe",
        hf_class="Glm4MoeConfig (configuration_glm4_moe.py)",
        map=map_glm4_moe,
        model_types=("glm4_moe",),
        architectures=("Glm4MoeForCausalLM",),
    ),
)

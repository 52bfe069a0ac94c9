"""MiniMax-M2 (M2, M2.1, M2.5): MoE on every layer without a shared expert, GQA with QK norm."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import (
    REQ,
    RMS_PAIR,
    Family,
    dflt,
    experts,
    fixed,
    gqa,
    only,
    read,
    same_as,
)
from advisor.catalog.hf.reader import Reader


def map_minimax_m2(r: Reader) -> dict[str, Any]:
    # Every layer is MoE: num_local_experts experts of width intermediate_size, top
    # num_experts_per_tok with sigmoid routing and no shared expert (shared_intermediate_size
    # 0); GQA with QK norm (qk_norm_type per_layer: over the whole Q and K projections), partial
    # RoPE (rotary_dim), untied embeddings. Its config class ships with the checkpoint
    # (auto_map), so no size has a library default here: each is required. The MTP modules
    # (use_mtp, num_mtp_modules) are not counted, as DeepSeek's are not.
    r.req_int("num_key_value_heads", field="num_key_value_heads")
    out = read(r, **gqa(None))
    only(r, "shared_intermediate_size", 0, "0 (no shared expert)", 0, 1_048_576, "minimax_m2")
    return read(
        r,
        out,
        intermediate_size=REQ,
        head_dim=REQ,
        max_position_embeddings=REQ,
        tie_word_embeddings=False,
        attention_bias=False,
        qk_norm=dflt(False, "use_qk_norm"),
        **experts("num_local_experts"),
        moe_intermediate_size=same_as(
            "intermediate_size", "MiniMax-M2 expert width = intermediate_size"
        ),
        norms_per_layer=fixed(2, RMS_PAIR),
    )


FAMILIES = (
    Family(
        name="minimax_m2",
        hf_class="MiniMaxM2Config (the checkpoint's configuration_minimax_m2.py, via auto_map)",
        map=map_minimax_m2,
        model_types=("minimax_m2",),
        architectures=("MiniMaxM2ForCausalLM",),
    ),
)

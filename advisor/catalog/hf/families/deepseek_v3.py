"""DeepSeek-V3 / R1 and Kimi K2: multi-head latent attention (MLA) and DeepSeekMoE (shared
experts, the first k layers dense)."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import (
    CORE,
    REQ,
    RMS_PAIR,
    Family,
    dflt,
    experts,
    fixed,
    kv_heads,
    nullable,
    only,
    read,
)
from advisor.catalog.hf.reader import Reader


def _qk_head_dim(r: Reader, field: str, out: dict[str, Any]) -> int:
    # The query/key head width is qk_nope_head_dim + qk_rope_head_dim (DeepseekV3Config
    # .qk_head_dim; note its .head_dim attribute is qk_rope_head_dim, the RoPE width).
    head_dim = out["qk_nope_head_dim"] + out["qk_rope_head_dim"]
    r.check_int("head_dim (qk_nope_head_dim + qk_rope_head_dim)", head_dim, field="head_dim")
    r.note("head_dim", f"qk_nope_head_dim + qk_rope_head_dim = {head_dim}")
    return head_dim


def map_deepseek_v3(r: Reader) -> dict[str, Any]:
    # DeepseekV3Config: num_key_value_heads=128 when absent, num_attention_heads when null (MLA:
    # the KV cache holds the latent, so this does not size it and need not divide the heads).
    # MoE: its defaults are DeepSeek-V3's own 256 / 8 / 2048, required here;
    # n_shared_experts=1, first_k_dense_replace=3.
    out = read(
        r,
        **CORE,
        intermediate_size=REQ,
        num_attention_heads=REQ,
        num_key_value_heads=kv_heads(128, grouped=False),
        **experts("n_routed_experts", "num_local_experts"),
        moe_intermediate_size=REQ,
        num_shared_experts=dflt(1, "n_shared_experts"),
        first_k_dense_layers=dflt(3, "first_k_dense_replace"),
    )
    # DeepSeek's remote-code config has moe_layer_freq (MoE on every k-th layer); transformers'
    # DeepseekV3 has no such knob (every layer after the first k is MoE), nor has ModelSpec.
    only(r, "moe_layer_freq", 1, "1 (every layer after first_k_dense_replace is MoE)", 1, 1024)
    # MLA ranks and head dims (required); q_lora_rank: DeepseekV3Config default 1536, null means
    # queries are not compressed (DeepSeek-V2-Lite style). DeepseekV3Config:
    # max_position_embeddings=4096, tie_word_embeddings=False, attention_bias=False.
    read(
        r,
        out,
        kv_lora_rank=REQ,
        qk_nope_head_dim=REQ,
        qk_rope_head_dim=REQ,
        v_head_dim=REQ,
        q_lora_rank=nullable(1536),
        head_dim=_qk_head_dim,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        attention_bias=False,
        norms_per_layer=fixed(2, RMS_PAIR),
    )
    notes = "DeepSeek-V3: MLA + DeepSeekMoE"
    _, mtp = r.opt_int("num_nextn_predict_layers", lo=0, hi=1024)
    if isinstance(mtp, int) and mtp:
        notes += f"; {mtp} multi-token-prediction layer(s) not included"
    out["notes"] = notes
    return out


FAMILIES = (
    Family(
        name="deepseek_v3",
        hf_class="DeepseekV3Config (configuration_deepseek_v3.py)",
        map=map_deepseek_v3,
        # Kimi K2 (moonshotai/Kimi-K2-Instruct): DeepseekV3ForCausalLM with its own model_type.
        model_types=("deepseek_v3", "kimi_k2"),
        architectures=("DeepseekV3ForCausalLM",),
    ),
)

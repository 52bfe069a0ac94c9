"""gpt-oss (20B, 120B): MoE on every layer with biased experts and router, a learned attention
sink per head, sliding attention on every other layer, MXFP4 experts."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import (
    REQ,
    Family,
    by_layer_types,
    every_other,
    experts,
    fixed,
    gqa,
    read,
    same_as,
    sliding_window,
    window_layers,
)
from advisor.catalog.hf.reader import Reader


def map_gpt_oss(r: Reader) -> dict[str, Any]:
    # GptOssConfig: num_key_value_heads=8, head_dim=64, sliding_window=128,
    # max_position_embeddings=131072, tie_word_embeddings=False, attention_bias=True; layer_types
    # default alternates sliding (even layers) and full attention. Experts and router always
    # carry biases, every head a learned sink (modeling_gpt_oss.py).
    out = read(
        r,
        **gqa(8),
        intermediate_size=REQ,
        attention_bias=True,
        head_dim=64,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        norms_per_layer=fixed(2),
        **experts("num_local_experts", top_k=("num_experts_per_tok", "experts_per_token")),
        attention_out_bias=same_as(
            "attention_bias", "GptOssAttention: o_proj bias = attention_bias"
        ),
        attention_sinks=fixed(True, "GptOssAttention: one learned sink logit per head"),
        moe_intermediate_size=same_as(
            "intermediate_size", "gpt-oss expert width = intermediate_size"
        ),
        expert_bias=fixed(True, "GptOssExperts and GptOssTopKRouter carry biases"),
    )
    quant = r.cfg.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        out["expert_weights_dtype"] = "mxfp4"
        r.note("expert_weights_dtype", "quantization_config.quant_method mxfp4 (experts)")
    layers = out["num_hidden_layers"]
    count = by_layer_types(r, layers, every_other("GptOssConfig", layers))
    window_layers(r, out, sliding_window(r, 128), count)
    return out


FAMILIES = (
    Family(
        name="gpt_oss",
        hf_class="GptOssConfig (configuration_gpt_oss.py)",
        map=map_gpt_oss,
        model_types=("gpt_oss",),
        architectures=("GptOssForCausalLM",),
    ),
)

"""Llama 4 (Scout, Maverick): MoE on every k-th layer with one shared expert, chunked local
attention on the RoPE layers; a multimodal config whose decoder is ``text_config``."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.errors import PREFIX, HFConfigError, show
from advisor.catalog.hf.mapper import (
    Family,
    dflt,
    experts,
    fixed,
    gqa,
    read,
    req,
    sliding_window,
    window_layers,
)
from advisor.catalog.hf.reader import Reader


def map_llama4(r: Reader) -> dict[str, Any]:
    # Llama4TextConfig: num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
    # interleave_moe_layer_step=1 (MoE layers step-1, 2*step-1, ...), one shared expert per MoE
    # layer (Llama4TextMoe.shared_expert), intermediate_size = expert width,
    # intermediate_size_mlp = dense width (default 16384), attention_chunk_size=8192 on the RoPE
    # layers, no_rope_layers default: layer i is NoPE (global) when (i + 1) % 4 == 0.
    out = read(
        r,
        **gqa(8),
        moe_layer_step=dflt(1, "interleave_moe_layer_step"),
        intermediate_size=dflt(16384, "intermediate_size_mlp"),
        head_dim=128,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        attention_bias=False,
        norms_per_layer=fixed(2),
        **experts("num_local_experts"),
        moe_intermediate_size=req("intermediate_size"),
        num_shared_experts=fixed(1, "Llama4TextMoe: one shared expert per MoE layer"),
    )
    layers, step = out["num_hidden_layers"], out["moe_layer_step"]
    moe_layers = r.cfg.get("moe_layers")
    if moe_layers is not None and moe_layers != list(range(step - 1, layers, step)):
        raise HFConfigError(
            f"{PREFIX}: 'moe_layers'={show(moe_layers)} is not supported; allowed: "
            f"every interleave_moe_layer_step={step}-th layer"
        )

    def chunked() -> tuple[int, str]:
        nope = r.cfg.get("no_rope_layers")
        if nope is None:
            counted = sum(1 for i in range(layers) if (i + 1) % 4)
            return counted, f"no_rope_layers default: {counted} of {layers} RoPE layers are chunked"
        if (
            isinstance(nope, list)
            and len(nope) == layers
            and all(v in (0, 1) and not isinstance(v, bool) for v in nope)
        ):
            counted = sum(nope)
            return counted, f"no_rope_layers: {counted} of {layers} RoPE layers are chunked"
        raise HFConfigError(
            f"{PREFIX}: 'no_rope_layers' must be a list of {layers} values 0 or 1, got {show(nope)}"
        )

    chunk = sliding_window(r, 8192, key="attention_chunk_size", how="attention_chunk_size")
    window_layers(r, out, chunk, chunked)
    if "sliding_window" in out:
        out["window_kind"] = "chunked"
        r.note("window_kind", "Llama 4 chunked local attention")
    return out


FAMILIES = (
    Family(
        name="llama4",
        hf_class="Llama4TextConfig (configuration_llama4.py)",
        map=map_llama4,
        model_types=("llama4", "llama4_text"),
        architectures=("Llama4ForConditionalGeneration", "Llama4ForCausalLM"),
        text_config=True,
    ),
)

"""Mistral and Mixtral: the Llama block without attention bias, with a sliding window on every
layer; Mixtral's layers are all MoE."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.families.llama import llama_like
from advisor.catalog.hf.mapper import (
    Family,
    experts,
    fixed,
    read,
    same_as,
    sliding_window,
    window_layers,
)
from advisor.catalog.hf.reader import Reader

MISTRAL = "MistralConfig (configuration_mistral.py)"
MIXTRAL = "MixtralConfig (configuration_mixtral.py)"


def _every_layer(r: Reader, out: dict[str, Any], window: int | None) -> dict[str, Any]:
    layers = out["num_hidden_layers"]
    window_layers(r, out, window, lambda: (layers, f"{layers} of {layers} layers use the window"))
    return out


def map_mistral(r: Reader) -> dict[str, Any]:
    # MistralConfig: num_key_value_heads=8 when absent (num_attention_heads when null),
    # max_position_embeddings=4096 * 32, no attention bias; sliding_window=4096 when absent,
    # null = full attention.
    out = read(
        r, **llama_like(8, 131072, fixed(False, f"transformers {MISTRAL}: no attention bias"))
    )
    return _every_layer(r, out, sliding_window(r, 4096))


def map_mixtral(r: Reader) -> dict[str, Any]:
    # MixtralConfig: as MistralConfig but sliding_window=None (full attention) unless set;
    # num_local_experts (default 8) experts of width intermediate_size, top num_experts_per_tok
    # (default 2): required here, not defaulted (they set the model size).
    out = read(
        r, **llama_like(8, 131072, fixed(False, f"transformers {MIXTRAL}: no attention bias"))
    )
    _every_layer(r, out, sliding_window(r, None))
    return read(
        r,
        out,
        **experts("num_local_experts"),
        moe_intermediate_size=same_as(
            "intermediate_size", "Mixtral expert width = intermediate_size"
        ),
    )


FAMILIES = (
    Family(
        name="mistral",
        hf_class=MISTRAL,
        map=map_mistral,
        model_types=("mistral",),
        architectures=("MistralForCausalLM",),
    ),
    Family(
        name="mixtral",
        hf_class=MIXTRAL,
        map=map_mixtral,
        model_types=("mixtral",),
        architectures=("MixtralForCausalLM",),
    ),
)

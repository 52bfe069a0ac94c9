"""Llama (LlamaForCausalLM), and the Llama-style block Mistral, Mixtral and Qwen2 share."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import (
    CORE,
    REQ,
    RMS_PAIR,
    Family,
    Step,
    derived_head_dim,
    fixed,
    kv_heads,
    read,
)
from advisor.catalog.hf.reader import Reader


def llama_like(kv_default: int | None, max_positions: int, attention_bias: Step | bool) -> dict:
    """The fields of a Llama-style decoder, in the order they are read: KV heads absent mean
    ``kv_default`` (None: MHA) and null mean MHA; head_dim absent or null is
    hidden_size // num_attention_heads (LlamaConfig / MistralConfig / MixtralConfig head_dim=None;
    modeling_qwen2.py getattr(config, "head_dim", hidden_size // num_attention_heads));
    tie_word_embeddings=False in all four classes."""
    return {
        **CORE,
        "intermediate_size": REQ,
        "num_attention_heads": REQ,
        "num_key_value_heads": kv_heads(kv_default),
        "head_dim": derived_head_dim,
        "max_position_embeddings": max_positions,
        "tie_word_embeddings": False,
        "attention_bias": attention_bias,
        "norms_per_layer": fixed(2, RMS_PAIR),
    }


def map_llama(r: Reader) -> dict[str, Any]:
    # LlamaConfig: num_key_value_heads=None -> num_attention_heads, max_position_embeddings=2048,
    # attention_bias=False (bias on q/k/v/o projections).
    return read(r, **llama_like(None, 2048, False))


FAMILIES = (
    Family(
        name="llama",
        hf_class="LlamaConfig (configuration_llama.py)",
        map=map_llama,
        model_types=("llama",),
        architectures=("LlamaForCausalLM",),
    ),
)

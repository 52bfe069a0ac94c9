"""Gemma 2 and Gemma 3: four norms per layer, a fixed head_dim, tied embeddings and local
(sliding) attention on some layers; Gemma 3 adds QK norm and ships as a multimodal config."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import (
    CORE,
    REQ,
    Family,
    by_layer_types,
    every_other,
    fixed,
    kv_heads,
    read,
    sliding_window,
    window_layers,
)
from advisor.catalog.hf.reader import ABSENT, Reader

GEMMA2 = "Gemma2Config (configuration_gemma2.py)"


def map_gemma2(r: Reader) -> dict[str, Any]:
    # Gemma2Config: num_key_value_heads=4 when absent (null refused), head_dim=256 (not derived
    # from hidden_size: 27B has 32 * 128 != 4608), max_position_embeddings=8192,
    # tie_word_embeddings=True, attention_bias=False. modeling_gemma2.py Gemma2DecoderLayer:
    # input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
    # post_feedforward_layernorm.
    out = read(
        r,
        **CORE,
        intermediate_size=REQ,
        num_attention_heads=REQ,
        num_key_value_heads=kv_heads(4, null_means_heads=False),
        head_dim=256,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        attention_bias=False,
        norms_per_layer=fixed(
            4, "Gemma2DecoderLayer has 4 RMSNorms (transformers modeling_gemma2.py)"
        ),
    )
    # sliding_window=4096 when absent (null = none), on every other layer unless layer_types
    # says otherwise (= layers // 2 for the even layer counts of all released Gemma-2 models).
    layers = out["num_hidden_layers"]
    count = by_layer_types(r, layers, every_other("Gemma2Config", layers))
    window_layers(r, out, sliding_window(r, 4096), count)
    return out


def map_gemma3(r: Reader) -> dict[str, Any]:
    # Gemma3TextConfig: vocab_size=262208, num_key_value_heads=4, head_dim=256,
    # max_position_embeddings=131072, tie_word_embeddings=True, attention_bias=False,
    # sliding_window=4096, layer_types default: sliding unless (i + 1) % sliding_window_pattern
    # (6) == 0. Gemma3DecoderLayer: 4 RMSNorms + q_norm, k_norm.
    out = read(
        r,
        num_hidden_layers=REQ,
        hidden_size=REQ,
        num_attention_heads=REQ,
        num_key_value_heads=kv_heads(4, null_means_heads=False),
        intermediate_size=REQ,
        head_dim=256,
        vocab_size=262208,
        max_position_embeddings=131072,
        tie_word_embeddings=True,
        attention_bias=False,
        qk_norm=fixed(True, "Gemma3Attention: q_norm and k_norm"),
        norms_per_layer=fixed(4, "Gemma3DecoderLayer has 4 RMSNorms"),
    )
    layers = out["num_hidden_layers"]

    def by_pattern() -> tuple[int, str]:
        _, pattern = r.opt_int("sliding_window_pattern", lo=1, hi=1024)
        pattern = 6 if pattern in (ABSENT, None) else pattern
        counted = sum(1 for i in range(layers) if (i + 1) % pattern)
        return counted, f"sliding_window_pattern {pattern}: {counted} of {layers} layers are local"

    window_layers(r, out, sliding_window(r, 4096), by_layer_types(r, layers, by_pattern))
    return out


FAMILIES = (
    Family(
        name="gemma2",
        hf_class=GEMMA2,
        map=map_gemma2,
        model_types=("gemma2",),
        architectures=("Gemma2ForCausalLM",),
    ),
    Family(
        name="gemma3",
        hf_class="Gemma3TextConfig (configuration_gemma3.py)",
        map=map_gemma3,
        model_types=("gemma3", "gemma3_text"),
        architectures=("Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"),
        text_config=True,
    ),
)

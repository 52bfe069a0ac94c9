"""Qwen2 (Qwen2.5): the Llama block with Q/K/V bias always on, and an optional sliding window on
the upper layers."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.families.llama import llama_like
from advisor.catalog.hf.mapper import Family, fixed, read, sliding_window, window_layers
from advisor.catalog.hf.reader import ABSENT, Reader


def map_qwen2(r: Reader) -> dict[str, Any]:
    # Qwen2Config: num_key_value_heads=32 when absent (num_attention_heads when null),
    # max_position_embeddings=32768. modeling_qwen2.py: q_proj/k_proj/v_proj are
    # nn.Linear(..., bias=True) whatever the config says (Qwen2Config has no attention_bias).
    bias = fixed(True, "Qwen2 always has Q/K/V bias: transformers modeling_qwen2.py")
    out = read(r, **llama_like(32, 32768, bias))
    # use_sliding_window=False -> sliding_window=None whatever its value; otherwise
    # sliding_window (default 4096) on layers i >= max_window_layers (default 28), unless
    # layer_types lists them.
    use_sw, _ = r.opt_bool("use_sliding_window", False)
    if use_sw:
        layers = out["num_hidden_layers"]

        def count() -> tuple[int, str]:
            counted = r.layer_types(layers)
            if counted is None:
                _, mwl = r.opt_int("max_window_layers", lo=0, hi=1024)
                mwl = 28 if mwl is ABSENT or mwl is None else mwl
                counted = max(0, layers - mwl)
            return counted, f"{counted} of {layers} layers use the window"

        window_layers(r, out, sliding_window(r, 4096), count)
    return out


FAMILIES = (
    Family(
        name="qwen2",
        hf_class="Qwen2Config (configuration_qwen2.py)",
        map=map_qwen2,
        model_types=("qwen2",),
        architectures=("Qwen2ForCausalLM",),
    ),
)

"""Falcon (7B/40B/180B, and the pre-transformers RefinedWeb remote-code configs): its own key
names, multi-query or grouped KV heads, a plain GeLU MLP and LayerNorm."""

from __future__ import annotations

from typing import Any

from advisor.catalog.hf.mapper import Family, check_gqa, dflt, read, req
from advisor.catalog.hf.reader import ABSENT, Reader


def map_falcon(r: Reader) -> dict[str, Any]:
    # FalconConfig attribute_map: n_layer -> num_hidden_layers, n_head -> num_attention_heads;
    # n_embed -> hidden_size (backward compatibility); n_head_kv -> num_kv_heads.
    core = read(
        r,
        num_hidden_layers=req("num_hidden_layers", "n_layer"),
        hidden_size=req("hidden_size", "n_embed"),
        vocab_size=req("vocab_size"),
        num_attention_heads=req("num_attention_heads", "n_head"),
    )
    hidden, heads = core["hidden_size"], core["num_attention_heads"]
    heads_key = "num_attention_heads" if "num_attention_heads" in r.cfg else "n_head"

    remote_code = r.cfg.get("model_type") in ("RefinedWeb", "RefinedWebModel") or (
        "RWForCausalLM" in (r.cfg.get("architectures") or [])
    )
    kv_key, kv_raw = r.opt_int("num_kv_heads", "n_head_kv", field="num_key_value_heads")
    # FalconConfig: new_decoder_architecture=False. A remote-code (RefinedWeb) config has no
    # such key: transformers' convert_custom_code_checkpoint.py sets it True exactly when
    # n_head_kv is present (falcon-40b), False otherwise (falcon-7b).
    new_default = remote_code and "n_head_kv" in r.cfg
    new_arch, _ = r.opt_bool("new_decoder_architecture", new_default)
    # FalconConfig: multi_query=True (ignored when new_decoder_architecture), parallel_attn=True,
    # bias=False.
    multi_query, _ = r.opt_bool("multi_query", True)
    parallel_attn, _ = r.opt_bool("parallel_attn", True)

    # FalconConfig: num_kv_heads=None -> num_attention_heads; FalconAttention then uses
    # config.num_kv_heads if (new_decoder_architecture or not multi_query) else 1.
    if new_arch or not multi_query:
        if kv_raw is ABSENT or kv_raw is None:
            kv = heads
            r.note(
                "num_key_value_heads",
                f"{kv_key!r} absent: transformers FalconConfig sets num_kv_heads="
                f"num_attention_heads={heads}",
            )
        else:
            kv = kv_raw
            r.note("num_key_value_heads")
    else:
        kv = 1
        r.note(
            "num_key_value_heads",
            "multi_query=true without new_decoder_architecture: one KV head "
            "(transformers modeling_falcon.py FalconAttention)",
        )
    check_gqa(heads, kv, heads_key, kv_key)

    # FalconConfig.head_dim = hidden_size // num_attention_heads.
    head_dim = hidden // heads
    r.check_int("head_dim (hidden_size // num_attention_heads)", head_dim, field="head_dim")
    r.note("head_dim", f"FalconConfig.head_dim = hidden_size // num_attention_heads = {head_dim}")

    # FalconConfig: ffn_hidden_size=None -> 4 * hidden_size (GeLU MLP, two matrices).
    k, ffn = r.opt_int("ffn_hidden_size", field="intermediate_size")
    if ffn is ABSENT or ffn is None:
        ffn = 4 * hidden
        r.check_int("ffn_hidden_size (4 * hidden_size)", ffn, field="intermediate_size")
        r.note("intermediate_size", f"{k!r} absent: FalconConfig uses 4 * hidden_size = {ffn}")
    else:
        r.note("intermediate_size")

    # FalconConfig: max_position_embeddings=2048; it does not set tie_word_embeddings, so
    # PretrainedConfig's default True applies.
    tail = read(
        r,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        attention_bias=dflt(False, "bias"),
    )

    # modeling_falcon.py FalconDecoderLayer: num_ln_in_parallel_attn=None becomes 2 with the new
    # decoder architecture; not parallel_attn -> input + post_attention LayerNorm (2); parallel
    # with num_ln_in_parallel_attn == 2 -> ln_attn + ln_mlp (2); otherwise input_layernorm (1).
    _, n_ln = r.opt_int("num_ln_in_parallel_attn", lo=1, hi=2)
    if n_ln is ABSENT or n_ln is None:
        n_ln = 2 if new_arch else None
    norms = 2 if not parallel_attn or n_ln == 2 else 1
    r.note("norms_per_layer", f"FalconDecoderLayer LayerNorms: {norms}")
    r.note("norm_kind", "Falcon uses LayerNorm with bias")
    r.note("mlp_kind", "Falcon MLP: dense_h_to_4h, GeLU, dense_4h_to_h")
    return {
        **core,
        **tail,
        "intermediate_size": ffn,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "mlp_kind": "plain",
        "norm_kind": "layernorm",
        "norms_per_layer": norms,
        "notes": (
            f"Falcon: new_decoder_architecture={new_arch}, parallel_attn={parallel_attn}, "
            f"multi_query={multi_query}"
        ),
    }


FAMILIES = (
    Family(
        name="falcon",
        hf_class="FalconConfig (configuration_falcon.py)",
        map=map_falcon,
        # "RefinedWeb" / "RefinedWebModel" are the pre-transformers Falcon remote-code names
        # (tiiuae/falcon-40b / falcon-7b before the 2023 conversion).
        model_types=("falcon", "RefinedWeb", "RefinedWebModel"),
        architectures=("FalconForCausalLM", "RWForCausalLM"),
    ),
)

"""Tests for advisor.catalog.hf (Hugging Face config.json -> ModelSpec).

Fixtures in tests/fixtures/hf/ are config.json files as Hugging Face publishes them (extra keys
such as torch_dtype, rope_scaling, bos_token_id, quantization_config included, and ignored by the
importer). The expected values are those of data/reference/models.yaml, which cites the
config.json copies each was read from; defaults are the transformers configuration classes'.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.catalog.hf import (
    SUPPORTED_FAMILIES,
    HFConfigError,
    detect_family,
    load_hf_config_bytes,
    load_hf_config_file,
    model_from_hf_config,
)
from advisor.catalog.specs import ModelSpec

FIXTURES = Path(__file__).parent / "fixtures" / "hf"

# Expected ModelSpec values per fixture, from data/reference/models.yaml (same-named entries).
COMMON_DENSE = {"num_experts": None, "kv_lora_rank": None, "first_k_dense_layers": 0}
EXPECTED: dict[str, dict[str, Any]] = {
    # models.yaml Llama-2-70B: 80 layers, 8192, 28672, 64/8 heads, head_dim 128, vocab 32000,
    # max_pos 4096, untied.
    "llama-2-70b": {
        "family": "llama",
        "num_hidden_layers": 80,
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "norm_kind": "rmsnorm",
        "mlp_kind": "gated",
        "norms_per_layer": 2,
        "sliding_window": None,
        **COMMON_DENSE,
    },
    # models.yaml Llama-3.1-8B: 32 layers, 4096, 14336, 32/8 heads, 128, vocab 128256, 131072.
    "llama-3.1-8b": {
        "family": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "sliding_window": None,
        **COMMON_DENSE,
    },
    # models.yaml Mistral-7B-v0.1: as Llama-3.1-8B's shape but vocab 32000, max_pos 32768 and a
    # 4096-token sliding window on every layer (32).
    "mistral-7b-v0.1": {
        "family": "mistral",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "sliding_window": 4096,
        "num_sliding_window_layers": 32,
        **COMMON_DENSE,
    },
    # models.yaml Mixtral-8x7B: 8 experts of 14336, top-2, every layer MoE, sliding_window null.
    "mixtral-8x7b": {
        "family": "mixtral",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 14336,
        "num_shared_experts": 0,
        "first_k_dense_layers": 0,
        "sliding_window": None,
        "num_sliding_window_layers": 0,
        "tie_word_embeddings": False,
    },
    # models.yaml Qwen2.5-72B: 80 layers, 8192, 29568, 64/8, 128, vocab 152064, max_pos 32768,
    # Q/K/V bias; use_sliding_window false -> no window although sliding_window is 131072.
    "qwen2.5-72b": {
        "family": "qwen2",
        "num_hidden_layers": 80,
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": True,
        "sliding_window": None,
        "num_sliding_window_layers": 0,
        **COMMON_DENSE,
    },
    # models.yaml Gemma-2-27B: 46 layers, 4608, 36864, 32/16 heads of 128 (32*128 != 4608),
    # vocab 256000, 8192, tied (Gemma2Config default; the key is absent from the file), window
    # 4096 on every other layer: 23 layers; 4 RMSNorms per layer (Gemma2DecoderLayer).
    "gemma-2-27b": {
        "family": "gemma2",
        "num_hidden_layers": 46,
        "hidden_size": 4608,
        "intermediate_size": 36864,
        "num_attention_heads": 32,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "sliding_window": 4096,
        "num_sliding_window_layers": 23,
        "norms_per_layer": 4,
        **COMMON_DENSE,
    },
    # models.yaml Falcon-180B: 80 layers, 14848, FFN 4*14848 = 59392, 232/8 heads of
    # 14848/232 = 64, vocab 65024, max_pos 2048 (FalconConfig default; absent from the file),
    # tied (PretrainedConfig default), plain GeLU MLP, LayerNorm, 2 norms (ln_attn, ln_mlp).
    "falcon-180b": {
        "family": "falcon",
        "num_hidden_layers": 80,
        "hidden_size": 14848,
        "intermediate_size": 59392,
        "num_attention_heads": 232,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 65024,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "mlp_kind": "plain",
        "norm_kind": "layernorm",
        "norms_per_layer": 2,
        "attention_bias": False,
        "sliding_window": None,
        **COMMON_DENSE,
    },
    # models.yaml DeepSeek-V3: 61 layers (3 dense), 7168, dense FFN 18432, experts 256 routed +
    # 1 shared of 2048, top-8, 128 heads, q_lora 1536, kv_lora 512, nope 128 + rope 64 = 192,
    # v 128, vocab 129280, max_pos 163840 (YaRN x40 over 4096), untied.
    "deepseek-v3": {
        "family": "deepseek_v3",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "head_dim": 192,
        "vocab_size": 129280,
        "max_position_embeddings": 163840,
        "tie_word_embeddings": False,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048,
        "num_shared_experts": 1,
        "first_k_dense_layers": 3,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "sliding_window": None,
    },
}

# models.yaml derived_kv_cache_bytes_per_token_bf16 (2 * layers * kv_heads * head_dim * 2 B).
EXPECTED_KV_BYTES = {
    "llama-2-70b": 327680,
    "llama-3.1-8b": 131072,
    "mistral-7b-v0.1": 131072,
    "mixtral-8x7b": 131072,
    "qwen2.5-72b": 327680,
    "gemma-2-27b": 376832,
    "falcon-180b": 163840,
}


def _load(name: str) -> dict[str, Any]:
    return load_hf_config_file(FIXTURES / f"{name}.json")


def _llama(**overrides: Any) -> dict[str, Any]:
    cfg = _load("llama-3.1-8b")
    cfg.update(overrides)
    return cfg


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_imports_to_reference_values(name: str) -> None:
    spec = model_from_hf_config(_load(name), name=name, source=f"tests/fixtures/hf/{name}.json")
    assert isinstance(spec, ModelSpec)
    got = {k: getattr(spec, k) for k in EXPECTED[name]}
    assert got == EXPECTED[name]
    assert spec.id == name
    # Every field the spec requires a source for, and every imported field, is sourced.
    assert "num_hidden_layers" in spec.sources
    assert all(v.startswith(f"tests/fixtures/hf/{name}.json") for v in spec.sources.values())


@pytest.mark.parametrize("name", sorted(EXPECTED_KV_BYTES))
def test_fixture_kv_bytes_match_reference(name: str) -> None:
    spec = model_from_hf_config(_load(name))
    kv = 2 * spec.num_hidden_layers * spec.num_key_value_heads * spec.head_dim * 2
    assert kv == EXPECTED_KV_BYTES[name]


def test_deepseek_mla_and_moe_properties() -> None:
    spec = model_from_hf_config(_load("deepseek-v3"))
    assert spec.attention_kind == "MLA"
    assert spec.num_moe_layers == 58  # 61 layers - first_k_dense_replace 3
    # models.yaml derived_kv_cache: (kv_lora_rank 512 + rope 64) * 61 layers * 2 B = 70,272 B.
    assert (spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.num_hidden_layers * 2 == 70272


def test_defaults_are_cited() -> None:
    spec = model_from_hf_config(_load("gemma-2-27b"))
    assert "Gemma2Config" in spec.sources["tie_word_embeddings"]
    spec = model_from_hf_config(_load("falcon-180b"))
    assert "2048" in spec.sources["max_position_embeddings"]
    assert "4 * hidden_size" in spec.sources["intermediate_size"]


def test_model_id_defaults() -> None:
    # _name_or_path wins over model_type; name wins over both.
    assert model_from_hf_config(_load("llama-2-70b")).id == "meta-llama-llama-2-70b-hf"
    assert model_from_hf_config(_load("llama-2-70b")).name == "meta-llama/Llama-2-70b-hf"
    assert model_from_hf_config(_load("mixtral-8x7b")).id == "mixtral"
    assert model_from_hf_config(_load("mixtral-8x7b"), name="Mixtral 8x7B").id == "mixtral-8x7b"
    assert model_from_hf_config(_load("mixtral-8x7b"), model_id="mx").id == "mx"
    assert model_from_hf_config(_load("deepseek-v3")).id == "deepseek-v3"


def test_llama_defaults_from_llamaconfig() -> None:
    # LlamaConfig: num_key_value_heads None -> num_attention_heads; head_dim None ->
    # hidden_size // num_attention_heads; max_position_embeddings 2048; untied.
    cfg = {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "vocab_size": 32000,
    }
    spec = model_from_hf_config(cfg)
    assert (spec.num_key_value_heads, spec.head_dim) == (32, 4096 // 32)
    assert (spec.max_position_embeddings, spec.tie_word_embeddings) == (2048, False)
    assert spec.attention_kind == "MHA"


def test_mistral_null_sliding_window_means_full_attention() -> None:
    cfg = _load("mistral-7b-v0.1") | {"sliding_window": None}
    spec = model_from_hf_config(cfg)
    assert (spec.sliding_window, spec.num_sliding_window_layers) == (None, 0)
    # Absent: MistralConfig default 4096 on all layers.
    cfg = {k: v for k, v in _load("mistral-7b-v0.1").items() if k != "sliding_window"}
    spec = model_from_hf_config(cfg)
    assert (spec.sliding_window, spec.num_sliding_window_layers) == (4096, 32)


def test_qwen2_use_sliding_window_uses_max_window_layers() -> None:
    # Qwen2Config layer_types: sliding on layers i >= max_window_layers: 80 - 70 = 10 layers.
    cfg = _load("qwen2.5-72b") | {
        "use_sliding_window": True,
        "sliding_window": 4096,
        "max_window_layers": 70,
    }
    spec = model_from_hf_config(cfg)
    assert (spec.sliding_window, spec.num_sliding_window_layers) == (4096, 10)


def test_gemma2_layer_types_override() -> None:
    types = ["full_attention"] * 40 + ["sliding_attention"] * 6
    spec = model_from_hf_config(_load("gemma-2-27b") | {"layer_types": types})
    assert spec.num_sliding_window_layers == 6


def test_falcon_refinedweb_naming() -> None:
    # tiiuae/falcon-40b's original remote-code config.json (model_type RefinedWeb): n_head,
    # n_head_kv, n_layer; n_head_kv implies the new decoder architecture
    # (transformers falcon/convert_custom_code_checkpoint.py).
    cfg = {
        "alibi": False,
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["RWForCausalLM"],
        "bias": False,
        "bos_token_id": 11,
        "eos_token_id": 11,
        "hidden_size": 8192,
        "model_type": "RefinedWeb",
        "n_head": 128,
        "n_head_kv": 8,
        "n_layer": 60,
        "parallel_attn": True,
        "torch_dtype": "bfloat16",
        "vocab_size": 65024,
    }
    spec = model_from_hf_config(cfg, name="falcon-40b")
    assert spec.family == "falcon"
    assert (spec.num_hidden_layers, spec.num_attention_heads, spec.num_key_value_heads) == (
        60,
        128,
        8,
    )
    # falcon-40b: head_dim 8192/128 = 64, FFN 4 * 8192 = 32768 (llama.cpp falcon log: n_ff 32768).
    assert (spec.head_dim, spec.intermediate_size, spec.norms_per_layer) == (64, 32768, 2)


def test_falcon_7b_multi_query() -> None:
    # tiiuae/falcon-7b: 71 heads, multi_query, no new decoder -> 1 KV head, 1 LayerNorm per
    # layer (parallel attention, input_layernorm only); head_dim 4544/71 = 64.
    cfg = {
        "architectures": ["FalconForCausalLM"],
        "model_type": "falcon",
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "num_hidden_layers": 32,
        "multi_query": True,
        "new_decoder_architecture": False,
        "parallel_attn": True,
        "vocab_size": 65024,
    }
    spec = model_from_hf_config(cfg)
    assert (spec.num_key_value_heads, spec.head_dim, spec.norms_per_layer) == (1, 64, 1)
    assert spec.attention_kind == "MQA"


def test_detect_family_conflict() -> None:
    with pytest.raises(HFConfigError, match="disagrees"):
        detect_family({"model_type": "llama", "architectures": ["Gemma2ForCausalLM"]})


# ------------------------------------------------------------------------------------------
# Bad input: every case an HFConfigError whose message names the field / problem.
# ------------------------------------------------------------------------------------------


def test_unknown_architecture() -> None:
    cfg = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "hidden_size": 6144}
    with pytest.raises(HFConfigError) as exc:
        model_from_hf_config(cfg)
    msg = str(exc.value)
    assert "GPTNeoXForCausalLM" in msg and "gpt_neox" in msg
    assert all(f in msg for f in SUPPORTED_FAMILIES)


def test_missing_family_keys() -> None:
    with pytest.raises(HFConfigError, match="model_type"):
        model_from_hf_config({"hidden_size": 4096})


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("llama-3.1-8b", "num_attention_heads"),
        ("llama-3.1-8b", "hidden_size"),
        ("mixtral-8x7b", "num_local_experts"),
        ("deepseek-v3", "kv_lora_rank"),
        ("falcon-180b", "vocab_size"),
    ],
)
def test_missing_field(fixture: str, key: str) -> None:
    cfg = {k: v for k, v in _load(fixture).items() if k != key}
    with pytest.raises(HFConfigError, match=f"missing '{key}'"):
        model_from_hf_config(cfg)


def test_malformed_json() -> None:
    with pytest.raises(HFConfigError, match="malformed JSON"):
        load_hf_config_bytes(b'{"model_type": "llama", "hidden_size": 4096,, }')


def test_truncated_file(tmp_path: Path) -> None:
    data = (FIXTURES / "llama-3.1-8b.json").read_bytes()
    p = tmp_path / "config.json"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(HFConfigError, match="truncated JSON"):
        load_hf_config_file(p)


def test_duplicate_keys() -> None:
    data = b'{"model_type": "llama", "num_hidden_layers": 32, "num_hidden_layers": 80}'
    with pytest.raises(HFConfigError, match="duplicate key 'num_hidden_layers'"):
        load_hf_config_bytes(data)


def test_two_megabyte_file(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_bytes(b'{"pad": "' + b"x" * 2_000_000 + b'"}')
    with pytest.raises(HFConfigError, match=r"2,000,011 bytes; the limit is 1,000,000 bytes"):
        load_hf_config_file(p)
    with pytest.raises(HFConfigError, match="1,000,000-byte limit"):
        load_hf_config_bytes(p.read_bytes())


def test_hundred_deep_nesting() -> None:
    data = b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}"
    with pytest.raises(HFConfigError, match="nesting deeper than 20"):
        load_hf_config_bytes(data)
    # Far deeper than Python's recursion limit: still a clean HFConfigError.
    with pytest.raises(HFConfigError, match="nesting"):
        load_hf_config_bytes(b"[" * 500_000)
    # Brackets inside strings do not count.
    text = '{"a": "' + "[" * 40 + '\\"{{{"}'
    assert load_hf_config_bytes(text.encode()) == {"a": "[" * 40 + '"{{{'}


def test_non_utf8_bytes() -> None:
    data = '{"model_type": "llama", "name": "caf\u00e9"}'.encode("latin-1")
    with pytest.raises(HFConfigError, match="not UTF-8"):
        load_hf_config_bytes(data)


def test_top_level_must_be_object() -> None:
    with pytest.raises(HFConfigError, match="top level must be a JSON object"):
        load_hf_config_bytes(b"[1, 2, 3]")


def test_nan_refused() -> None:
    with pytest.raises(HFConfigError, match="NaN"):
        load_hf_config_bytes(b'{"rope_theta": NaN}')


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HFConfigError, match="cannot read"):
        load_hf_config_file(tmp_path / "nope.json")


def test_string_where_int_expected() -> None:
    with pytest.raises(HFConfigError) as exc:
        model_from_hf_config(_llama(num_hidden_layers="32"))
    msg = str(exc.value)
    assert "'num_hidden_layers'" in msg and "'32'" in msg and "from 1 to 1024" in msg


def test_bool_where_int_expected() -> None:
    with pytest.raises(HFConfigError, match="'num_key_value_heads' must be an integer.*True"):
        model_from_hf_config(_llama(num_key_value_heads=True))


def test_float_where_int_expected() -> None:
    with pytest.raises(HFConfigError, match="'hidden_size' must be an integer"):
        model_from_hf_config(_llama(hidden_size=4096.0))


@pytest.mark.parametrize("value", [-8, 0])
def test_non_positive_heads(value: int) -> None:
    with pytest.raises(HFConfigError, match=rf"'num_attention_heads'={value} is out of range"):
        model_from_hf_config(_llama(num_attention_heads=value))


def test_falcon_negative_heads_names_config_key() -> None:
    cfg = {k: v for k, v in _load("falcon-180b").items() if k != "num_attention_heads"}
    with pytest.raises(HFConfigError, match=r"'n_head' \(num_attention_heads\)=-232"):
        model_from_hf_config(cfg | {"n_head": -232})


def test_heads_not_divisible_by_kv_heads() -> None:
    with pytest.raises(HFConfigError) as exc:
        model_from_hf_config(_llama(num_key_value_heads=5))
    msg = str(exc.value)
    assert "num_attention_heads=32" in msg and "num_key_value_heads=5" in msg
    with pytest.raises(HFConfigError, match="num_kv_heads=7"):
        model_from_hf_config(_load("falcon-180b") | {"num_kv_heads": 7})


def test_spec_cross_field_check_is_one_line() -> None:
    # first_k_dense_replace beyond the layer count: caught by ModelSpec, re-raised as one line.
    with pytest.raises(HFConfigError) as exc:
        model_from_hf_config(_load("deepseek-v3") | {"first_k_dense_replace": 62})
    msg = str(exc.value)
    assert "first_k_dense_layers=62" in msg and "\n" not in msg


def test_bad_model_id() -> None:
    with pytest.raises(HFConfigError, match="id="):
        model_from_hf_config(_llama(), model_id="Not A Slug!")


def test_unsupported_moe_layer_freq() -> None:
    with pytest.raises(HFConfigError, match="'moe_layer_freq'=2"):
        model_from_hf_config(_load("deepseek-v3") | {"moe_layer_freq": 2})


def test_gemma2_bad_layer_types() -> None:
    with pytest.raises(HFConfigError, match="layer_types"):
        model_from_hf_config(_load("gemma-2-27b") | {"layer_types": ["sliding_attention"] * 3})


# ------------------------------------------------------------------------------------------
# Property tests: whatever comes in, the only exception is HFConfigError.
# ------------------------------------------------------------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
_KNOWN_KEYS = sorted({k for name in EXPECTED for k in _load(name)} | {"n_head", "n_layer"})
_model_types = st.sampled_from(
    ["llama", "mistral", "mixtral", "qwen2", "gemma2", "falcon", "RefinedWeb", "deepseek_v3"]
)
_plausible_ints = st.integers(min_value=-3, max_value=300) | st.sampled_from([4096, 8192, 2**31])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=st.dictionaries(st.text(max_size=10), _json_values, max_size=8))
def test_random_dicts_only_raise_hfconfigerror(cfg: dict[str, Any]) -> None:
    try:
        spec = model_from_hf_config(cfg)
    except HFConfigError:
        return
    assert isinstance(spec, ModelSpec)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model_type=_model_types,
    fields=st.dictionaries(
        st.sampled_from(_KNOWN_KEYS), _plausible_ints | _json_scalars, max_size=len(_KNOWN_KEYS)
    ),
    base=st.sampled_from(sorted(EXPECTED)),
)
def test_mutated_configs_only_raise_hfconfigerror(
    model_type: str, fields: dict[str, Any], base: str
) -> None:
    cfg = _load(base) | fields | {"model_type": model_type}
    cfg.pop("architectures", None)
    try:
        spec = model_from_hf_config(cfg)
    except HFConfigError:
        return
    assert isinstance(spec, ModelSpec)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_only_raise_hfconfigerror(data: bytes) -> None:
    try:
        cfg = load_hf_config_bytes(data)
    except HFConfigError:
        return
    try:
        spec = model_from_hf_config(cfg)
    except HFConfigError:
        return
    assert isinstance(spec, ModelSpec)


@settings(max_examples=200, deadline=None)
@given(value=_json_values)
def test_random_json_text_only_raises_hfconfigerror(value: Any) -> None:
    data = json.dumps(value).encode()
    try:
        cfg = load_hf_config_bytes(data)
    except HFConfigError:
        return
    assert isinstance(cfg, dict)
    try:
        spec = model_from_hf_config(cfg)
    except HFConfigError:
        return
    assert isinstance(spec, ModelSpec)


# ------------------------------------------------------------------------------------------
# Issue 17 families: each official config.json (tests/fixtures/hf/SOURCES.md names the
# repository and commit it was copied from) imports to the catalog entry built from it.
# ------------------------------------------------------------------------------------------

ISSUE17_FIXTURES = [
    "llama-3.3-70b",
    "qwen3-8b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "deepseek-r1",
    "kimi-k2",
    "llama-4-scout",
    "llama-4-maverick",
    "qwen3-coder-480b-a35b",
    "minimax-m2",
]
# Fields a config.json does not carry: identity, notes and the publisher's headline counts.
_NOT_FROM_CONFIG = {
    "id",
    "name",
    "sources",
    "notes",
    "published_params",
    "published_active_params",
    "published_active_excludes_embedding",
    "published_active_excludes_lm_head",
    "published_params_scope",
}


@pytest.mark.parametrize("name", ISSUE17_FIXTURES)
def test_issue17_fixture_round_trips_to_the_catalog_entry(name: str) -> None:
    from advisor.catalog import get_model

    spec = model_from_hf_config(_load(name), source=f"tests/fixtures/hf/{name}.json")
    entry = get_model(name)
    for field in ModelSpec.model_fields:
        if field not in _NOT_FROM_CONFIG:
            assert getattr(spec, field) == getattr(entry, field), field


def test_gpt_oss_layout_from_config() -> None:
    # openai/gpt-oss-120b config.json: layer_types alternate sliding/full (18 each), window 128,
    # quantization_config mxfp4; experts_per_token and num_experts_per_tok agree (4).
    spec = model_from_hf_config(_load("gpt-oss-120b"))
    assert (spec.sliding_window, spec.num_sliding_window_layers) == (128, 18)
    assert spec.expert_weights_dtype == "mxfp4" and spec.attention_sinks and spec.expert_bias
    assert "layer_types" in spec.sources["num_sliding_window_layers"]
    bad = _load("gpt-oss-120b") | {"experts_per_token": 2}
    with pytest.raises(HFConfigError, match="disagree"):
        model_from_hf_config(bad)


def test_llama4_reads_text_config_and_names_nested_keys() -> None:
    # Llama-4-Maverick config.json text_config: interleave_moe_layer_step 2 -> 24 MoE layers;
    # attention_chunk_size 8192 on the 36 RoPE layers (Llama4TextConfig no_rope_layers default).
    spec = model_from_hf_config(_load("llama-4-maverick"))
    assert spec.num_moe_layers == 24 and spec.window_kind == "chunked"
    assert spec.sources["num_hidden_layers"].endswith("(text_config)")
    cfg = _load("llama-4-maverick")
    del cfg["text_config"]["num_local_experts"]
    with pytest.raises(HFConfigError, match=r"'text_config\.num_local_experts'"):
        model_from_hf_config(cfg)


def test_kimi_k2_model_type_is_deepseek_v3() -> None:
    # moonshotai/Kimi-K2-Instruct config.json: model_type kimi_k2, DeepseekV3ForCausalLM.
    assert detect_family({"model_type": "kimi_k2"}) == "deepseek_v3"
    spec = model_from_hf_config(_load("kimi-k2"))
    assert spec.num_experts == 384 and spec.num_moe_layers == 60


def test_gemma3_text_config_five_local_to_one_global() -> None:
    # Gemma 3 technical report (arXiv 2503.19786): 27B has 62 layers, d_model 5376, 32 query
    # and 16 KV heads of 128, 5 local layers (window 1024) per global one; 1,416M embedding +
    # 25,600M non-embedding parameters. Hand-written text_config with those values (no copy of
    # google/gemma-3-27b-it's config.json was reachable); intermediate 21504 = 4 x 5376.
    cfg = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "hidden_size": 5376,
            "intermediate_size": 21504,
            "num_attention_heads": 32,
            "num_hidden_layers": 62,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "sliding_window": 1024,
        },
    }
    spec = model_from_hf_config(cfg)
    from advisor.physics.params import param_breakdown

    # (i + 1) % 6 == 0 for 10 of 62 layers: 52 local.
    assert (spec.sliding_window, spec.num_sliding_window_layers) == (1024, 52)
    assert spec.vocab_size == 262208 and spec.tie_word_embeddings  # Gemma3TextConfig defaults
    assert param_breakdown(spec).total == pytest.approx(1.416e9 + 25.600e9, rel=0.01)


def test_glm4_moe_counts() -> None:
    # GLM-4.5 (zai-org announcement, Jul 2025): 355B total, 32B active. Architecture values as
    # in github:THUDM/slime scripts/models/glm4.5-355B-A32B.sh (92 layers = 3 dense + 89 MoE,
    # hidden 5120, dense FFN 12288, 160 experts of 1536 + 1 shared, top-8, 96 Q / 8 KV heads of
    # 128, Q/K/V bias, QK norm, vocabulary 151552, untied), written as a Glm4MoeConfig.
    cfg = {
        "architectures": ["Glm4MoeForCausalLM"],
        "model_type": "glm4_moe",
        "hidden_size": 5120,
        "intermediate_size": 12288,
        "num_hidden_layers": 92,
        "num_attention_heads": 96,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151552,
        "n_routed_experts": 160,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "moe_intermediate_size": 1536,
        "first_k_dense_replace": 3,
        "attention_bias": True,
        "use_qk_norm": True,
        "tie_word_embeddings": False,
        "max_position_embeddings": 131072,
    }
    from advisor.catalog import get_model
    from advisor.physics.params import param_breakdown

    spec = model_from_hf_config(cfg)
    entry = get_model("glm-4.5")  # the catalog entry cites the same script
    for field in ModelSpec.model_fields:
        if field not in _NOT_FROM_CONFIG:
            assert getattr(spec, field) == getattr(entry, field), field
    b = param_breakdown(spec)
    assert b.total == pytest.approx(355e9, rel=0.01)
    # "32B" matches the active count without the embedding and output layer (32.08e9; with
    # them 33.6e9, which would be headlined 34B).
    assert b.active - b.embedding - b.lm_head == pytest.approx(32e9, rel=0.01)


def test_unsupported_family_lists_the_new_ones_too() -> None:
    with pytest.raises(HFConfigError) as exc:
        model_from_hf_config({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"]})
    for fam in ("qwen3", "qwen3_moe", "gpt_oss", "llama4", "gemma3", "glm4_moe", "minimax_m2"):
        assert fam in str(exc.value)


def test_minimax_m2_counts_by_hand() -> None:
    # SGLang's MiniMax-M2 page: 230B total, 10B active. By hand from config.json: per layer
    # attention 3072 x (6144 + 2 x 1024) + 6144 x 3072 = 44.04e6, experts 256 x 3 x 3072 x
    # 1536 = 3.624e9, router 3072 x 256 = 0.79e6; x 62 layers = 227.46e9; embedding and
    # output 2 x 200064 x 3072 = 1.229e9: 228.69e9 with the norms. Active: 62 x (44.04e6 + 8 x
    # 3 x 3072 x 1536 + 0.79e6) = 9.80e9, + 0.615e9 output layer = 10.4e9 ("10B").
    from advisor.physics.params import param_breakdown

    spec = model_from_hf_config(_load("minimax-m2"))
    b = param_breakdown(spec)
    assert b.total == pytest.approx(228.69e9, rel=1e-3)
    assert b.active - b.embedding == pytest.approx(10.42e9, rel=2e-3)
    assert spec.num_moe_layers == 62 and spec.num_shared_experts == 0
    shared = _load("minimax-m2") | {"shared_intermediate_size": 1536}
    with pytest.raises(HFConfigError, match="'shared_intermediate_size'=1536"):
        model_from_hf_config(shared)


def test_registry_maps_every_spec_family_once():
    """Each ModelSpec family has exactly one Family record, and no model_type or architecture
    name is claimed by two families (the registry's dicts would keep the last one silently)."""
    from advisor.catalog.hf.registry import _MODULES, FAMILIES
    from advisor.catalog.specs import MODEL_FAMILIES

    records = [f for m in _MODULES for f in m.FAMILIES]
    assert sorted(f.name for f in records) == sorted(MODEL_FAMILIES)
    for attr in ("model_types", "architectures"):
        names = [n for f in records for n in getattr(f, attr)]
        assert len(names) == len(set(names)), attr
    assert all(FAMILIES[f].model_types for f in MODEL_FAMILIES)

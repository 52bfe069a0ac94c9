"""Import a Hugging Face ``config.json`` as a :class:`~advisor.catalog.specs.ModelSpec`.

Two steps, both safe on untrusted input:

1. :func:`load_hf_config_bytes` / :func:`load_hf_config_file` turn bytes into a ``dict``: a size
   cap, UTF-8 only, standard JSON only (no NaN/Infinity), duplicate keys refused, nesting depth
   capped *before* parsing (counted on the raw text, no recursion), top level must be an object.
   Nothing is ever evaluated or unpickled.
2. :func:`model_from_hf_config` maps the fields of one of the supported families onto a
   ``ModelSpec``. Absent optional fields take the default the transformers configuration class
   gives them (cited next to each default); the size-defining fields (layers, hidden size, heads,
   vocabulary, FFN width, expert counts, MLA ranks) are required, because a transformers default
   there is just one particular checkpoint's value and would silently plan for the wrong model.
   Keys the spec has no use for (``torch_dtype``, ``rope_scaling``, ``bos_token_id``...) are
   ignored.

Every failure is an :class:`HFConfigError` (a ``ValueError``) whose one-line message names the
``config.json`` key, the value and the allowed range.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from advisor.catalog.files import (
    MAX_JSON_DEPTH,
    FileReadError,
    loads_json,
    no_duplicate_keys,
    read_bounded,
    scan_json_depth,
)
from advisor.catalog.quoting import echo
from advisor.catalog.specs import MODEL_FAMILIES, ModelSpec, slugify

#: Families this importer maps (ModelSpec.family values).
SUPPORTED_FAMILIES: tuple[str, ...] = MODEL_FAMILIES

#: Multimodal families whose decoder is described by a nested ``text_config`` object.
_TEXT_CONFIG_FAMILIES = ("llama4", "gemma3")

#: ``model_type`` -> family. "RefinedWeb" / "RefinedWebModel" are the pre-transformers Falcon
#: remote-code names (tiiuae/falcon-40b / falcon-7b before the 2023 conversion).
_MODEL_TYPES: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "mixtral": "mixtral",
    "qwen2": "qwen2",
    "gemma2": "gemma2",
    "falcon": "falcon",
    "RefinedWeb": "falcon",
    "RefinedWebModel": "falcon",
    "deepseek_v3": "deepseek_v3",
    # Kimi K2 (moonshotai/Kimi-K2-Instruct): DeepseekV3ForCausalLM with its own model_type.
    "kimi_k2": "deepseek_v3",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "gpt_oss": "gpt_oss",
    "llama4": "llama4",
    "llama4_text": "llama4",
    "gemma3": "gemma3",
    "gemma3_text": "gemma3",
    "glm4_moe": "glm4_moe",
    "minimax_m2": "minimax_m2",
}

#: ``architectures[i]`` -> family.
_ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Gemma2ForCausalLM": "gemma2",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "GptOssForCausalLM": "gpt_oss",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Gemma3ForCausalLM": "gemma3",
    "Glm4MoeForCausalLM": "glm4_moe",
    "MiniMaxM2ForCausalLM": "minimax_m2",
}

#: The transformers configuration class whose defaults apply, per family.
_HF_CLASS: dict[str, str] = {
    "llama": "LlamaConfig (configuration_llama.py)",
    "mistral": "MistralConfig (configuration_mistral.py)",
    "mixtral": "MixtralConfig (configuration_mixtral.py)",
    "qwen2": "Qwen2Config (configuration_qwen2.py)",
    "gemma2": "Gemma2Config (configuration_gemma2.py)",
    "falcon": "FalconConfig (configuration_falcon.py)",
    "deepseek_v3": "DeepseekV3Config (configuration_deepseek_v3.py)",
    "qwen3": "Qwen3Config (configuration_qwen3.py)",
    "qwen3_moe": "Qwen3MoeConfig (configuration_qwen3_moe.py)",
    "gpt_oss": "GptOssConfig (configuration_gpt_oss.py)",
    "llama4": "Llama4TextConfig (configuration_llama4.py)",
    "gemma3": "Gemma3TextConfig (configuration_gemma3.py)",
    "glm4_moe": "Glm4MoeConfig (configuration_glm4_moe.py)",
    "minimax_m2": "MiniMaxM2Config (the checkpoint's configuration_minimax_m2.py, via auto_map)",
}

DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_MAX_DEPTH = MAX_JSON_DEPTH

_PREFIX = "config.json"
_ABSENT: Any = object()


class HFConfigError(ValueError):
    """A config.json that cannot be read or mapped; the message names the key, value and range."""


# --------------------------------------------------------------------------------------------
# Bytes -> dict
# --------------------------------------------------------------------------------------------


def _check_depth(text: str, max_depth: int) -> bool:
    """Refuse JSON text nested deeper than ``max_depth`` (advisor.catalog.files.scan_json_depth).

    Returns True when the text ends unfinished (an open bracket or string): a truncated file.
    """
    at, unfinished = scan_json_depth(text, max_depth)
    if at is not None:
        raise HFConfigError(
            f"{_PREFIX}: nesting deeper than {max_depth} levels (at character {at}); "
            "a model config needs only a few"
        )
    return unfinished


_no_duplicates = no_duplicate_keys(
    lambda key: HFConfigError(f"{_PREFIX}: duplicate key {echo(key)} (each key may appear once)")
)


def _no_constant(name: str) -> Any:
    raise HFConfigError(f"{_PREFIX}: non-standard JSON constant {name!r} (NaN/Infinity refused)")


def load_hf_config_bytes(
    data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """Parse the bytes of a ``config.json`` into a dict, refusing anything unusual.

    >>> load_hf_config_bytes(b'{"model_type": "llama", "hidden_size": 4096}')
    {'model_type': 'llama', 'hidden_size': 4096}
    >>> load_hf_config_bytes(b'{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    advisor.catalog.hf_import.HFConfigError: config.json: duplicate key 'a' (each key may appear once)
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise HFConfigError(f"{_PREFIX}: expected bytes, got {type(data).__name__}")
    size = len(data)
    if size > max_bytes:
        raise HFConfigError(
            f"{_PREFIX}: {size:,} bytes is larger than the {max_bytes:,}-byte limit "
            "(a model config is a few kB)"
        )
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HFConfigError(
            f"{_PREFIX}: not UTF-8 text (byte 0x{bytes(data)[exc.start]:02x} at offset "
            f"{exc.start}); save the file as UTF-8 JSON"
        ) from None
    if text.startswith("\ufeff"):  # a UTF-8 byte-order mark is still UTF-8
        text = text[1:]
    if not text.strip():
        raise HFConfigError(f"{_PREFIX}: empty file (expected a JSON object)")
    unfinished = _check_depth(text, max_depth)
    try:
        obj = loads_json(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
        )
    except HFConfigError:
        raise
    except json.JSONDecodeError as exc:
        what = "malformed JSON"
        if unfinished or exc.pos >= len(text.rstrip()):
            what = "truncated JSON (the text ends before the object is closed)"
        raise HFConfigError(
            f"{_PREFIX}: {what}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer with more than 4300 digits
        raise HFConfigError(f"{_PREFIX}: unreadable JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise HFConfigError(
            f"{_PREFIX}: top level must be a JSON object {{...}}, got {_json_type(obj)}"
        )
    return obj


def load_hf_config_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> dict[str, Any]:
    """Read and parse a ``config.json`` file; its size is checked before it is read."""
    try:
        data = read_bounded(path, max_bytes)
    except FileReadError as exc:
        raise HFConfigError(f"{_PREFIX} ({Path(path).name}): {exc}") from None
    return load_hf_config_bytes(data, max_bytes=max_bytes, max_depth=max_depth)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _show(value: Any) -> str:
    s = repr(value)
    return s if len(s) <= 60 else s[:57] + "..."


# --------------------------------------------------------------------------------------------
# dict -> ModelSpec
# --------------------------------------------------------------------------------------------


def _spec_bounds(field: str) -> tuple[float | None, float | None]:
    """(ge, le) of a ModelSpec integer field, read from its pydantic metadata."""
    info = ModelSpec.model_fields[field]
    metas: list[Any] = list(info.metadata)
    for arg in get_args(info.annotation):
        if get_origin(arg) is Annotated:
            for m in get_args(arg)[1:]:
                metas.extend(m.metadata if isinstance(m, FieldInfo) else [m])
    lo = next((m.ge for m in metas if hasattr(m, "ge")), None)
    hi = next((m.le for m in metas if hasattr(m, "le")), None)
    return lo, hi


def _range(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"an integer from {lo} to {hi}"
    if lo is not None:
        return f"an integer >= {lo}"
    return "an integer"


class _Reader:
    """Reads typed values out of one config dict and records where each spec field came from."""

    def __init__(self, cfg: dict[str, Any], family: str, source: str):
        self.cfg = cfg
        self.family = family
        self.hf_class = _HF_CLASS[family]
        self.source = source
        self.sources: dict[str, str] = {}

    # -- raw access ---------------------------------------------------------------------------
    def raw(self, *keys: str) -> tuple[str, Any]:
        """(key used, value) for the first of ``keys`` present; aliases must agree."""
        found = [(k, self.cfg[k]) for k in keys if k in self.cfg]
        if not found:
            return keys[0], _ABSENT
        for k, v in found[1:]:
            if v != found[0][1] or type(v) is not type(found[0][1]):
                raise HFConfigError(
                    f"{_PREFIX}: {found[0][0]!r}={_show(found[0][1])} and {k!r}={_show(v)} "
                    "name the same setting but disagree"
                )
        return found[0]

    def note(self, field: str, how: str | None = None) -> None:
        self.sources[field] = self.source if how is None else f"{self.source} ({how})"

    def default(self, field: str, key: str, value: Any) -> None:
        self.note(field, f"{key!r} absent: transformers {self.hf_class} default {value!r}")

    # -- typed readers ------------------------------------------------------------------------
    def check_int(
        self,
        key: str,
        value: Any,
        *,
        field: str | None = None,
        lo: float | None = None,
        hi: float | None = None,
    ) -> int:
        if field is not None:
            lo, hi = _spec_bounds(field)
        allowed = _range(lo, hi)
        target = f" ({field})" if field is not None and field != key else ""
        if isinstance(value, bool) or not isinstance(value, int):
            raise HFConfigError(
                f"{_PREFIX}: {key!r}{target} must be {allowed}, got {_show(value)} "
                f"({_json_type(value)})"
            )
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise HFConfigError(
                f"{_PREFIX}: {key!r}{target}={value} is out of range; allowed: {allowed}"
            )
        return value

    def req_int(self, *keys: str, field: str) -> int:
        """A required integer (a size the importer will not guess)."""
        key, value = self.raw(*keys)
        if value is _ABSENT or value is None:
            lo, hi = _spec_bounds(field)
            alias = f" (or {', '.join(repr(k) for k in keys[1:])})" if len(keys) > 1 else ""
            what = "missing" if value is _ABSENT else "null"
            raise HFConfigError(
                f"{_PREFIX}: {what} {key!r}{alias}, needed for a {self.family} model "
                f"({_range(lo, hi)})"
            )
        out = self.check_int(key, value, field=field)
        self.note(field)
        return out

    def opt_int(
        self,
        *keys: str,
        field: str | None = None,
        lo: float | None = None,
        hi: float | None = None,
    ) -> tuple[str, int | None | Any]:
        """(key, value) with value an int, None (JSON null) or _ABSENT."""
        key, value = self.raw(*keys)
        if value is _ABSENT or value is None:
            return key, value
        return key, self.check_int(key, value, field=field, lo=lo, hi=hi)

    def opt_bool(self, key: str, default: bool) -> tuple[bool, bool]:
        """(value, present). JSON null is refused: these flags have no 'unset' meaning."""
        value = self.cfg.get(key, _ABSENT)
        if value is _ABSENT:
            return default, False
        if not isinstance(value, bool):
            raise HFConfigError(
                f"{_PREFIX}: {key!r} must be true or false, got {_show(value)} "
                f"({_json_type(value)})"
            )
        return value, True

    def flag(self, field: str, key: str, default: bool) -> bool:
        value, present = self.opt_bool(key, default)
        if present:
            self.note(field)
        else:
            self.default(field, key, default)
        return value

    def int_with_default(self, field: str, key: str, default: int, *aliases: str) -> int:
        """An integer whose absence means a transformers default (JSON null is refused)."""
        k, value = self.opt_int(key, *aliases, field=field)
        if value is None:
            lo, hi = _spec_bounds(field)
            raise HFConfigError(f"{_PREFIX}: {k!r} is null; expected {_range(lo, hi)}")
        if value is _ABSENT:
            self.default(field, k, default)
            return default
        self.note(field)
        return value

    def layer_types(self, num_layers: int) -> int | None:
        """Number of "sliding_attention" entries in ``layer_types``, or None when absent/null."""
        value = self.cfg.get("layer_types")
        if value is None:
            return None
        allowed = ("full_attention", "sliding_attention")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HFConfigError(
                f"{_PREFIX}: 'layer_types' must be a list of strings ({' / '.join(allowed)}), "
                f"got {_show(value)}"
            )
        if len(value) != num_layers:
            raise HFConfigError(
                f"{_PREFIX}: 'layer_types' has {len(value)} entries but num_hidden_layers="
                f"{num_layers}; need one per layer"
            )
        bad = sorted({v for v in value if v not in allowed})
        if bad:
            raise HFConfigError(
                f"{_PREFIX}: 'layer_types' has unsupported entries {bad}; allowed: "
                f"{', '.join(allowed)}"
            )
        return value.count("sliding_attention")


def detect_family(cfg: dict[str, Any]) -> str:
    """The ModelSpec family of a config dict, from ``model_type`` and/or ``architectures``.

    >>> detect_family({"model_type": "qwen2"})
    'qwen2'
    >>> detect_family({"architectures": ["RWForCausalLM"]})
    'falcon'
    """
    model_type = cfg.get("model_type")
    archs = cfg.get("architectures")
    if model_type is not None and not isinstance(model_type, str):
        raise HFConfigError(
            f"{_PREFIX}: 'model_type' must be a string, got {_show(model_type)} "
            f"({_json_type(model_type)})"
        )
    if archs is not None and (
        not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)
    ):
        raise HFConfigError(
            f"{_PREFIX}: 'architectures' must be a list of strings, got {_show(archs)}"
        )
    archs = archs or []
    if model_type is None and not archs:
        raise HFConfigError(
            f"{_PREFIX}: missing 'model_type' and 'architectures'; cannot tell the model "
            f"family (supported: {', '.join(SUPPORTED_FAMILIES)})"
        )
    from_type = _MODEL_TYPES.get(model_type) if model_type is not None else None
    from_arch = next((_ARCHITECTURES[a] for a in archs if a in _ARCHITECTURES), None)
    if from_type and from_arch and from_type != from_arch:
        raise HFConfigError(
            f"{_PREFIX}: model_type {model_type!r} ({from_type}) disagrees with architectures "
            f"{archs} ({from_arch})"
        )
    family = from_type or from_arch
    if family is None:
        arch_txt = ", ".join(repr(a) for a in archs) if archs else "none given"
        raise HFConfigError(
            f"unknown architecture {arch_txt} (model_type {model_type!r}); "
            f"supported: {', '.join(SUPPORTED_FAMILIES)}"
        )
    return family


def _validation_message(exc: ValidationError) -> str:
    """One readable line from a pydantic ValidationError."""
    parts = []
    for err in exc.errors():
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        loc = ".".join(str(x) for x in err.get("loc", ()))
        if loc:
            parts.append(f"{loc}={_show(err.get('input'))}: {msg}")
        else:
            parts.append(msg)
    return "; ".join(parts)


def model_from_hf_config(
    cfg: dict[str, Any],
    *,
    model_id: str | None = None,
    name: str | None = None,
    source: str = "uploaded config.json",
) -> ModelSpec:
    """Map a Hugging Face ``config.json`` dict onto a ModelSpec.

    ``source`` is the citation recorded for every field (a default is cited as the transformers
    configuration class's default). ``model_id`` defaults to
    ``slugify(name or _name_or_path or model_type)``.

    >>> spec = model_from_hf_config({"model_type": "llama", "num_hidden_layers": 32,
    ...     "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
    ...     "vocab_size": 32000, "max_position_embeddings": 4096})
    >>> spec.id, spec.num_key_value_heads, spec.head_dim, spec.attention_kind
    ('llama', 32, 128, 'MHA')
    """
    if not isinstance(cfg, dict):
        raise HFConfigError(f"{_PREFIX}: expected a JSON object, got {_json_type(cfg)}")
    if not isinstance(source, str) or len(source.strip()) < 3:
        raise HFConfigError(f"source must be a citation of at least 3 characters, got {source!r}")
    for arg, val in (("model_id", model_id), ("name", name)):
        if val is not None and not isinstance(val, str):
            raise HFConfigError(f"{arg} must be a string, got {_show(val)}")
    family = detect_family(cfg)
    text_cfg = cfg.get("text_config") if family in _TEXT_CONFIG_FAMILIES else None
    if text_cfg is not None:
        if not isinstance(text_cfg, dict):
            raise HFConfigError(
                f"{_PREFIX}: 'text_config' must be an object, got {_json_type(text_cfg)}"
            )
        r = _Reader(text_cfg, family, f"{source.strip()} (text_config)")
        try:
            fields = _MAPPERS[family](r)
        except HFConfigError as exc:  # the first quoted key is nested: 'text_config.key'
            msg = re.sub(r"'([A-Za-z_]\w*)'", r"'text_config.\1'", str(exc), count=1)
            raise HFConfigError(msg) from None
    else:
        r = _Reader(cfg, family, source.strip())
        fields = _MAPPERS[family](r)

    quant = cfg.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "fp8":
        # the checkpoint's own FP8 weights (DeepSeek-V3, Kimi K2, MiniMax-M2): the reference
        fields["released_weights_dtype"] = "fp8"
        r.note("released_weights_dtype", "quantization_config.quant_method fp8")

    name_or_path = cfg.get("_name_or_path")
    if name_or_path is not None and not isinstance(name_or_path, str):
        raise HFConfigError(
            f"{_PREFIX}: '_name_or_path' must be a string, got {_show(name_or_path)}"
        )
    model_type = cfg.get("model_type") or family
    display = (name or "").strip() or (name_or_path or "").strip() or model_type
    if model_id is None:
        model_id = slugify(display)
        if len(model_id) < 2:
            model_id = slugify(f"{family}-{model_id}")
    try:
        return ModelSpec(
            id=model_id,
            name=display[:120],
            family=family,
            sources=r.sources,
            **fields,
        )
    except ValidationError as exc:
        raise HFConfigError(f"{_PREFIX}: {_validation_message(exc)}") from None


# --------------------------------------------------------------------------------------------
# Per-family mappings. Each returns the ModelSpec fields (besides id/name/family/sources) and
# records sources through the reader.
# --------------------------------------------------------------------------------------------


def _core(r: _Reader, *, hidden_keys=("hidden_size",), layer_keys=("num_hidden_layers",)):
    layers = r.req_int(*layer_keys, field="num_hidden_layers")
    hidden = r.req_int(*hidden_keys, field="hidden_size")
    vocab = r.req_int("vocab_size", field="vocab_size")
    return layers, hidden, vocab


def _heads(r: _Reader, *keys: str) -> int:
    return r.req_int(*keys, field="num_attention_heads")


def _kv_heads_none_means_heads(r: _Reader, heads: int, key: str, missing_default: int | None):
    """KV heads where JSON null (and, if ``missing_default`` is None, absence) means MHA."""
    k, kv = r.opt_int(key, field="num_key_value_heads")
    if kv is _ABSENT and missing_default is not None:
        r.default("num_key_value_heads", k, missing_default)
        return missing_default
    if kv is _ABSENT or kv is None:
        r.note(
            "num_key_value_heads",
            f"{k!r} {'absent' if kv is _ABSENT else 'null'}: transformers {r.hf_class} "
            f"sets it to num_attention_heads={heads}",
        )
        return heads
    r.note("num_key_value_heads")
    return kv


def _head_dim_or_derived(r: _Reader, hidden: int, heads: int) -> int:
    k, hd = r.opt_int("head_dim", field="head_dim")
    if hd is _ABSENT or hd is None:
        derived = hidden // heads
        r.check_int("head_dim (hidden_size // num_attention_heads)", derived, field="head_dim")
        r.note(
            "head_dim",
            f"{k!r} {'absent' if hd is _ABSENT else 'null'}: transformers {r.hf_class} uses "
            f"hidden_size // num_attention_heads = {derived}",
        )
        return derived
    r.note("head_dim")
    return hd


def _check_gqa(r: _Reader, heads: int, kv: int, heads_key: str, kv_key: str) -> None:
    if heads % kv:
        raise HFConfigError(
            f"{_PREFIX}: {heads_key}={heads} is not divisible by {kv_key}={kv}; "
            f"{kv_key} must divide {heads_key} (e.g. 1, 2, 4, 8)"
        )


def _map_llama_like(r: _Reader, family: str) -> dict[str, Any]:
    layers, hidden, vocab = _core(r)
    inter = r.req_int("intermediate_size", field="intermediate_size")
    heads = _heads(r, "num_attention_heads")
    if family == "mistral":
        # MistralConfig: num_key_value_heads=8 when absent, num_attention_heads when null.
        kv = _kv_heads_none_means_heads(r, heads, "num_key_value_heads", missing_default=8)
    elif family == "mixtral":
        # MixtralConfig: num_key_value_heads=8 when absent, num_attention_heads when null.
        kv = _kv_heads_none_means_heads(r, heads, "num_key_value_heads", missing_default=8)
    elif family == "qwen2":
        # Qwen2Config: num_key_value_heads=32 when absent, num_attention_heads when null.
        kv = _kv_heads_none_means_heads(r, heads, "num_key_value_heads", missing_default=32)
    else:
        # LlamaConfig: num_key_value_heads=None -> num_attention_heads (absent or null).
        kv = _kv_heads_none_means_heads(r, heads, "num_key_value_heads", missing_default=None)
    _check_gqa(r, heads, kv, "num_attention_heads", "num_key_value_heads")
    # LlamaConfig / MistralConfig / MixtralConfig: head_dim=None -> hidden_size // heads.
    # Qwen2 (modeling_qwen2.py): getattr(config, "head_dim", hidden_size // num_attention_heads).
    head_dim = _head_dim_or_derived(r, hidden, heads)
    # max_position_embeddings defaults: LlamaConfig 2048; MistralConfig and MixtralConfig
    # 4096 * 32 = 131072; Qwen2Config 32768.
    max_pos_default = {"llama": 2048, "mistral": 131072, "mixtral": 131072, "qwen2": 32768}
    max_pos = r.int_with_default(
        "max_position_embeddings", "max_position_embeddings", max_pos_default[family]
    )
    # tie_word_embeddings=False in all four classes.
    tie = r.flag("tie_word_embeddings", "tie_word_embeddings", False)
    if family == "llama":
        # LlamaConfig: attention_bias=False (bias on q/k/v/o projections).
        attention_bias = r.flag("attention_bias", "attention_bias", False)
    elif family == "qwen2":
        # modeling_qwen2.py: q_proj/k_proj/v_proj are nn.Linear(..., bias=True) whatever the
        # config says (Qwen2Config has no attention_bias switch).
        attention_bias = True
        r.note("attention_bias", "Qwen2 always has Q/K/V bias: transformers modeling_qwen2.py")
    else:
        # MistralConfig / MixtralConfig: the attention projections have no bias.
        attention_bias = False
        r.note("attention_bias", f"transformers {r.hf_class}: no attention bias")

    out: dict[str, Any] = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "tie_word_embeddings": tie,
        "attention_bias": attention_bias,
        "norms_per_layer": 2,
    }
    r.note("norms_per_layer", "input_layernorm + post_attention_layernorm (RMSNorm)")

    # Sliding window.
    window: int | None = None
    n_sliding = 0
    if family == "mistral":
        # MistralConfig: sliding_window=4096 when absent; null = full attention; every layer.
        k, window = r.opt_int("sliding_window", field="sliding_window")
        if window is _ABSENT:
            window = 4096
            r.default("sliding_window", k, 4096)
        elif window is not None:
            r.note("sliding_window")
        n_sliding = layers if window is not None else 0
    elif family == "mixtral":
        # MixtralConfig: sliding_window=None (full attention) unless set; then every layer.
        _, window = r.opt_int("sliding_window", field="sliding_window")
        if window is _ABSENT:
            window = None
        elif window is not None:
            r.note("sliding_window")
        n_sliding = layers if window is not None else 0
    elif family == "qwen2":
        # Qwen2Config: use_sliding_window=False -> sliding_window=None whatever its value;
        # otherwise sliding_window (default 4096) on layers i >= max_window_layers (default 28),
        # unless layer_types lists them.
        use_sw, _ = r.opt_bool("use_sliding_window", False)
        if use_sw:
            k, window = r.opt_int("sliding_window", field="sliding_window")
            if window is _ABSENT:
                window = 4096
                r.default("sliding_window", k, 4096)
            elif window is not None:
                r.note("sliding_window")
            if window is not None:
                counted = r.layer_types(layers)
                if counted is None:
                    _, mwl = r.opt_int("max_window_layers", lo=0, hi=1024)
                    mwl = 28 if mwl is _ABSENT or mwl is None else mwl
                    counted = max(0, layers - mwl)
                n_sliding = counted
                if n_sliding == 0:
                    window = None
                    r.sources.pop("sliding_window", None)
    if window is not None:
        out["sliding_window"] = window
        out["num_sliding_window_layers"] = n_sliding
        r.note("num_sliding_window_layers", f"{n_sliding} of {layers} layers use the window")
    return out


def _map_llama(r: _Reader) -> dict[str, Any]:
    return _map_llama_like(r, "llama")


def _map_mistral(r: _Reader) -> dict[str, Any]:
    return _map_llama_like(r, "mistral")


def _map_qwen2(r: _Reader) -> dict[str, Any]:
    return _map_llama_like(r, "qwen2")


def _map_mixtral(r: _Reader) -> dict[str, Any]:
    out = _map_llama_like(r, "mixtral")
    # MixtralConfig: num_local_experts (default 8) experts of width intermediate_size, top
    # num_experts_per_tok (default 2); required here, not defaulted (they set the model size).
    out["num_experts"] = r.req_int("num_local_experts", field="num_experts")
    out["num_experts_per_tok"] = r.req_int("num_experts_per_tok", field="num_experts_per_tok")
    # Every Mixtral layer is MoE: the expert width is intermediate_size.
    out["moe_intermediate_size"] = out["intermediate_size"]
    r.note("moe_intermediate_size", "Mixtral expert width = intermediate_size")
    return out


def _map_gemma2(r: _Reader) -> dict[str, Any]:
    layers, hidden, vocab = _core(r)
    inter = r.req_int("intermediate_size", field="intermediate_size")
    heads = _heads(r, "num_attention_heads")
    # Gemma2Config: num_key_value_heads=4 when absent.
    kv = r.int_with_default("num_key_value_heads", "num_key_value_heads", 4)
    _check_gqa(r, heads, kv, "num_attention_heads", "num_key_value_heads")
    # Gemma2Config: head_dim=256 (not derived from hidden_size: 27B has 32 * 128 != 4608).
    head_dim = r.int_with_default("head_dim", "head_dim", 256)
    # Gemma2Config: max_position_embeddings=8192, tie_word_embeddings=True,
    # attention_bias=False.
    max_pos = r.int_with_default("max_position_embeddings", "max_position_embeddings", 8192)
    tie = r.flag("tie_word_embeddings", "tie_word_embeddings", True)
    attention_bias = r.flag("attention_bias", "attention_bias", False)
    out: dict[str, Any] = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "tie_word_embeddings": tie,
        "attention_bias": attention_bias,
        # modeling_gemma2.py Gemma2DecoderLayer: input_layernorm, post_attention_layernorm,
        # pre_feedforward_layernorm, post_feedforward_layernorm.
        "norms_per_layer": 4,
    }
    r.note("norms_per_layer", "Gemma2DecoderLayer has 4 RMSNorms (transformers modeling_gemma2.py)")
    # Gemma2Config: sliding_window=4096 when absent (null = none); layer_types defaults to
    # "sliding_attention" when (i + 1) % 2, i.e. layers 0, 2, 4...: ceil(layers / 2) of them
    # (= layers // 2 for the even layer counts of all released Gemma-2 models).
    k, window = r.opt_int("sliding_window", field="sliding_window")
    if window is _ABSENT:
        window = 4096
        r.default("sliding_window", k, 4096)
    elif window is not None:
        r.note("sliding_window")
    if window is not None:
        counted = r.layer_types(layers)
        if counted is None:
            counted = (layers + 1) // 2
            how = f"Gemma2Config layer_types default: every other layer, {counted} of {layers}"
        else:
            how = f"layer_types: {counted} of {layers} layers are sliding_attention"
        if counted:
            out["sliding_window"] = window
            out["num_sliding_window_layers"] = counted
            r.note("num_sliding_window_layers", how)
        else:
            r.sources.pop("sliding_window", None)
    return out


def _map_falcon(r: _Reader) -> dict[str, Any]:
    # FalconConfig attribute_map: n_layer -> num_hidden_layers, n_head -> num_attention_heads;
    # n_embed -> hidden_size (backward compatibility); n_head_kv -> num_kv_heads.
    layers, hidden, vocab = _core(
        r, hidden_keys=("hidden_size", "n_embed"), layer_keys=("num_hidden_layers", "n_layer")
    )
    heads = _heads(r, "num_attention_heads", "n_head")
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
        if kv_raw is _ABSENT or kv_raw is None:
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
    _check_gqa(r, heads, kv, heads_key, kv_key)

    # FalconConfig.head_dim = hidden_size // num_attention_heads.
    head_dim = hidden // heads
    r.check_int("head_dim (hidden_size // num_attention_heads)", head_dim, field="head_dim")
    r.note("head_dim", f"FalconConfig.head_dim = hidden_size // num_attention_heads = {head_dim}")

    # FalconConfig: ffn_hidden_size=None -> 4 * hidden_size (GeLU MLP, two matrices).
    k, ffn = r.opt_int("ffn_hidden_size", field="intermediate_size")
    if ffn is _ABSENT or ffn is None:
        ffn = 4 * hidden
        r.check_int("ffn_hidden_size (4 * hidden_size)", ffn, field="intermediate_size")
        r.note("intermediate_size", f"{k!r} absent: FalconConfig uses 4 * hidden_size = {ffn}")
    else:
        r.note("intermediate_size")

    # FalconConfig: max_position_embeddings=2048.
    max_pos = r.int_with_default("max_position_embeddings", "max_position_embeddings", 2048)
    # FalconConfig does not set tie_word_embeddings: PretrainedConfig's default True applies.
    tie = r.flag("tie_word_embeddings", "tie_word_embeddings", True)
    attention_bias = r.flag("attention_bias", "bias", False)

    # modeling_falcon.py FalconDecoderLayer: num_ln_in_parallel_attn=None becomes 2 with the new
    # decoder architecture; not parallel_attn -> input + post_attention LayerNorm (2); parallel
    # with num_ln_in_parallel_attn == 2 -> ln_attn + ln_mlp (2); otherwise input_layernorm (1).
    _, n_ln = r.opt_int("num_ln_in_parallel_attn", lo=1, hi=2)
    if n_ln is _ABSENT or n_ln is None:
        n_ln = 2 if new_arch else None
    norms = 2 if not parallel_attn or n_ln == 2 else 1
    r.note("norms_per_layer", f"FalconDecoderLayer LayerNorms: {norms}")
    r.note("norm_kind", "Falcon uses LayerNorm with bias")
    r.note("mlp_kind", "Falcon MLP: dense_h_to_4h, GeLU, dense_4h_to_h")
    return {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": ffn,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "tie_word_embeddings": tie,
        "mlp_kind": "plain",
        "attention_bias": attention_bias,
        "norm_kind": "layernorm",
        "norms_per_layer": norms,
        "notes": (
            f"Falcon: new_decoder_architecture={new_arch}, parallel_attn={parallel_attn}, "
            f"multi_query={multi_query}"
        ),
    }


def _map_deepseek_v3(r: _Reader) -> dict[str, Any]:
    layers, hidden, vocab = _core(r)
    inter = r.req_int("intermediate_size", field="intermediate_size")
    heads = _heads(r, "num_attention_heads")
    # DeepseekV3Config: num_key_value_heads=128 when absent, num_attention_heads when null (MLA:
    # the KV cache holds the latent, so this does not size it).
    kv = _kv_heads_none_means_heads(r, heads, "num_key_value_heads", missing_default=128)

    # MoE (DeepseekV3Config defaults are DeepSeek-V3's own 256 / 8 / 2048; required here).
    num_experts = r.req_int("n_routed_experts", "num_local_experts", field="num_experts")
    top_k = r.req_int("num_experts_per_tok", field="num_experts_per_tok")
    moe_inter = r.req_int("moe_intermediate_size", field="moe_intermediate_size")
    # DeepseekV3Config: n_shared_experts=1, first_k_dense_replace=3.
    shared = r.int_with_default("num_shared_experts", "n_shared_experts", 1)
    first_k = r.int_with_default("first_k_dense_layers", "first_k_dense_replace", 3)
    # DeepSeek's remote-code config has moe_layer_freq (MoE on every k-th layer); transformers'
    # DeepseekV3 has no such knob (every layer after the first k is MoE), nor has ModelSpec.
    _only(r, "moe_layer_freq", 1, "1 (every layer after first_k_dense_replace is MoE)", 1, 1024)

    # MLA ranks and head dims (required); q_lora_rank: DeepseekV3Config default 1536, null means
    # queries are not compressed (DeepSeek-V2-Lite style).
    kv_lora = r.req_int("kv_lora_rank", field="kv_lora_rank")
    nope = r.req_int("qk_nope_head_dim", field="qk_nope_head_dim")
    rope = r.req_int("qk_rope_head_dim", field="qk_rope_head_dim")
    v_dim = r.req_int("v_head_dim", field="v_head_dim")
    k, q_lora = r.opt_int("q_lora_rank", field="q_lora_rank")
    if q_lora is _ABSENT:
        q_lora = 1536
        r.default("q_lora_rank", k, 1536)
    elif q_lora is not None:
        r.note("q_lora_rank")
    # The query/key head width is qk_nope_head_dim + qk_rope_head_dim (DeepseekV3Config
    # .qk_head_dim; note its .head_dim attribute is qk_rope_head_dim, the RoPE width).
    head_dim = nope + rope
    r.check_int("head_dim (qk_nope_head_dim + qk_rope_head_dim)", head_dim, field="head_dim")
    r.note("head_dim", f"qk_nope_head_dim + qk_rope_head_dim = {head_dim}")

    # DeepseekV3Config: max_position_embeddings=4096, tie_word_embeddings=False,
    # attention_bias=False.
    max_pos = r.int_with_default("max_position_embeddings", "max_position_embeddings", 4096)
    tie = r.flag("tie_word_embeddings", "tie_word_embeddings", False)
    attention_bias = r.flag("attention_bias", "attention_bias", False)
    r.note("norms_per_layer", "input_layernorm + post_attention_layernorm (RMSNorm)")
    notes = "DeepSeek-V3: MLA + DeepSeekMoE"
    _, mtp = r.opt_int("num_nextn_predict_layers", lo=0, hi=1024)
    if isinstance(mtp, int) and mtp:
        notes += f"; {mtp} multi-token-prediction layer(s) not included"
    return {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "tie_word_embeddings": tie,
        "attention_bias": attention_bias,
        "norms_per_layer": 2,
        "num_experts": num_experts,
        "num_experts_per_tok": top_k,
        "moe_intermediate_size": moe_inter,
        "num_shared_experts": shared,
        "first_k_dense_layers": first_k,
        "q_lora_rank": q_lora,
        "kv_lora_rank": kv_lora,
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": v_dim,
        "notes": notes,
    }


def _gqa_block(r: _Reader, kv_default: int | None) -> tuple[int, int, int, int, int]:
    """(layers, hidden, vocab, heads, kv heads) with the GQA check; ``kv_default`` None: MHA."""
    layers, hidden, vocab = _core(r)
    heads = _heads(r, "num_attention_heads")
    kv = _kv_heads_none_means_heads(r, heads, "num_key_value_heads", missing_default=kv_default)
    _check_gqa(r, heads, kv, "num_attention_heads", "num_key_value_heads")
    return layers, hidden, vocab, heads, kv


def _only(
    r: _Reader, key: str, value: int, rule: str, lo: int, hi: int, family: str | None = None
) -> None:
    """Refuse an integer setting the spec cannot represent: absent, null or ``value`` pass;
    another integer in [lo, hi] is refused naming the key, the value and ``rule``."""
    k, got = r.opt_int(key, lo=lo, hi=hi)
    if got not in (_ABSENT, None, value):
        scope = f" for {family}" if family else ""
        raise HFConfigError(f"{_PREFIX}: {k!r}={got} is not supported{scope}; allowed: {rule}")


def _no_sliding(r: _Reader, family: str) -> None:
    """Refuse use_sliding_window=true (no released Qwen3 uses it; its layout is not modelled)."""
    use_sw, _ = r.opt_bool("use_sliding_window", False)
    if use_sw:
        raise HFConfigError(
            f"{_PREFIX}: 'use_sliding_window'=true is not supported for {family}; allowed: false"
        )


def _map_qwen3(r: _Reader) -> dict[str, Any]:
    # Qwen3Config: num_key_value_heads=32 (null -> num_attention_heads), head_dim=128,
    # max_position_embeddings=32768, tie_word_embeddings=False, attention_bias=False.
    layers, hidden, vocab, heads, kv = _gqa_block(r, 32)
    _no_sliding(r, "qwen3")
    r.note("qk_norm", "Qwen3Attention: q_norm and k_norm RMSNorm over head_dim")
    r.note("norms_per_layer", "input_layernorm + post_attention_layernorm (RMSNorm)")
    return {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": r.req_int("intermediate_size", field="intermediate_size"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": r.int_with_default("head_dim", "head_dim", 128),
        "vocab_size": vocab,
        "max_position_embeddings": r.int_with_default(
            "max_position_embeddings", "max_position_embeddings", 32768
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", False),
        "attention_bias": r.flag("attention_bias", "attention_bias", False),
        "qk_norm": True,
        "norms_per_layer": 2,
    }


def _map_qwen3_moe(r: _Reader) -> dict[str, Any]:
    # Qwen3MoeConfig: num_key_value_heads=4, decoder_sparse_step=1, mlp_only_layers=[] (MoE on
    # layer i when i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0).
    layers, hidden, vocab, heads, kv = _gqa_block(r, 4)
    _no_sliding(r, "qwen3_moe")
    out = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": r.req_int("intermediate_size", field="intermediate_size"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": _head_dim_or_derived(r, hidden, heads),
        "vocab_size": vocab,
        "max_position_embeddings": r.int_with_default(
            "max_position_embeddings", "max_position_embeddings", 32768
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", False),
        "attention_bias": r.flag("attention_bias", "attention_bias", False),
        "qk_norm": True,
        "norms_per_layer": 2,
        "num_experts": r.req_int("num_experts", field="num_experts"),
        "num_experts_per_tok": r.req_int("num_experts_per_tok", field="num_experts_per_tok"),
        "moe_intermediate_size": r.req_int("moe_intermediate_size", field="moe_intermediate_size"),
        "moe_layer_step": r.int_with_default("moe_layer_step", "decoder_sparse_step", 1),
    }
    r.note("qk_norm", "Qwen3MoeAttention: q_norm and k_norm RMSNorm over head_dim")
    mlp_only = r.cfg.get("mlp_only_layers")
    if mlp_only not in (None, []):
        raise HFConfigError(
            f"{_PREFIX}: 'mlp_only_layers'={_show(mlp_only)} is not supported; allowed: [] "
            "(every layer follows decoder_sparse_step)"
        )
    return out


def _map_gpt_oss(r: _Reader) -> dict[str, Any]:
    # GptOssConfig: num_key_value_heads=8, head_dim=64, sliding_window=128,
    # max_position_embeddings=131072, tie_word_embeddings=False, attention_bias=True; layer_types
    # default alternates sliding (even layers) and full attention. Experts and router always
    # carry biases, every head a learned sink (modeling_gpt_oss.py).
    layers, hidden, vocab, heads, kv = _gqa_block(r, 8)
    inter = r.req_int("intermediate_size", field="intermediate_size")
    bias = r.flag("attention_bias", "attention_bias", True)
    out: dict[str, Any] = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": r.int_with_default("head_dim", "head_dim", 64),
        "vocab_size": vocab,
        "max_position_embeddings": r.int_with_default(
            "max_position_embeddings", "max_position_embeddings", 131072
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", False),
        "attention_bias": bias,
        "attention_out_bias": bias,
        "attention_sinks": True,
        "norms_per_layer": 2,
        "num_experts": r.req_int("num_local_experts", field="num_experts"),
        "num_experts_per_tok": r.req_int(
            "num_experts_per_tok", "experts_per_token", field="num_experts_per_tok"
        ),
        "moe_intermediate_size": inter,
        "expert_bias": True,
    }
    r.note("attention_out_bias", "GptOssAttention: o_proj bias = attention_bias")
    r.note("attention_sinks", "GptOssAttention: one learned sink logit per head")
    r.note("moe_intermediate_size", "gpt-oss expert width = intermediate_size")
    r.note("expert_bias", "GptOssExperts and GptOssTopKRouter carry biases")
    quant = r.cfg.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        out["expert_weights_dtype"] = "mxfp4"
        r.note("expert_weights_dtype", "quantization_config.quant_method mxfp4 (experts)")
    k, window = r.opt_int("sliding_window", field="sliding_window")
    if window is _ABSENT:
        window = 128
        r.default("sliding_window", k, 128)
    elif window is not None:
        r.note("sliding_window")
    if window is not None:
        counted = r.layer_types(layers)
        how = f"layer_types: {counted} of {layers} layers are sliding_attention"
        if counted is None:
            counted = (layers + 1) // 2
            how = f"GptOssConfig layer_types default: every other layer, {counted} of {layers}"
        if counted:
            out["sliding_window"] = window
            out["num_sliding_window_layers"] = counted
            r.note("num_sliding_window_layers", how)
        else:
            r.sources.pop("sliding_window", None)
    return out


def _map_llama4(r: _Reader) -> dict[str, Any]:
    # Llama4TextConfig: num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
    # interleave_moe_layer_step=1 (MoE layers step-1, 2*step-1, ...), one shared expert per MoE
    # layer (Llama4TextMoe.shared_expert), intermediate_size = expert width,
    # intermediate_size_mlp = dense width (default 16384), attention_chunk_size=8192 on the RoPE
    # layers, no_rope_layers default: layer i is NoPE (global) when (i + 1) % 4 == 0.
    layers, hidden, vocab, heads, kv = _gqa_block(r, 8)
    step = r.int_with_default("moe_layer_step", "interleave_moe_layer_step", 1)
    out: dict[str, Any] = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": r.int_with_default(
            "intermediate_size", "intermediate_size_mlp", 16384
        ),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": r.int_with_default("head_dim", "head_dim", 128),
        "vocab_size": vocab,
        "max_position_embeddings": r.int_with_default(
            "max_position_embeddings", "max_position_embeddings", 131072
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", False),
        "attention_bias": r.flag("attention_bias", "attention_bias", False),
        "norms_per_layer": 2,
        "num_experts": r.req_int("num_local_experts", field="num_experts"),
        "num_experts_per_tok": r.req_int("num_experts_per_tok", field="num_experts_per_tok"),
        "moe_intermediate_size": r.req_int("intermediate_size", field="moe_intermediate_size"),
        "num_shared_experts": 1,
        "moe_layer_step": step,
    }
    r.note("num_shared_experts", "Llama4TextMoe: one shared expert per MoE layer")
    moe_layers = r.cfg.get("moe_layers")
    if moe_layers is not None and moe_layers != list(range(step - 1, layers, step)):
        raise HFConfigError(
            f"{_PREFIX}: 'moe_layers'={_show(moe_layers)} is not supported; allowed: "
            f"every interleave_moe_layer_step={step}-th layer"
        )
    k, chunk = r.opt_int("attention_chunk_size", field="sliding_window")
    if chunk is _ABSENT:
        chunk = 8192
        r.default("sliding_window", k, 8192)
    elif chunk is not None:
        r.note("sliding_window", "attention_chunk_size")
    if chunk is not None:
        nope = r.cfg.get("no_rope_layers")
        if nope is None:
            counted = sum(1 for i in range(layers) if (i + 1) % 4)
            how = f"no_rope_layers default: {counted} of {layers} RoPE layers are chunked"
        elif (
            isinstance(nope, list)
            and len(nope) == layers
            and all(v in (0, 1) and not isinstance(v, bool) for v in nope)
        ):
            counted = sum(nope)
            how = f"no_rope_layers: {counted} of {layers} RoPE layers are chunked"
        else:
            raise HFConfigError(
                f"{_PREFIX}: 'no_rope_layers' must be a list of {layers} values 0 or 1, "
                f"got {_show(nope)}"
            )
        if counted:
            out.update(sliding_window=chunk, num_sliding_window_layers=counted)
            out["window_kind"] = "chunked"
            r.note("num_sliding_window_layers", how)
            r.note("window_kind", "Llama 4 chunked local attention")
        else:
            r.sources.pop("sliding_window", None)
    return out


def _map_gemma3(r: _Reader) -> dict[str, Any]:
    # Gemma3TextConfig: vocab_size=262208, num_key_value_heads=4, head_dim=256,
    # max_position_embeddings=131072, tie_word_embeddings=True, attention_bias=False,
    # sliding_window=4096, layer_types default: sliding unless (i + 1) % sliding_window_pattern
    # (6) == 0. Gemma3DecoderLayer: 4 RMSNorms + q_norm, k_norm.
    layers = r.req_int("num_hidden_layers", field="num_hidden_layers")
    hidden = r.req_int("hidden_size", field="hidden_size")
    heads = _heads(r, "num_attention_heads")
    kv = r.int_with_default("num_key_value_heads", "num_key_value_heads", 4)
    _check_gqa(r, heads, kv, "num_attention_heads", "num_key_value_heads")
    out: dict[str, Any] = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": r.req_int("intermediate_size", field="intermediate_size"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": r.int_with_default("head_dim", "head_dim", 256),
        "vocab_size": r.int_with_default("vocab_size", "vocab_size", 262208),
        "max_position_embeddings": r.int_with_default(
            "max_position_embeddings", "max_position_embeddings", 131072
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", True),
        "attention_bias": r.flag("attention_bias", "attention_bias", False),
        "qk_norm": True,
        "norms_per_layer": 4,
    }
    r.note("qk_norm", "Gemma3Attention: q_norm and k_norm")
    r.note("norms_per_layer", "Gemma3DecoderLayer has 4 RMSNorms")
    k, window = r.opt_int("sliding_window", field="sliding_window")
    if window is _ABSENT:
        window = 4096
        r.default("sliding_window", k, 4096)
    elif window is not None:
        r.note("sliding_window")
    if window is not None:
        counted = r.layer_types(layers)
        how = f"layer_types: {counted} of {layers} layers are sliding_attention"
        if counted is None:
            _, pattern = r.opt_int("sliding_window_pattern", lo=1, hi=1024)
            pattern = 6 if pattern in (_ABSENT, None) else pattern
            counted = sum(1 for i in range(layers) if (i + 1) % pattern)
            how = f"sliding_window_pattern {pattern}: {counted} of {layers} layers are local"
        if counted:
            out.update(sliding_window=window, num_sliding_window_layers=counted)
            r.note("num_sliding_window_layers", how)
        else:
            r.sources.pop("sliding_window", None)
    return out


def _map_glm4_moe(r: _Reader) -> dict[str, Any]:
    # Glm4MoeConfig: num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
    # tie_word_embeddings=False, attention_bias=False (Q/K/V only), n_shared_experts=1,
    # first_k_dense_replace=1, use_qk_norm=False. The num_nextn_predict_layers MTP layers are
    # not counted (as DeepSeek's).
    layers, hidden, vocab, heads, kv = _gqa_block(r, 8)
    out = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": r.req_int("intermediate_size", field="intermediate_size"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": r.int_with_default("head_dim", "head_dim", 128),
        "vocab_size": vocab,
        "max_position_embeddings": r.int_with_default(
            "max_position_embeddings", "max_position_embeddings", 131072
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", False),
        "attention_bias": r.flag("attention_bias", "attention_bias", False),
        "qk_norm": r.flag("qk_norm", "use_qk_norm", False),
        "norms_per_layer": 2,
        "num_experts": r.req_int("n_routed_experts", field="num_experts"),
        "num_experts_per_tok": r.req_int("num_experts_per_tok", field="num_experts_per_tok"),
        "moe_intermediate_size": r.req_int("moe_intermediate_size", field="moe_intermediate_size"),
        "num_shared_experts": r.int_with_default("num_shared_experts", "n_shared_experts", 1),
        "first_k_dense_layers": r.int_with_default(
            "first_k_dense_layers", "first_k_dense_replace", 1
        ),
    }
    r.note("norms_per_layer", "input_layernorm + post_attention_layernorm (RMSNorm)")
    return out


def _map_minimax_m2(r: _Reader) -> dict[str, Any]:
    # MiniMaxM2ForCausalLM (MiniMax-M2, M2.1, M2.5): every layer is MoE, num_local_experts
    # experts of width intermediate_size, top num_experts_per_tok with sigmoid routing and no
    # shared expert (shared_intermediate_size 0); GQA with QK norm (qk_norm_type per_layer: over
    # the whole Q and K projections), partial RoPE (rotary_dim), untied embeddings. Its config
    # class ships with the checkpoint (auto_map), so no size has a library default here: each is
    # required. The MTP modules (use_mtp, num_mtp_modules) are not counted, as DeepSeek's are not.
    r.req_int("num_key_value_heads", field="num_key_value_heads")
    layers, hidden, vocab, heads, kv = _gqa_block(r, None)
    _only(r, "shared_intermediate_size", 0, "0 (no shared expert)", 0, 1_048_576, "minimax_m2")
    width = r.req_int("intermediate_size", field="intermediate_size")
    out = {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": width,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": r.req_int("head_dim", field="head_dim"),
        "vocab_size": vocab,
        "max_position_embeddings": r.req_int(
            "max_position_embeddings", field="max_position_embeddings"
        ),
        "tie_word_embeddings": r.flag("tie_word_embeddings", "tie_word_embeddings", False),
        "attention_bias": r.flag("attention_bias", "attention_bias", False),
        "qk_norm": r.flag("qk_norm", "use_qk_norm", False),
        "norms_per_layer": 2,
        "num_experts": r.req_int("num_local_experts", field="num_experts"),
        "num_experts_per_tok": r.req_int("num_experts_per_tok", field="num_experts_per_tok"),
        "moe_intermediate_size": width,
    }
    r.note("moe_intermediate_size", "MiniMax-M2 expert width = intermediate_size")
    r.note("norms_per_layer", "input_layernorm + post_attention_layernorm (RMSNorm)")
    return out


_MAPPERS = {
    "llama": _map_llama,
    "mistral": _map_mistral,
    "mixtral": _map_mixtral,
    "qwen2": _map_qwen2,
    "gemma2": _map_gemma2,
    "falcon": _map_falcon,
    "deepseek_v3": _map_deepseek_v3,
    "qwen3": _map_qwen3,
    "qwen3_moe": _map_qwen3_moe,
    "gpt_oss": _map_gpt_oss,
    "llama4": _map_llama4,
    "gemma3": _map_gemma3,
    "glm4_moe": _map_glm4_moe,
    "minimax_m2": _map_minimax_m2,
}

"""What a family's mapper is made of: the :class:`Family` record and the steps the families share.

A mapper reads the config through a :class:`~advisor.catalog.hf.reader.Reader` and returns the
ModelSpec fields (besides id, name, family and sources). Most of it is :func:`read`: the fields
in the order they are read, each with how to read it::

    read(r, **gqa(8), intermediate_size=REQ, head_dim=128, tie_word_embeddings=False)

``REQ`` / :func:`req` is a size the importer will not guess; a plain integer or boolean is the
transformers default when the key is absent (:func:`dflt` when the key has another name); the
other steps are below. The order is the order of the reads, so it decides which of two bad keys a
message names and the order of the recorded sources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.catalog.hf.errors import PREFIX, HFConfigError
from advisor.catalog.hf.reader import ABSENT, Reader

#: A step reads one field: (reader, the field's name, the fields read so far) -> its value.
Step = Callable[[Reader, str, dict[str, Any]], Any]

#: The source note of the two RMSNorms of a Llama-style decoder layer.
RMS_PAIR = "input_layernorm + post_attention_layernorm (RMSNorm)"


@dataclass(frozen=True)
class Family:
    """One ModelSpec family: how a config names it and how its fields are read."""

    name: str
    #: The transformers configuration class whose defaults apply (cited in sources).
    hf_class: str
    map: Callable[[Reader], dict[str, Any]]
    model_types: tuple[str, ...]
    architectures: tuple[str, ...]
    #: Multimodal: the decoder is described by a nested ``text_config`` object when present.
    text_config: bool = False


# --------------------------------------------------------------------------------------------
# Reading fields in order
# --------------------------------------------------------------------------------------------


def read(r: Reader, out: dict[str, Any] | None = None, /, **fields: Step | int | bool) -> dict:
    """Read ``fields`` in order into ``out`` (a new dict when None) and return it.

    >>> r = Reader({"hidden_size": 64}, "llama", "LlamaConfig", "test")
    >>> read(r, hidden_size=REQ, max_position_embeddings=2048, tie_word_embeddings=False)
    {'hidden_size': 64, 'max_position_embeddings': 2048, 'tie_word_embeddings': False}
    >>> r.sources["max_position_embeddings"]
    "test ('max_position_embeddings' absent: transformers LlamaConfig default 2048)"
    """
    out = {} if out is None else out
    for field, how in fields.items():
        step = dflt(how) if isinstance(how, int) else how
        out[field] = step(r, field, out)
    return out


def req(*keys: str) -> Step:
    """A required integer, from ``keys`` (aliases that must agree) or the field's own key."""
    return lambda r, field, out: r.req_int(*(keys or (field,)), field=field)


#: A required integer under the field's own key.
REQ = req()


def dflt(value: int | bool, key: str | None = None, *aliases: str) -> Step:
    """An integer or true/false whose absence means ``value`` (the transformers default)."""

    def step(r: Reader, field: str, out: dict[str, Any]) -> Any:
        if isinstance(value, bool):
            return r.flag(field, key or field, value)
        return r.int_with_default(field, key or field, value, *aliases)

    return step


def nullable(default: int | None, key: str | None = None, how: str | None = None) -> Step:
    """An integer whose absence means ``default`` and JSON null means None (off); ``how`` says
    where a given value came from when the key is not the field's."""

    def step(r: Reader, field: str, out: dict[str, Any]) -> int | None:
        k, value = r.opt_int(key or field, field=field)
        if value is ABSENT:
            if default is not None:
                r.default(field, k, default)
            return default
        if value is not None:
            r.note(field, how)
        return value

    return step


def fixed(value: Any, how: str | None = None) -> Step:
    """A value the architecture fixes (no config key); ``how`` is recorded as its source."""

    def step(r: Reader, field: str, out: dict[str, Any]) -> Any:
        if how is not None:
            r.note(field, how)
        return value

    return step


def same_as(other: str, how: str) -> Step:
    """The value of a field read before (an expert width that is the FFN width...)."""

    def step(r: Reader, field: str, out: dict[str, Any]) -> Any:
        r.note(field, how)
        return out[other]

    return step


# --------------------------------------------------------------------------------------------
# Shared blocks: core sizes, attention heads, experts
# --------------------------------------------------------------------------------------------

#: The sizes every family requires, in the order they are read.
CORE: dict[str, Step] = {"num_hidden_layers": REQ, "hidden_size": REQ, "vocab_size": REQ}


def check_gqa(heads: int, kv: int, heads_key: str, kv_key: str) -> None:
    """Refuse KV heads that do not divide the query heads."""
    if heads % kv:
        raise HFConfigError(
            f"{PREFIX}: {heads_key}={heads} is not divisible by {kv_key}={kv}; "
            f"{kv_key} must divide {heads_key} (e.g. 1, 2, 4, 8)"
        )


def kv_heads(default: int | None, *, null_means_heads: bool = True, grouped: bool = True) -> Step:
    """``num_key_value_heads`` after ``num_attention_heads``: absent means ``default`` (None:
    as many as the query heads, MHA); JSON null means MHA when ``null_means_heads``, else it is
    refused. ``grouped``: the KV heads must divide the query heads."""

    def step(r: Reader, field: str, out: dict[str, Any]) -> int:
        heads = out["num_attention_heads"]
        if null_means_heads:
            kv = _kv_or_heads(r, heads, default)
        else:
            kv = r.int_with_default(field, field, default)
        if grouped:
            check_gqa(heads, kv, "num_attention_heads", "num_key_value_heads")
        return kv

    return step


def _kv_or_heads(r: Reader, heads: int, default: int | None) -> int:
    k, kv = r.opt_int("num_key_value_heads", field="num_key_value_heads")
    if kv is ABSENT and default is not None:
        r.default("num_key_value_heads", k, default)
        return default
    if kv is ABSENT or kv is None:
        r.note(
            "num_key_value_heads",
            f"{k!r} {'absent' if kv is ABSENT else 'null'}: transformers {r.hf_class} "
            f"sets it to num_attention_heads={heads}",
        )
        return heads
    r.note("num_key_value_heads")
    return kv


def gqa(kv_default: int | None) -> dict[str, Step]:
    """CORE, then the query and KV heads with the GQA check (``kv_default`` None: MHA)."""
    return {**CORE, "num_attention_heads": REQ, "num_key_value_heads": kv_heads(kv_default)}


def derived_head_dim(r: Reader, field: str, out: dict[str, Any]) -> int:
    """``head_dim``, or when absent or null hidden_size // num_attention_heads (the transformers
    fallback of Llama, Mistral, Qwen2 and Qwen3-MoE)."""
    k, hd = r.opt_int("head_dim", field="head_dim")
    if hd is ABSENT or hd is None:
        derived = out["hidden_size"] // out["num_attention_heads"]
        r.check_int("head_dim (hidden_size // num_attention_heads)", derived, field="head_dim")
        r.note(
            "head_dim",
            f"{k!r} {'absent' if hd is ABSENT else 'null'}: transformers {r.hf_class} uses "
            f"hidden_size // num_attention_heads = {derived}",
        )
        return derived
    r.note("head_dim")
    return hd


def experts(*keys: str, top_k: tuple[str, ...] = ("num_experts_per_tok",)) -> dict[str, Step]:
    """The routed-expert count (under ``keys``) and the experts per token, both required: a
    transformers default there is one checkpoint's value."""
    return {"num_experts": req(*keys), "num_experts_per_tok": req(*top_k)}


# --------------------------------------------------------------------------------------------
# Settings the spec cannot represent
# --------------------------------------------------------------------------------------------


def only(
    r: Reader, key: str, value: int, rule: str, lo: int, hi: int, family: str | None = None
) -> None:
    """Refuse an integer setting the spec cannot represent: absent, null or ``value`` pass;
    another integer in [lo, hi] is refused naming the key, the value and ``rule``."""
    k, got = r.opt_int(key, lo=lo, hi=hi)
    if got not in (ABSENT, None, value):
        scope = f" for {family}" if family else ""
        raise HFConfigError(f"{PREFIX}: {k!r}={got} is not supported{scope}; allowed: {rule}")


def no_sliding(r: Reader, family: str) -> None:
    """Refuse use_sliding_window=true (no released Qwen3 uses it; its layout is not modelled)."""
    use_sw, _ = r.opt_bool("use_sliding_window", False)
    if use_sw:
        raise HFConfigError(
            f"{PREFIX}: 'use_sliding_window'=true is not supported for {family}; allowed: false"
        )


# --------------------------------------------------------------------------------------------
# Sliding windows
# --------------------------------------------------------------------------------------------

#: () -> (number of layers using the window, how that number was found).
Count = Callable[[], tuple[int, str]]


def sliding_window(
    r: Reader, default: int | None, key: str = "sliding_window", how: str | None = None
) -> int | None:
    """The window size: absent means ``default``, JSON null none (full attention)."""
    return nullable(default, key, how)(r, "sliding_window", {})


def window_layers(r: Reader, out: dict[str, Any], window: int | None, count: Count) -> None:
    """Record ``window`` on the layers ``count()`` finds; with none, the window is dropped
    with its source (a window no layer uses is full attention)."""
    if window is None:
        return
    counted, how = count()
    if counted:
        out["sliding_window"] = window
        out["num_sliding_window_layers"] = counted
        r.note("num_sliding_window_layers", how)
    else:
        r.sources.pop("sliding_window", None)


def by_layer_types(r: Reader, layers: int, otherwise: Count) -> Count:
    """Count the sliding layers from ``layer_types``; without it, ``otherwise``."""

    def count() -> tuple[int, str]:
        counted = r.layer_types(layers)
        if counted is None:
            return otherwise()
        return counted, f"layer_types: {counted} of {layers} layers are sliding_attention"

    return count


def every_other(hf_class: str, layers: int) -> Count:
    """The layer_types default of Gemma2Config and GptOssConfig: sliding when (i + 1) % 2, i.e.
    layers 0, 2, 4...: ceil(layers / 2) of them."""
    counted = (layers + 1) // 2
    return lambda: (
        counted,
        f"{hf_class} layer_types default: every other layer, {counted} of {layers}",
    )

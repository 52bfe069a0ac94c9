"""A parsed ``config.json`` dict -> a :class:`~advisor.catalog.specs.ModelSpec`: which family it
is, then that family's mapper, then the checks of the spec itself."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from advisor.catalog.hf.errors import PREFIX, HFConfigError, json_type, show
from advisor.catalog.hf.reader import Reader
from advisor.catalog.hf.registry import ARCHITECTURES, FAMILIES, MODEL_TYPES
from advisor.catalog.specs import MODEL_FAMILIES, ModelSpec, slugify

#: Families this importer maps (ModelSpec.family values).
SUPPORTED_FAMILIES: tuple[str, ...] = MODEL_FAMILIES


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
            f"{PREFIX}: 'model_type' must be a string, got {show(model_type)} "
            f"({json_type(model_type)})"
        )
    if archs is not None and (
        not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)
    ):
        raise HFConfigError(
            f"{PREFIX}: 'architectures' must be a list of strings, got {show(archs)}"
        )
    archs = archs or []
    if model_type is None and not archs:
        raise HFConfigError(
            f"{PREFIX}: missing 'model_type' and 'architectures'; cannot tell the model "
            f"family (supported: {', '.join(SUPPORTED_FAMILIES)})"
        )
    from_type = MODEL_TYPES.get(model_type) if model_type is not None else None
    from_arch = next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None)
    if from_type and from_arch and from_type != from_arch:
        raise HFConfigError(
            f"{PREFIX}: model_type {show(model_type)} ({from_type}) disagrees with architectures "
            f"{_listed(archs)} ({from_arch})"
        )
    family = from_type or from_arch
    if family is None:
        arch_txt = _listed(archs) if archs else "none given"
        raise HFConfigError(
            f"unknown architecture {arch_txt} (model_type {show(model_type)}); "
            f"supported: {', '.join(SUPPORTED_FAMILIES)}"
        )
    return family


def _listed(values: list[str], most: int = 3) -> str:
    """Values from the file for a message: each cut short (errors.show), at most ``most`` of
    them, the rest counted, so the message still reaches the supported list.

    >>> _listed(["A" * 100, "B", "C", "D", "E"])[-23:]
    "'B', 'C' and 2 more (5)"
    """
    shown = ", ".join(show(v) for v in values[:most])
    return shown + (
        f" and {len(values) - most:,} more ({len(values):,})" if len(values) > most else ""
    )


def _validation_message(exc: ValidationError) -> str:
    """One readable line from a pydantic ValidationError."""
    parts = []
    for err in exc.errors():
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        loc = ".".join(str(x) for x in err.get("loc", ()))
        if loc:
            parts.append(f"{loc}={show(err.get('input'))}: {msg}")
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
        raise HFConfigError(f"{PREFIX}: expected a JSON object, got {json_type(cfg)}")
    if not isinstance(source, str) or len(source.strip()) < 3:
        raise HFConfigError(f"source must be a citation of at least 3 characters, got {source!r}")
    for arg, val in (("model_id", model_id), ("name", name)):
        if val is not None and not isinstance(val, str):
            raise HFConfigError(f"{arg} must be a string, got {show(val)}")
    family = FAMILIES[detect_family(cfg)]
    text_cfg = cfg.get("text_config") if family.text_config else None
    if text_cfg is not None:
        if not isinstance(text_cfg, dict):
            raise HFConfigError(
                f"{PREFIX}: 'text_config' must be an object, got {json_type(text_cfg)}"
            )
        r = Reader(text_cfg, family.name, family.hf_class, f"{source.strip()} (text_config)")
        try:
            fields = family.map(r)
        except HFConfigError as exc:  # the first quoted key is nested: 'text_config.key'
            msg = re.sub(r"'([A-Za-z_]\w*)'", r"'text_config.\1'", str(exc), count=1)
            raise HFConfigError(msg) from None
    else:
        r = Reader(cfg, family.name, family.hf_class, source.strip())
        fields = family.map(r)

    quant = cfg.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "fp8":
        # the checkpoint's own FP8 weights (DeepSeek-V3, Kimi K2, MiniMax-M2): the reference
        fields["released_weights_dtype"] = "fp8"
        r.note("released_weights_dtype", "quantization_config.quant_method fp8")

    name_or_path = cfg.get("_name_or_path")
    if name_or_path is not None and not isinstance(name_or_path, str):
        raise HFConfigError(f"{PREFIX}: '_name_or_path' must be a string, got {show(name_or_path)}")
    model_type = cfg.get("model_type") or family.name
    display = (name or "").strip() or (name_or_path or "").strip() or model_type
    if model_id is None:
        model_id = slugify(display)
        if len(model_id) < 2:
            model_id = slugify(f"{family.name}-{model_id}")
    try:
        return ModelSpec(
            id=model_id,
            name=display[:120],
            family=family.name,
            sources=r.sources,
            **fields,
        )
    except ValidationError as exc:
        raise HFConfigError(f"{PREFIX}: {_validation_message(exc)}") from None

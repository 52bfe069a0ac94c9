"""data/checkpoints.yaml: the published checkpoints per model and weight dtype, their formats,
and which engines load each format (on NVIDIA and on AMD GPUs).

Read by the deploy generator (advisor/deploy/checkpoints.py: what a server loads) and by the
search (a checkpoint's block quantization rules out layouts an engine refuses to load).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.catalog.files import load_data_yaml
from advisor.catalog.loader import DATA_DIR, CatalogError
from advisor.catalog.specs import SLUG, WeightDType

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
SIXTEEN_BIT = ("bf16", "fp16")

Engine = Literal["vllm", "sglang", "trtllm"]
#: A Hugging Face repository id: owner/name (huggingface.co allows letters, digits, - _ .).
_REPO = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$"
#: Where the repository was seen to exist and hold the format: a page, or a file at a commit.
_SOURCE = r"^(https://\S+|github:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+@[0-9a-f]{40} \S+)"


class CheckpointEntry(BaseModel):
    """One published checkpoint: the repository a server loads, its format, and the evidence."""

    model_config = _STRICT

    repo: Annotated[str, Field(pattern=_REPO)]
    format: Annotated[str, Field(min_length=2, max_length=40)]
    source: Annotated[str, Field(min_length=20, max_length=600, pattern=_SOURCE)]
    #: Block-quantized weights (FP8 with one scale per block x block tile: config.json
    #: quantization_config.weight_block_size): the block's side, None when not blocked. An
    #: engine that splits an expert's columns needs whole blocks on each GPU
    #: (``advisor.physics.engine_limits.block_quantized_moe_tp_blocker``).
    weight_block: Annotated[int, Field(ge=1, le=4096)] | None = None


class CheckpointTable(BaseModel):
    """data/checkpoints.yaml: formats (format -> engines that load it) and model -> dtype -> entry."""

    model_config = _STRICT

    formats: dict[Annotated[str, Field(min_length=2, max_length=40)], list[Engine]]
    #: format -> the engines whose ROCm builds load it (every format of ``formats`` listed, a
    #: subset of its engines): an AMD GPU's server refuses the others when it starts.
    rocm_formats: dict[Annotated[str, Field(min_length=2, max_length=40)], list[Engine]]
    rocm_formats_source: Annotated[str, Field(min_length=20, max_length=600, pattern=_SOURCE)]
    models: dict[Annotated[str, Field(pattern=SLUG)], dict[WeightDType, CheckpointEntry]]
    #: Models whose repositories name their own code (config.json auto_map), so a server must
    #: be told to run it (--trust-remote-code): model -> the evidence (a published command).
    remote_code: dict[
        Annotated[str, Field(pattern=SLUG)],
        Annotated[str, Field(min_length=20, max_length=600, pattern=_SOURCE)],
    ] = {}

    @model_validator(mode="after")
    def _formats_known(self) -> CheckpointTable:
        if set(self.rocm_formats) != set(self.formats):
            raise ValueError(
                f"rocm_formats: lists {sorted(self.rocm_formats)}; every format of 'formats' "
                f"({sorted(self.formats)}) and no other"
            )
        for fmt, engines in self.rocm_formats.items():
            if extra := sorted(set(engines) - set(self.formats[fmt])):
                raise ValueError(
                    f"rocm_formats.{fmt}: {extra} do not load {fmt} at all (formats.{fmt}: "
                    f"{self.formats[fmt]})"
                )
        for model in self.remote_code:
            if model not in self.models:
                raise ValueError(f"remote_code.{model}: not a model of 'models'")
        for model, table in self.models.items():
            for dtype, entry in table.items():
                if entry.format not in self.formats:
                    raise ValueError(
                        f"models.{model}.{dtype}.format: {entry.format!r} is not one of "
                        f"{sorted(self.formats)}"
                    )
        return self


def load_checkpoint_table(raw: Any) -> CheckpointTable:
    """Validate a checkpoints document; CatalogError names the field, the value and the rule."""
    try:
        return CheckpointTable.model_validate(raw)
    except ValidationError as exc:
        raise CatalogError(f"checkpoints.yaml: {exc}") from exc


@cache
def checkpoints() -> dict[str, Any]:
    """data/checkpoints.yaml, validated: ``models`` (model -> dtype -> {repo, format, source}),
    ``formats`` (format -> engines) and ``rocm_formats`` (format -> engines on AMD GPUs)."""
    raw = load_data_yaml((DATA_DIR / "checkpoints.yaml").read_text("utf-8"))
    return load_checkpoint_table(raw).model_dump()


def listed_checkpoint(model_id: str, dtype: str) -> dict | None:
    """The listed checkpoint of ``model_id`` at weights ``dtype`` (a 16-bit or fp32 dtype: the
    16-bit release), or None."""
    table = checkpoints()["models"].get(model_id, {})
    keys = SIXTEEN_BIT if dtype in SIXTEEN_BIT + ("fp32",) else (dtype,)
    return next((table[k] for k in keys if k in table), None)


def loadable_checkpoint(model_id: str, weights: str, engine: str, vendor: str) -> dict | None:
    """The listed checkpoint of ``weights`` that ``engine``'s build for ``vendor``'s GPUs loads
    (``rocm_formats`` for AMD, else ``formats``), or None: what a server of that engine is
    given when one exists.

    >>> loadable_checkpoint("qwen3-235b-a22b", "fp8", "sglang", "NVIDIA")["repo"]
    'Qwen/Qwen3-235B-A22B-FP8'
    >>> loadable_checkpoint("qwen3-235b-a22b", "fp8", "trtllm", "NVIDIA") is None  # qwen-fp8
    True
    """
    formats = checkpoints()["rocm_formats" if vendor == "AMD" else "formats"]
    hit = listed_checkpoint(model_id, weights)
    return hit if hit and engine in formats[hit["format"]] else None

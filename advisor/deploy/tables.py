"""The deploy data tables in data/: engine flags, official images, published checkpoints."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.catalog.loader import DATA_DIR, CatalogError
from advisor.catalog.specs import SLUG, WeightDType

ENGINES = ("vllm", "sglang", "trtllm")


@cache
def engine_flags(engine: str) -> dict[str, Any]:
    """data/engine-flags/<engine>.yaml: ``flags`` (flag -> {choices?}), ``source``, ``version``."""
    return yaml.safe_load((DATA_DIR / "engine-flags" / f"{engine}.yaml").read_text("utf-8"))


@cache
def images() -> dict[str, dict[str, dict[str, str]]]:
    """engine -> GPU vendor -> {image, source} (data/engine-images.yaml)."""
    return yaml.safe_load((DATA_DIR / "engine-images.yaml").read_text("utf-8"))["images"]


_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
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


class CheckpointTable(BaseModel):
    """data/checkpoints.yaml: formats (format -> engines that load it) and model -> dtype -> entry."""

    model_config = _STRICT

    formats: dict[Annotated[str, Field(min_length=2, max_length=40)], list[Engine]]
    models: dict[Annotated[str, Field(pattern=SLUG)], dict[WeightDType, CheckpointEntry]]
    #: Models whose repositories name their own code (config.json auto_map), so a server must
    #: be told to run it (--trust-remote-code): model -> the evidence (a published command).
    remote_code: dict[
        Annotated[str, Field(pattern=SLUG)],
        Annotated[str, Field(min_length=20, max_length=600, pattern=_SOURCE)],
    ] = {}

    @model_validator(mode="after")
    def _formats_known(self) -> CheckpointTable:
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
    """data/checkpoints.yaml, validated: ``models`` (model -> dtype -> {repo, format, source})
    and ``formats`` (format -> engines)."""
    raw = yaml.safe_load((DATA_DIR / "checkpoints.yaml").read_text("utf-8"))
    return load_checkpoint_table(raw).model_dump()

"""The deploy data tables in data/: engine flags, official images, published checkpoints (read
in advisor.catalog.checkpoint_table, which the search reads too)."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.catalog.checkpoint_table import (  # noqa: F401  (the deploy tables' checkpoints)
    CheckpointEntry,
    CheckpointTable,
    checkpoints,
    load_checkpoint_table,
)
from advisor.catalog.files import load_data_yaml
from advisor.catalog.loader import DATA_DIR, CatalogError
from advisor.catalog.specs import SLUG

ENGINES = ("vllm", "sglang", "trtllm")


@cache
def engine_flags(engine: str, version: str | None = None) -> dict[str, Any]:
    """data/engine-flags/<engine>-<version>.yaml (default: the engine's default release):
    ``flags`` (flag -> {choices?}), ``source``, ``version``."""
    version = version or releases()[engine].default
    path = DATA_DIR / "engine-flags" / f"{engine}-{version}.yaml"
    return load_data_yaml(path.read_text("utf-8"))


_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
_VERSION = r"^[0-9]+\.[0-9]+\.[0-9]+$"


class ImageEntry(BaseModel):
    """An official image of one release for some GPUs: every NVIDIA GPU, or listed AMD ids."""

    model_config = _STRICT

    gpus: Literal["NVIDIA"] | list[Annotated[str, Field(pattern=SLUG)]]
    image: Annotated[str, Field(pattern=r"^[a-z0-9./_-]+:[A-Za-z0-9._-]+$", max_length=200)]
    source: Annotated[str, Field(min_length=20, max_length=600)]

    def serves(self, gpu_id: str, vendor: str) -> bool:
        return self.gpus == vendor if isinstance(self.gpus, str) else gpu_id in self.gpus


class Release(BaseModel):
    model_config = _STRICT

    images: Annotated[list[ImageEntry], Field(min_length=1, max_length=10)]


class EngineReleases(BaseModel):
    """data/engine-images.yaml, one engine: its releases (newest first) and the default one."""

    model_config = _STRICT

    default: Annotated[str, Field(pattern=_VERSION)]
    releases: dict[Annotated[str, Field(pattern=_VERSION)], Release]

    @model_validator(mode="after")
    def _default_listed(self) -> EngineReleases:
        if self.default not in self.releases:
            raise ValueError(f"default {self.default!r} is not one of {list(self.releases)}")
        return self

    def image(self, version: str, gpu_id: str, vendor: str) -> ImageEntry | None:
        """The release's image for the GPU, None when the release has none for it."""
        return next((i for i in self.releases[version].images if i.serves(gpu_id, vendor)), None)

    def version_for(self, gpu_id: str, vendor: str) -> str:
        """The default release, or the newest with an image for the GPU when it has none."""
        order = [self.default, *sorted(self.releases, key=_version_key, reverse=True)]
        return next((v for v in order if self.image(v, gpu_id, vendor)), self.default)


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


@cache
def releases() -> dict[str, EngineReleases]:
    """engine -> its releases and images (data/engine-images.yaml), validated; every release's
    flag list exists."""
    raw = load_data_yaml((DATA_DIR / "engine-images.yaml").read_text("utf-8"))["engines"]
    try:
        out = {e: EngineReleases.model_validate(raw[e]) for e in ENGINES}
    except (ValidationError, KeyError) as exc:
        raise CatalogError(f"engine-images.yaml: {exc}") from exc
    for e, r in out.items():
        for v in r.releases:
            if not (DATA_DIR / "engine-flags" / f"{e}-{v}.yaml").is_file():
                raise CatalogError(f"engine-images.yaml: {e} {v} has no data/engine-flags file")
    return out

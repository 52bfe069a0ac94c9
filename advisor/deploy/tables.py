"""The deploy data tables in data/: engine flags, official images, published checkpoints."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from advisor.catalog.loader import DATA_DIR

ENGINES = ("vllm", "sglang", "trtllm")


@cache
def engine_flags(engine: str) -> dict[str, Any]:
    """data/engine-flags/<engine>.yaml: ``flags`` (flag -> {choices?}), ``source``, ``version``."""
    return yaml.safe_load((DATA_DIR / "engine-flags" / f"{engine}.yaml").read_text("utf-8"))


@cache
def images() -> dict[str, dict[str, dict[str, str]]]:
    """engine -> GPU vendor -> {image, source} (data/engine-images.yaml)."""
    return yaml.safe_load((DATA_DIR / "engine-images.yaml").read_text("utf-8"))["images"]


@cache
def checkpoints() -> dict[str, Any]:
    """data/checkpoints.yaml: ``models`` (model -> dtype -> {repo, format}) and ``formats``."""
    return yaml.safe_load((DATA_DIR / "checkpoints.yaml").read_text("utf-8"))

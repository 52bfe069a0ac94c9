"""Load and look up the YAML catalogs in ``data/``.

Each catalog file has ``refs`` (short keys for citations used many times) and a list of entries.
A source value equal to a ref key is replaced by the ref's text, so every entry carries its full
citation after loading.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from advisor.catalog.files import load_data_yaml
from advisor.catalog.quoting import echo
from advisor.catalog.specs import Accelerator, Interconnect, ModelSpec

DATA_DIR = Path(__file__).resolve().parent.parent.parent / "data"

T = TypeVar("T", bound=BaseModel)


class CatalogError(ValueError):
    """A catalog file or entry that does not validate; the message names file, entry and field."""


class UnknownIdError(KeyError):
    """An id that is not in a catalog; ``str()`` lists the allowed ids."""

    def __init__(self, kind: str, value: str, allowed: list[str]):
        self.kind, self.value, self.allowed = kind, value, allowed
        super().__init__(f"unknown {kind} {echo(value)}; allowed: {', '.join(allowed)}")

    def __str__(self) -> str:
        return self.args[0]


def _resolve_sources(raw: dict[str, Any], refs: dict[str, str]) -> dict[str, Any]:
    sources = raw.get("sources")
    if isinstance(sources, dict):
        raw = {**raw, "sources": {k: refs.get(v, v) for k, v in sources.items()}}
    return raw


def load_entries(path: Path, key: str, model: type[T]) -> dict[str, T]:
    """Validate every entry of ``path[key]`` with ``model``; ids must be unique."""
    try:
        doc = load_data_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path.name}: cannot read: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise CatalogError(f"{path.name}: expected a mapping with a list under {key!r}")
    refs = doc.get("refs") or {}
    out: dict[str, T] = {}
    for i, raw in enumerate(doc[key]):
        if not isinstance(raw, dict):
            raise CatalogError(f"{path.name}: {key}[{i}] is not a mapping")
        try:
            entry = model.model_validate(_resolve_sources(raw, refs))
        except ValidationError as exc:
            raise CatalogError(f"{path.name}: {key}[{i}] ({raw.get('id')!r}): {exc}") from exc
        if entry.id in out:  # type: ignore[attr-defined]
            raise CatalogError(f"{path.name}: duplicate id {entry.id!r}")  # type: ignore[attr-defined]
        out[entry.id] = entry  # type: ignore[attr-defined]
    return out


@cache
def accelerators() -> dict[str, Accelerator]:
    return load_entries(DATA_DIR / "accelerators.yaml", "accelerators", Accelerator)


@cache
def interconnects() -> dict[str, Interconnect]:
    return load_entries(DATA_DIR / "interconnects.yaml", "interconnects", Interconnect)


@cache
def models() -> dict[str, ModelSpec]:
    return load_entries(DATA_DIR / "models.yaml", "models", ModelSpec)


def measurement_paths(data_dir: Path = DATA_DIR) -> list[Path]:
    """Every measurement file: data/measurements.csv first, then data/measurements*.csv by name.

    Each helper's rows live in their own file (ids M..., S..., E..., A...); every reader (perf
    validation, collectives, queueing tests, the PDF's sources) goes through this list.
    """
    main = data_dir / "measurements.csv"
    rest = sorted(p for p in data_dir.glob("measurements*.csv") if p != main)
    return ([main] if main.exists() else []) + rest


@cache
def measurement_rows() -> tuple[dict[str, str], ...]:
    """Rows of every measurement file, in file order; a duplicate id is a catalog error."""
    rows: list[dict[str, str]] = []
    seen: dict[str, str] = {}
    for path in measurement_paths():
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                rid = row.get("id", "")
                if rid in seen:
                    raise CatalogError(f"{path.name}: id {rid!r} already in {seen[rid]}")
                seen[rid] = path.name
                rows.append(row)
    return tuple(rows)


def get_accelerator(gpu_id: str) -> Accelerator:
    cat = accelerators()
    if gpu_id not in cat:
        raise UnknownIdError("accelerator", gpu_id, sorted(cat))
    return cat[gpu_id]


def get_interconnect(link_id: str) -> Interconnect:
    cat = interconnects()
    if link_id not in cat:
        raise UnknownIdError("interconnect", link_id, sorted(cat))
    return cat[link_id]


def get_model(model_id: str) -> ModelSpec:
    cat = models()
    if model_id not in cat:
        raise UnknownIdError("model", model_id, sorted(cat))
    return cat[model_id]

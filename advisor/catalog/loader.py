"""Load and look up the YAML catalogs in ``data/``.

Each catalog file has ``refs`` (short keys for citations used many times) and a list of entries.
A source value equal to a ref key is replaced by the ref's text, so every entry carries its full
citation after loading.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from advisor.catalog.files import load_data_yaml
from advisor.catalog.quoting import echo
from advisor.catalog.specs import Accelerator, FabricNames, Interconnect, ModelSpec

if TYPE_CHECKING:  # imported where rows are read: 90-140 ms of every CLI start
    from advisor.catalog.measurement_row import MeasurementRow

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


def _read(path: Path) -> Any:
    try:
        return load_data_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path.name}: cannot read: {exc}") from exc


def load_entries(path: Path, key: str, model: type[T], doc: Any = None) -> dict[str, T]:
    """Validate every entry of ``path[key]`` with ``model`` (``doc``: the file already read);
    ids must be unique."""
    doc = _read(path) if doc is None else doc
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
def _interconnects_doc() -> Any:
    """data/interconnects.yaml, parsed once for its interconnects and its fabric names (a
    second parse was ~4 ms of a fresh process's first search)."""
    return _read(DATA_DIR / "interconnects.yaml")


@cache
def interconnects() -> dict[str, Interconnect]:
    path = DATA_DIR / "interconnects.yaml"
    return load_entries(path, "interconnects", Interconnect, _interconnects_doc())


@cache
def fabric_names() -> dict[str, str]:
    """How the answers name each interconnect ``kind`` (data/interconnects.yaml ``fabrics``).

    >>> fabric_names()["xgmi"]
    'Infinity Fabric'
    """
    path = DATA_DIR / "interconnects.yaml"
    doc = _interconnects_doc()
    try:
        return dict(FabricNames.model_validate((doc or {}).get("fabrics")).root)
    except (ValidationError, AttributeError) as exc:
        raise CatalogError(f"{path.name}: fabrics: {exc}") from exc


@cache
def models() -> dict[str, ModelSpec]:
    return load_entries(DATA_DIR / "models.yaml", "models", ModelSpec)


#: The measurement files, each named for what it holds (the ids' letter in brackets), in the
#: order their rows are read: the fit and the cross-validation see the rows in this order. A new
#: file is added here (docs/data.md "How to add rows"); an unlisted data/measurements*.csv is an
#: error, never silently left out.
MEASUREMENT_FILES = (
    "measurements.csv",  # [M] TensorRT-LLM perf overview, all-reduce sweeps, gpt-fast
    "measurements-amd-rocm-docs.csv",  # [A] ROCm vLLM dev-docker, AMD pages, RCCL
    "measurements-amd-atom-inferencex.csv",  # [R] ATOM dashboard and recipes, InferenceX on AMD
    "measurements-engine-perf-pages.csv",  # [E] TensorRT-LLM / SGLang / vLLM performance pages
    "measurements-serving-cookbooks.csv",  # [S] SGLang cookbook and vLLM recipes under load
    "measurements-sglang-page-revisions.csv",  # [C] earlier runs of SGLang cookbook pages
    "measurements-independent-publishers.csv",  # [N] publishers no other file uses
    "measurements-vllm-recipes-under-load.csv",  # [V] vLLM recipes and PRs under load
    "measurements-community-and-cloud.csv",  # [K] PR branches, issues, notes repos, Azure guide
    "measurements-vllm-pr-batch-latency.csv",  # [L] vLLM PRs' benchmark_latency baselines, NVIDIA
)


def measurement_paths(data_dir: Path = DATA_DIR) -> list[Path]:
    """Every measurement file (``MEASUREMENT_FILES``, in that order) present in ``data_dir``.

    Every reader (perf validation, collectives, queueing tests, the PDF's sources) goes through
    this list; a data/measurements*.csv it does not name is a catalog error.
    """
    unlisted = sorted(p.name for p in data_dir.glob("measurements*.csv")
                      if p.name not in MEASUREMENT_FILES)  # fmt: skip
    if unlisted:
        raise CatalogError(f"{', '.join(unlisted)}: measurement file not in "
                           "advisor/catalog/loader.py MEASUREMENT_FILES (add it there)")  # fmt: skip
    return [data_dir / n for n in MEASUREMENT_FILES if (data_dir / n).exists()]


def read_measurements(
    paths: list[Path],
) -> tuple[tuple[dict[str, str], ...], tuple[MeasurementRow, ...]]:
    """Every row of ``paths`` in order, as the CSV has it and as a validated ``MeasurementRow``;
    a row that does not validate, or an id seen before, is a CatalogError naming the file, the
    line, the row id, the field and the value."""
    from advisor.catalog.measurement_row import MeasurementRow, validation_message

    rows: list[dict[str, str]] = []
    records: list[MeasurementRow] = []
    seen: dict[str, str] = {}
    for path in paths:
        with path.open(newline="", encoding="utf-8") as fh:
            for line, row in enumerate(csv.DictReader(fh), start=2):
                rid = row.get("id", "")
                if rid in seen:
                    raise CatalogError(f"{path.name}: id {rid!r} already in {seen[rid]}")
                seen[rid] = path.name
                try:
                    records.append(MeasurementRow.from_csv(row))
                except ValueError as exc:  # pydantic's ValidationError is a ValueError
                    raise CatalogError(f"{path.name} line {line}: row {rid!r}: "
                                       f"{validation_message(exc)}") from None  # fmt: skip
                rows.append(row)
    return tuple(rows), tuple(records)


@cache
def _measurements() -> tuple[tuple[dict[str, str], ...], tuple[MeasurementRow, ...]]:
    return read_measurements(measurement_paths())


def measurement_rows() -> tuple[dict[str, str], ...]:
    """Rows of every measurement file, in file order, as the CSV has them (each validated by
    ``MeasurementRow`` first); a duplicate id is a catalog error."""
    return _measurements()[0]


def measurement_records() -> tuple[MeasurementRow, ...]:
    """``measurement_rows`` as validated ``MeasurementRow`` models (typed engine, load, metric)."""
    return _measurements()[1]


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

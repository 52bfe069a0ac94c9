"""Specs and catalogs: the bottom layer. Imports nothing else from advisor."""

from advisor.catalog.loader import (
    CatalogError,
    UnknownIdError,
    accelerators,
    fabric_names,
    get_accelerator,
    get_interconnect,
    get_model,
    interconnects,
    models,
)
from advisor.catalog.specs import (
    KV_DTYPES,
    WEIGHT_DTYPES,
    Accelerator,
    Interconnect,
    ModelSpec,
    PeakFlops,
)

__all__ = [
    "KV_DTYPES",
    "WEIGHT_DTYPES",
    "Accelerator",
    "CatalogError",
    "Interconnect",
    "ModelSpec",
    "PeakFlops",
    "UnknownIdError",
    "accelerators",
    "fabric_names",
    "get_accelerator",
    "get_interconnect",
    "get_model",
    "interconnects",
    "models",
]

"""Default acceptance rate of speculative decoding per target/draft pair (data/spec_acceptance.yaml),
stated as published or as the app's assumption."""

from __future__ import annotations

from functools import cache
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field

from advisor.catalog.files import load_data_yaml
from advisor.catalog.loader import DATA_DIR, CatalogError

_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Acceptance(BaseModel):
    """One acceptance rate (per drafted token) and where it comes from."""

    model_config = _STRICT

    acceptance: Annotated[float, Field(ge=0, le=1)]
    source: Annotated[str, Field(min_length=10)]
    published: bool = True


class _Pair(BaseModel):
    model_config = _STRICT

    target: str
    draft: str
    acceptance: Annotated[float, Field(ge=0, le=1)]
    source: Annotated[str, Field(min_length=10)]


@cache
def _table() -> tuple[Acceptance, dict[tuple[str, str], Acceptance]]:
    path = DATA_DIR / "spec_acceptance.yaml"
    try:
        doc = load_data_yaml(path.read_text(encoding="utf-8"))
        default = Acceptance(**doc["default"], published=False)
        pairs: dict[tuple[str, str], Acceptance] = {}
        for i, raw in enumerate(doc.get("pairs") or []):
            p = _Pair.model_validate(raw)
            if (p.target, p.draft) in pairs:
                raise CatalogError(f"{path.name}: pairs[{i}] repeats {p.target} / {p.draft}")
            pairs[(p.target, p.draft)] = Acceptance(acceptance=p.acceptance, source=p.source)
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{path.name}: {exc}") from exc
    return default, pairs


def default_acceptance(target_id: str, draft_id: str | None) -> Acceptance:
    """The published acceptance rate of the pair, or the stated default (``published`` False).

    >>> default_acceptance("llama-3.1-70b", "llama-3.1-8b").acceptance  # llama.cpp, 58.68 %
    0.59
    >>> default_acceptance("qwen3-32b", "qwen3-8b").published
    False
    """
    default, pairs = _table()
    return pairs.get((target_id, draft_id or ""), default)

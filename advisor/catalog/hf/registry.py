"""Every family the importer maps, and the ``model_type`` / ``architectures`` names of each.

To add a family: a module in ``families/`` with its mapper and ``FAMILIES``, listed here, and
its name in ``ModelSpec.family`` (``advisor.catalog.specs.ModelFamily``).
"""

from __future__ import annotations

from advisor.catalog.hf.families import (
    deepseek_v3,
    falcon,
    gemma,
    glm4_moe,
    gpt_oss,
    llama,
    llama4,
    minimax_m2,
    mistral,
    qwen2,
    qwen3,
)
from advisor.catalog.hf.mapper import Family

_MODULES = (
    llama,
    mistral,
    qwen2,
    gemma,
    falcon,
    deepseek_v3,
    qwen3,
    gpt_oss,
    llama4,
    glm4_moe,
    minimax_m2,
)

#: family name -> Family.
FAMILIES: dict[str, Family] = {f.name: f for m in _MODULES for f in m.FAMILIES}

#: ``model_type`` -> family name.
MODEL_TYPES: dict[str, str] = {t: f.name for f in FAMILIES.values() for t in f.model_types}

#: ``architectures[i]`` -> family name.
ARCHITECTURES: dict[str, str] = {a: f.name for f in FAMILIES.values() for a in f.architectures}

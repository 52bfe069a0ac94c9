"""Cached wrappers around advisor calls (the only caching: advisor itself stays pure)."""

from __future__ import annotations

import streamlit as st

from advisor.catalog import get_accelerator
from advisor.catalog.specs import ModelSpec
from advisor.charts import memory_charts
from advisor.physics.memory import MemoryBudget, memory_budget


@st.cache_data(max_entries=512, show_spinner=False)
def budget(model: ModelSpec, gpu_id: str, **kw: object) -> MemoryBudget:
    return memory_budget(model, get_accelerator(gpu_id), **kw)


@st.cache_data(max_entries=64, show_spinner=False)
def max_sequences_sweep(model: ModelSpec, gpu_id: str, **kw: object) -> list[dict]:
    return memory_charts.max_sequences_sweep(model, get_accelerator(gpu_id), **kw)


@st.cache_data(max_entries=64, show_spinner=False)
def allocation_comparison(model: ModelSpec, gpu_id: str, **kw: object) -> list[dict]:
    return memory_charts.allocation_comparison(model, get_accelerator(gpu_id), **kw)

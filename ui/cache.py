"""Cached wrappers around advisor calls (the only caching: advisor itself stays pure)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from advisor.catalog import get_accelerator
from advisor.catalog.specs import ModelSpec
from advisor.charts import memory_charts
from advisor.charts.compare_charts import deployment_sweep
from advisor.perf.model.overlay import active_key
from advisor.physics.memory import MemoryBudget, memory_budget
from advisor.scenario import Scenario, dump_scenario, load_scenario
from ui.url import View


@st.cache_data(max_entries=512, show_spinner=False)
def budget(model: ModelSpec, gpu_id: str, **kw: object) -> MemoryBudget:
    return memory_budget(model, get_accelerator(gpu_id), **kw)


@st.cache_data(max_entries=64, show_spinner=False)
def max_sequences_sweep(model: ModelSpec, gpu_id: str, **kw: object) -> list[dict]:
    return memory_charts.max_sequences_sweep(model, get_accelerator(gpu_id), **kw)


@st.cache_data(max_entries=64, show_spinner=False)
def allocation_comparison(model: ModelSpec, gpu_id: str, **kw: object) -> list[dict]:
    return memory_charts.allocation_comparison(model, get_accelerator(gpu_id), **kw)


@st.cache_data(max_entries=64, show_spinner=False)
def _deployment_sweep(
    scenario_json: str, deployment_json: str, profile_key: str = ""
) -> list[dict]:
    from advisor.search.results import Deployment

    d = Deployment.model_validate_json(deployment_json)
    return deployment_sweep(load_scenario(scenario_json), d)


def deployment_sweep_for(scenario: Scenario, d: Any) -> list[dict]:
    """``compare_charts.deployment_sweep`` (cached on the scenario and deployment JSON)."""
    return _deployment_sweep(keys(scenario, View())[0], d.model_dump_json(), active_key())


def recommend_for(scenario_json: str) -> Any:
    """``advisor.search.recommend`` (cached on the scenario JSON and the session's client
    profile, advisor/perf/model/overlay.py); None if not available. The profile prices only the
    candidates inside its range (advisor/search/profile_scope.py; ``profile_fallback`` says
    whether it priced a deployment)."""
    return _recommend_for(scenario_json, active_key())


def profile_fallback(d: Any) -> str | None:
    """Why the session's client profile did not price the search's deployment ``d``, or None."""
    from ui.client_profile import session_profile

    if session_profile() is None or d is None:
        return None
    return d.client_profile_fallback


@st.cache_data(max_entries=64, show_spinner=False)
def _recommend_for(scenario_json: str, profile_key: str) -> Any:
    try:
        from advisor.search.recommend import recommend
    except ImportError:
        return None
    return recommend(load_scenario(scenario_json))


def keys(scenario: Scenario, view: View) -> tuple[str, str]:
    """Cache keys: the scenario JSON (without its name) and the view JSON."""
    return scenario_key(scenario), view.model_dump_json()


def focus_for(scenario_json: str, spec_text: str) -> Any:
    """``advisor.search.focus.evaluate_spec`` of a deployment (text form) for a scenario."""
    return _focus_for(scenario_json, spec_text, active_key())


@st.cache_data(max_entries=128, show_spinner=False)
def _focus_for(scenario_json: str, spec_text: str, profile_key: str) -> Any:
    from advisor.search.deployment_spec import parse_spec
    from advisor.search.focus import evaluate_spec

    return evaluate_spec(load_scenario(scenario_json), parse_spec(spec_text))


def scenario_key(scenario: Scenario) -> str:
    """The scenario JSON without its name: the key of its cached results and its focus."""
    return dump_scenario(scenario.model_copy(update={"name": ""}))


@st.cache_data(max_entries=128, show_spinner=False)
def _estimate(model: ModelSpec, gpu_id: str, inp_json: str, profile_key: str) -> dict:
    from advisor.perf.model.estimate import EstimateInput, estimate

    return estimate(model, get_accelerator(gpu_id), EstimateInput.model_validate_json(inp_json))


def estimate_for(model: ModelSpec, gpu: Any, inp: Any) -> dict:
    """``advisor.perf.model.estimate.estimate`` (cached on the model, GPU and input): its queueing fixed
    point is most of the Latency page's rerun, and a page widget that does not change the input
    (a chart option, a picker) no longer recomputes it."""
    return _estimate(model, gpu.id, inp.model_dump_json(), active_key())


@st.cache_data(max_entries=4, show_spinner=False)
def _out_of_sample(mtime_ns: int) -> dict | None:
    from advisor.perf.validation.validate import out_of_sample

    return out_of_sample()


def out_of_sample_cached() -> dict | None:
    """``advisor.perf.validation.validate.out_of_sample`` read once per version of
    data/crossval.yaml (keyed on its modification time): parsing the YAML took about 4 s of every
    Trust rerun."""
    return _out_of_sample(crossval_mtime_ns())


@st.cache_data(max_entries=8, show_spinner=False)
def interval_coverage(confidence: float, mtime_ns: int) -> dict[str, dict]:
    """``advisor.perf.model.intervals.coverage`` of data/crossval.yaml (keyed on its modification
    time, like ``out_of_sample_cached``)."""
    from advisor.perf.model.intervals import coverage, load_table

    return coverage(load_table(), confidence)


@st.cache_data(max_entries=2, show_spinner="Predicting the published percentiles…")
def percentile_check() -> dict:
    """``advisor.perf.validation.percentiles.percentile_report`` (about 1 s; the data files are fixed)."""
    from advisor.perf.validation.percentiles import percentile_report

    return percentile_report()


def crossval_mtime_ns() -> int:
    from advisor.catalog.loader import DATA_DIR

    try:
        return (DATA_DIR / "crossval.yaml").stat().st_mtime_ns
    except OSError:
        return 0


@st.cache_data(show_spinner="Predicting every published measurement…")
def trust_report() -> tuple[dict, list[dict], list[dict]]:
    """The Trust page's validation report, its rows with their sources, and the skipped rows."""
    from advisor.perf.model.overlay import shipped_only
    from advisor.perf.validation.trust import skipped_rows, trust_rows
    from advisor.perf.validation.validate import validation_report

    with shipped_only():  # the published check is of the shipped calibration, whatever the session
        rep = validation_report()
    return rep, trust_rows(rep), skipped_rows()


@st.cache_resource(max_entries=32, show_spinner=False)
def trust_figure(gpus: tuple[str, ...], engines: tuple[str, ...], models: tuple[str, ...],
                 families: tuple[str, ...]) -> Any:  # fmt: skip
    """The Trust page's predicted-against-measured scatter of the rows these filters keep
    (``filter_rows``; at least one), built once per filter set: the page reads nothing of the
    scenario, yet a sidebar change reran the 1,600-row figure, most of its rerun (issue 38).
    A resource (one object, not a pickled copy: unpickling a Figure validates it again); never
    changed after it is built (st.plotly_chart serialises a copy)."""
    from advisor.charts.trust_charts import trust_scatter
    from advisor.perf.validation.trust import filter_rows
    from advisor.perf.validation.validate import FAMILIES

    sel = filter_rows(trust_report()[1], gpus, engines, models, families)
    return trust_scatter(sel, f"Predicted vs measured: {len(sel)} measurements", list(FAMILIES))

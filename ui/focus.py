"""The deployment in focus: one per scenario, by default the recommended one.

Every detail page (Memory, Latency, Interconnect, Speculative) and the PDF describe it, under a
banner naming it. Session state ``_focus`` maps a scenario's key (its JSON without the name,
``ui.cache.scenario_key``) to the chosen deployment's text form and where it was chosen; no
entry means the recommendation. Changing the sidebar changes the key, so a new question starts
from its own recommendation. The choice travels in the URL as ``dep`` (``ui.url.DEP_KEY``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st

from advisor.scenario import Scenario
from advisor.search.deployment_spec import DeploymentSpec
from advisor.search.focus import Focus
from advisor.search.results import decode_batch_seqs
from advisor.search.space import powers_of_two_upto, search_weights
from ui import cache
from ui.format import md_escape

SS = st.session_state
FOCUS = "_focus"
#: A ``dep`` read from the link, applied to the first scenario the sidebar builds.
PENDING = "_focus_from_url"
RECOMMENDED = "recommended"
BY_HAND = "chosen by hand"


@dataclass(frozen=True)
class InFocus:
    """The deployment a page shows, its evaluation and where it was chosen."""

    spec: DeploymentSpec
    origin: str  # "recommended", "chosen by hand", "lowest latency", "Pareto point", ...
    result: Focus
    recommended: bool  # the search's recommendation itself
    can_go_back: bool  # a recommendation exists and another deployment is in focus

    @property
    def deployment(self):
        return self.result.deployment

    @property
    def problem(self) -> str:
        """'' or why the deployment cannot serve the scenario as asked (for every page)."""
        r = self.result
        if not r.fits:
            return "does not fit: " + "; ".join(r.reasons)
        d = r.deployment
        if d is not None and d.sla_verdict == "at risk" and d.at_risk:
            # its predictions meet the SLA, a range does not: said on every page, the range and
            # the target named (the measurement that narrows it is on Recommendation)
            return "at risk: " + "; ".join(d.at_risk[:-1] or d.at_risk)
        if r.fails:
            over = r.deployment is not None and r.deployment.meets_sla
            return ("over the budget: " if over else "misses the SLA: ") + "; ".join(r.fails)
        return ""

    def banner_text(self) -> str:
        text = f"**In focus:** {self.spec.describe()} — {self.origin}"
        # reasons can quote the model's name (an uploaded config.json): escaped
        return text + (f": {md_escape(self.problem)}" if self.problem else "")


def chosen(scenario: Scenario) -> tuple[str, str] | None:
    """(spec text, origin) chosen for this scenario, or None for the recommendation."""
    return SS.get(FOCUS, {}).get(cache.scenario_key(scenario))


def choose(scenario_key: str, spec_text: str | None, origin: str = BY_HAND) -> None:
    """Put a deployment in focus for a scenario (None: back to the recommended one).

    Safe in a widget callback (it only writes session state)."""
    table = dict(SS.get(FOCUS, {}))
    if spec_text is None:
        table.pop(scenario_key, None)
    else:
        table[scenario_key] = (spec_text, origin)
    SS[FOCUS] = table


def _fallback(scenario: Scenario) -> DeploymentSpec:
    """Nothing fits or meets the SLA: one node's largest power-of-two TP, the first dtypes the
    search tries (a model released quantized in its released precision: Kimi-K2 on one 8 x H100
    node read "fp16 weights ... 257 GB" while the search, told to serve the released fp8
    weights, had tried fp8 only)."""
    hw, o = scenario.hardware, scenario.options
    tp = powers_of_two_upto(min(hw.total_gpus, hw.gpus_per_node, 8))[-1]
    return DeploymentSpec(gpu=hw.gpus[0], tp=tp, weights=search_weights(scenario)[0],
                          kv=o.kv_dtypes[0])  # fmt: skip


def in_focus(scenario: Scenario) -> InFocus:
    """The deployment in focus for ``scenario`` (the recommendation unless another was chosen)."""
    sj = cache.scenario_key(scenario)
    rec = cache.recommend_for(sj)
    best = rec.best if rec is not None else None
    pick = chosen(scenario)
    if pick is not None and (best is None or pick[0] != str(best.spec)):
        result = cache.focus_for(sj, pick[0])
        return InFocus(result.spec, pick[1], result, False, best is not None)
    if best is not None:
        return InFocus(best.spec, RECOMMENDED, Focus(spec=best.spec, fits=True, deployment=best),
                       True, False)  # fmt: skip
    if rec is not None and rec.near_misses:
        m = rec.near_misses[0]
        result = Focus(spec=m.deployment.spec, fits=True, deployment=m.deployment, fails=m.fails)
        origin = ("the cheapest deployment meeting the SLA (none fits the budget)"
                  if m.deployment.meets_sla else "the closest near miss (no deployment meets the SLA)")  # fmt: skip
        return InFocus(m.deployment.spec, origin, result, False, False)
    spec = _fallback(scenario)
    return InFocus(spec, "no deployment fits the hardware", cache.focus_for(sj, str(spec)),
                   False, False)  # fmt: skip


def banner(scenario: Scenario, f: InFocus) -> None:
    """The short banner naming the deployment in focus, and the way back to the recommended."""
    text = f.banner_text()
    if not f.result.fits:
        st.error(text)
    elif f.problem:
        st.warning(text)
    else:
        st.info(text)
    if f.can_go_back:
        st.button(
            "Back to the recommended deployment", key="focus.back", on_click=choose,
            args=(cache.scenario_key(scenario), None),
        )  # fmt: skip


def show_focus(scenario: Scenario) -> InFocus:
    """``in_focus`` plus its banner: the first lines of every detail page."""
    f = in_focus(scenario)
    banner(scenario, f)
    return f


def focus_estimate(scenario: Scenario, f: InFocus, page_value: int | None):
    """The one-replica estimate of the deployment in focus at the scenario's load, with its
    ``EstimateInput``: the Latency page's means, and the figure the Speculative page quotes
    beside its fixed-batch TPOTs (one call, so both show the same number)."""
    from advisor.catalog import accelerators

    inp = focus_input(scenario, f, page_value)
    return inp, cache.estimate_for(scenario.model_spec(), accelerators()[f.spec.gpu], inp)


def focus_input(scenario: Scenario, f: InFocus, page_value: int | None):
    """The ``EstimateInput`` of ``focus_estimate``: its replica (``perf.model.sweeps.
    replica_config``) is the one every chart of the deployment in focus draws, so a client
    profile prices all of them or none (advisor/perf/model/replica.applied)."""
    from advisor.search.focus import estimate_input

    d = f.deployment
    return estimate_input(scenario, f.spec, d.running_batch if d is not None else None, page_value)


def sequences_in_flight(scenario: Scenario, f: InFocus, page_value: int | None) -> tuple[int, str]:
    """Sequences in flight on one (decode) replica of the deployment in focus, and how the
    number was obtained (shown to the user).

    Set on the page as requests in flight over the whole deployment (the busiest replica's
    share, as ``perf.model.estimate`` spreads them); else the search's mean running batch per replica at the scenario's load
    (the queueing model; closed loop for concurrent users). When the deployment does not fit,
    Little's law on the SLA target over its replicas stands in, and the text says so.
    """
    d, w, dp = f.deployment, scenario.workload, f.spec.dp
    if page_value is not None:
        if dp == 1:
            return page_value, "set on the Memory page"
        return math.ceil(page_value / dp), (
            f"{page_value:,} requests in flight set on the Memory page, over {dp:,} replicas"
        )
    load = (
        f"{w.arrival_rate_per_s:g} req/s" if w.arrival_rate_per_s is not None
        else f"{w.concurrent_users:,} users thinking {w.think_time_s:g} s"
    )  # fmt: skip
    per = f" over {dp:,} {'decode ' if f.spec.disaggregated else ''}" + (
        "replica" if dp == 1 else "replicas"
    )
    if d is not None:
        n = max(1, math.ceil(d.running_batch - 1e-9))
        if d.stable:  # the decode batch of every view (search/results.decode_batch)
            n = decode_batch_seqs(d.running_batch)
            return n, f"{load}{per}: the search's decode batch ({n:,})"
        return n, f"{load} saturates this deployment{per}: as many as it runs ({n:,})"
    if w.concurrent_users is not None:
        return math.ceil(w.concurrent_users / dp), f"{load}{per}"
    sla = scenario.sla
    if sla.e2e_ms is not None:
        wait_s, how = sla.e2e_ms / 1e3, "E2E target"
    elif sla.tpot_ms is not None:
        wait_s = ((sla.ttft_ms or 0.0) + w.osl_tokens * sla.tpot_ms) / 1e3
        how = f"{'TTFT + ' if sla.ttft_ms else ''}{w.osl_tokens} tokens × TPOT target"
    else:
        return 16, "the deployment does not fit and there is no latency target: 16 assumed"
    n = max(1, math.ceil(w.arrival_rate_per_s * wait_s / dp))  # type: ignore[operator]
    return n, (
        f"the deployment does not fit, so Little's law on the SLA target: L = λ·W = "
        f"{w.arrival_rate_per_s:g} req/s × {wait_s:.2f} s ({how}){per}"
    )


def apply_pending(scenario: Scenario) -> None:
    """Put the link's deployment (read by ``ui.state.init_from_url``) in focus, once."""
    text = SS.pop(PENDING, None)
    if text:
        choose(cache.scenario_key(scenario), text, "from the link")


def url_value(scenario: Scenario) -> str | None:
    """The ``dep`` URL value: the chosen deployment, or None for the recommended one."""
    pick = chosen(scenario)
    return pick[0] if pick else None


def focused_deployment(scenario: Scenario):
    """The search Deployment the user put in focus for this scenario, or None (the recommended
    one; also when the chosen deployment does not fit). The Compare page's per-scenario pick."""
    if chosen(scenario) is None:
        return None
    f = in_focus(scenario)
    return None if f.recommended else f.deployment


__all__ = ["InFocus", "banner", "choose", "focused_deployment", "in_focus", "sequences_in_flight",
           "show_focus"]  # fmt: skip

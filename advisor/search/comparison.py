"""Several scenarios' answers side by side: each scenario's deployment (the recommended one, or
the one the user put in focus), its cost and latency at that scenario's own load, and the
ranking (cheapest deployment that meets its SLA first, then the ones that miss, with why).

The Compare page, its PDF and the CLI read the same rows, so they show the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.catalog import accelerators
from advisor.perf.model.profiles import family_efficiency
from advisor.physics.queueing.results import unstable_text
from advisor.scenario import Scenario
from advisor.search.budget import monthly_usd
from advisor.search.results import Deployment, Recommendation


@dataclass(frozen=True)
class Compared:
    """One scenario's answer.

    ``deployment`` is the focused deployment if given, else the recommended one, else the
    closest near miss (``source`` says which); None when nothing fits at all. ``why`` says why
    it misses the SLA (empty when it meets it).
    """

    label: str
    scenario: Scenario
    deployment: Deployment | None
    source: str  # "recommended" | "in focus" | "closest miss" | "none"
    meets_sla: bool
    why: str
    calibrated: bool

    @property
    def percentile(self) -> int:
        return self.scenario.sla.percentile

    @property
    def at_risk(self) -> bool:
        """Its predictions meet the SLA, the upper end of a range does not (search/sla.py)."""
        d = self.deployment
        return not self.meets_sla and d is not None and d.sla_verdict == "at risk"

    @property
    def sla_word(self) -> str:
        """ "met" / "at risk" / "missed", as the comparison's tables say it."""
        return "met" if self.meets_sla else "at risk" if self.at_risk else "missed"


def calibrated(gpu_id: str) -> bool:
    """Whether the accelerator's family has efficiencies fitted to published measurements."""
    return family_efficiency(accelerators()[gpu_id].family).fitted


def compared(
    label: str,
    scenario: Scenario,
    rec: Recommendation | None,
    focus: Deployment | None = None,
    fails: Sequence[str] = (),
) -> Compared:
    """The row of one scenario (see :class:`Compared`); ``fails`` are the targets a deployment
    in focus misses (``search.focus.Focus.fails``)."""
    gpu0 = scenario.hardware.gpus[0]
    if focus is not None:
        d, source = focus, "in focus"
        why = "" if focus.meets_sla and not fails else _why(focus, fails)
    elif rec is not None and rec.best is not None:
        d, source, why = rec.best, "recommended", _risk(rec.best)
    elif rec is not None and rec.near_misses:
        nm = rec.near_misses[0]
        d, source = nm.deployment, "closest miss"
        why = "nothing meets the SLA; closest misses by " + "; ".join(nm.fails)
    else:
        d, source = None, "none"
        why = (rec.no_best_reason if rec is not None else None) or "no search result"
    return Compared(
        label=label, scenario=scenario, deployment=d, source=source,
        meets_sla=d is not None and d.meets_sla and not why, why=why,
        calibrated=calibrated(d.gpu if d is not None else gpu0),
    )  # fmt: skip


def _risk(d: Deployment) -> str:
    """Why a deployment is at risk (its targets and ranges), or "" when it is not."""
    if d.sla_verdict != "at risk" or not d.at_risk:
        return ""
    return "at risk: " + "; ".join(d.at_risk[:-1] or d.at_risk)


def _why(d: Deployment, fails: Sequence[str] | None) -> str:
    if _risk(d):
        return _risk(d)
    if fails:
        return "; ".join(fails)
    if not d.stable:
        return unstable_text(d.unstable_reason)
    return f"misses the SLA (worst target at {d.sla_ratio:.2f}x)"


def ranked(rows: Sequence[Compared]) -> list[Compared]:
    """Those that meet their SLA by cost per million output tokens (then GPUs), then those at
    risk (predictions within the SLA, a range not) the same way, then those that miss by how
    far they miss (worst target / its limit), then those with no deployment."""

    def key(c: Compared) -> tuple:
        d = c.deployment
        if d is None:
            return (3, math.inf, math.inf)
        if c.meets_sla or c.at_risk:
            return (0 if c.meets_sla else 1, d.usd_per_million_tokens, d.gpus)
        return (2, d.sla_ratio, d.usd_per_million_tokens)

    return sorted(rows, key=key)


def short_shape(d: Deployment) -> str:
    """The deployment in a few words (the accelerator is shown on its own line).

    >>> from advisor.search.results import Percentiles as P
    >>> p = P(p50=1, p90=1, p95=1, p99=1)
    >>> d = Deployment(kind="aggregated", description="", gpu="h100-sxm", tp=4, pp=1, dp=4,
    ...     weights="fp8", kv="fp8", speculative=False, gpus=16, nodes=2, ttft_ms=p, tpot_ms=p,
    ...     e2e_ms=p, stable=True, meets_sla=True, sla_ratio=0.9, throughput_tok_s=1,
    ...     throughput_per_gpu_tok_s=1, usd_per_hour=1, usd_per_million_tokens=1,
    ...     max_rate_req_s=1, headroom=2, running_batch=1)
    >>> short_shape(d)
    '4 × (TP=4, PP=1), fp8 weights, fp8 KV'
    """
    dt = f"{d.weights} weights, {d.kv} KV" + (", speculative" if d.speculative else "")
    if d.kind == "disaggregated":
        pre, dec = d.prefill_pool or {}, d.decode_pool or {}
        return (
            f"disaggregated: prefill {pre.get('dp', '?')} × TP={pre.get('tp', '?')} + decode "
            f"{dec.get('dp', '?')} × TP={dec.get('tp', '?')}, {dt}"
        )
    return f"{d.dp} × (TP={d.tp}, PP={d.pp}), {dt}"


def _ms(x: float) -> str:
    """'26.8 ms', '1,234 ms', 'unbounded'.

    >>> _ms(26.84), _ms(1234.4), _ms(float("inf"))
    ('26.8 ms', '1,234 ms', 'unbounded')
    """
    if not math.isfinite(x):
        return "unbounded"
    return f"{x:,.0f} ms" if x >= 1000 else f"{x:,.1f} ms"


def load_text(s: Scenario) -> str:
    w = s.workload
    if w.arrival_rate_per_s is not None:
        return f"{w.arrival_rate_per_s:g} requests/s"
    return f"{w.concurrent_users:,} concurrent users thinking {w.think_time_s:g} s"


def title(s: Scenario) -> str:
    """A scenario's name from what it is about, for one given on the command line without a
    name (the PDF's cover and header): model, hardware, load, lengths; at most 200 characters.

    >>> from advisor.scenario import Hardware, Workload
    >>> t = title(Scenario(model="qwen3-235b-a22b", hardware=Hardware(gpus=["mi300x"]),
    ...           workload=Workload(isl_tokens=6000, osl_tokens=400, arrival_rate_per_s=None,
    ...                             concurrent_users=400, think_time_s=60)))
    >>> t.split(": ")
    ['Qwen3 235B-A22B on 8 × AMD Instinct MI300X 192GB', '400 concurrent users thinking 60 s, 6,000 / 400 tokens']
    """
    hw, w, gpus = s.hardware, s.workload, accelerators()
    names = " / ".join(gpus[g].name if g in gpus else g for g in hw.gpus)
    text = (f"{s.model_spec().name} on {hw.total_gpus} × {names}: {load_text(s)}, "
            f"{w.isl_tokens:,} / {w.osl_tokens:,} tokens")  # fmt: skip
    return text if len(text) <= 200 else text[:199] + "…"


def table_rows(c: Compared) -> dict[str, str]:
    """What the Compare page and the comparison PDF print about one scenario, by row name."""
    d, pct = c.deployment, c.percentile
    hi = pct if pct != 50 else 99
    gpus = accelerators()
    sla = c.scenario.sla.describe()
    out = {"Verdict": f"meets {sla}" if c.meets_sla else f"misses {sla}"}
    if c.at_risk:
        out["Verdict"] = f"at risk against {sla}: its predictions meet it, a range reaches past it"
    if d is None:
        out["Deployment"] = c.why
        return out
    out["Deployment"] = f"{short_shape(d)} ({c.source})"
    out["Accelerator"] = gpus[d.gpu].name + ("" if c.calibrated else " (not calibrated)")
    out["GPUs"] = f"{d.gpus} on {d.nodes} node{'s' if d.nodes != 1 else ''}"
    out["Cost per M output tokens"] = (
        f"${d.usd_per_million_tokens:,.3f}"
        if math.isfinite(d.usd_per_million_tokens)
        else "none: it cannot serve the offered load"
    )
    out["Cost per month"] = f"${monthly_usd(c.scenario, d):,.0f}"
    out["Load"] = load_text(c.scenario)
    for name, p in (("TTFT", d.ttft_ms), ("TPOT", d.tpot_ms), ("End to end", d.e2e_ms)):
        out[f"{name} P50 / P{hi}"] = f"{_ms(p.p50)} / {_ms(getattr(p, f'p{hi}'))}"
    out["Throughput"] = (
        f"{d.throughput_tok_s:,.0f} output tokens/s" if d.stable else "no steady state (unstable)"
    )
    out["Headroom"] = (
        f"{d.headroom:.1f}× the offered load" if math.isfinite(d.headroom) else "unbounded"
    )
    out["Calibrated"] = (
        "yes (fitted to published measurements)"
        if c.calibrated
        else "no: efficiencies are priors, expect larger errors"
    )
    if c.why:
        out["Why it is at risk" if c.at_risk else "Why it misses"] = c.why
    return out


def verdict(rows: Sequence[Compared]) -> str:
    """One sentence naming the cheapest deployment that meets its SLA (or saying none does)."""
    order = ranked(rows)
    if not order:
        return "No scenario to compare."
    top = order[0]
    d = top.deployment
    if d is not None and top.at_risk:
        return (
            "None of the scenarios has a deployment that meets its SLA with confidence; the "
            f"cheapest whose predictions meet it is {top.label}: {short_shape(d)} on {d.gpus} × "
            f"{accelerators()[d.gpu].name}, ${d.usd_per_million_tokens:,.3f} per million output "
            f"tokens, {top.why}."
        )
    if d is None or not top.meets_sla:
        return "None of the scenarios has a deployment that meets its SLA" + (
            f"; the closest is {top.label}: {short_shape(d)} on {d.gpus} × "
            f"{accelerators()[d.gpu].name} ({top.why})."
            if d is not None
            else "."
        )
    others = [c for c in order[1:] if c.meets_sla and c.deployment is not None]
    tail = ""
    if others:
        nxt = others[0].deployment
        cost = f"${nxt.usd_per_million_tokens:,.3f} per million output tokens"
        # equal to the cent-tenth shown: "next cheapest" would claim a difference nobody can see
        same = f"{nxt.usd_per_million_tokens:,.3f}" == f"{d.usd_per_million_tokens:,.3f}"
        if nxt.usd_per_million_tokens > d.usd_per_million_tokens:
            why_second = "it costs less than a tenth of a cent more"
        elif nxt.gpus > d.gpus:
            why_second = f"it needs more GPUs ({nxt.gpus} vs {d.gpus})"
        elif str(nxt.spec or nxt.description) == str(d.spec or d.description):
            why_second = "it is the same deployment, and comes later in the list"
        else:
            why_second = "it comes later in the list"
        tail = (
            f" {others[0].label} meets its SLA at the same cost ({cost}); it ranks second "
            f"because {why_second}."
            if same
            else f" The next cheapest that meets its SLA is {others[0].label} at {cost}."
        )
    caveat = (
        ""
        if top.calibrated
        else f" {accelerators()[d.gpu].name} is not calibrated against published measurements: "
        "confirm with a benchmark before buying."
    )
    return (
        f"Cheapest deployment that meets its SLA: {top.label}: {short_shape(d)} on {d.gpus} × "
        f"{accelerators()[d.gpu].name}, ${d.usd_per_million_tokens:,.3f} per million output "
        f"tokens (${monthly_usd(top.scenario, d):,.0f} per month)." + tail + caveat
    )

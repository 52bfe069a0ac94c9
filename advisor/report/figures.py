"""The app's figure builders applied to a recommendation (one figure builder for app and PDF).

Each function returns a plotly Figure, or None when the data or the builder is not available
(the report then lists the chart as missing with the reason).
"""

from __future__ import annotations

import math
from typing import Any

from advisor.scenario import Scenario


def latency_rows(best: Any, scenario: Scenario) -> dict[str, dict[str, float]]:
    """The search's own mean breakdown of deployment ``best`` at the scenario's load (ms):
    the prefill of one prompt alone, and the mean TPOT = one decode step at the mean running
    batch + (aggregated) the prefills of arriving prompts that stall it, the part of the
    search's mean TPOT the step does not explain. A disaggregated decode pool never stalls
    for prompts; a speculative deployment's step is the target's, so it is shown alone."""
    pre = dict(best.prefill_breakdown_ms)
    step = {k: v for k, v in best.step_breakdown_ms.items() if k != "batch"}
    from advisor.search.results import decode_batch

    batch = best.step_breakdown_ms.get("batch", decode_batch(best.running_batch))
    isl = scenario.workload.isl_tokens
    rows = {f"Prefill of one {isl:,}-token prompt alone (no queueing)": pre}
    if best.speculative:
        rows[f"One target decode step at batch {batch:.0f} (speculative)"] = step
        return rows
    mean = best.tpot_mean_ms
    # an unstable deployment has no steady mean TPOT (inf): its step is shown alone
    steady = mean is not None and math.isfinite(mean)
    if steady and best.kind != "disaggregated" and mean > sum(step.values()):
        step["prefill interruptions"] = mean - sum(step.values())
    label = "Mean TPOT: decode step" if steady else "One decode step (no steady TPOT)"
    rows[f"{label} at batch {batch:.0f}"] = step
    return rows


def latency_figure(rec: Any, scenario: Scenario, deployment: Any = None):
    """Mean TTFT / TPOT breakdown of ``deployment`` (default: the recommended one;
    ``breakdown_figure``), from the search's result for that deployment at the scenario's load;
    the title names the P-th percentiles the summary quotes, so the chart's means are not read
    as the SLA figures."""
    best = deployment if deployment is not None else getattr(rec, "best", None)
    if best is None or not best.step_breakdown_ms:
        return None
    from advisor.charts import latency_charts as lc

    pct = scenario.sla.percentile
    if getattr(best, "stable", True):
        title = (f"Where the time goes, means (P{pct} TTFT {best.ttft_ms.at(pct):,.0f} ms, "
                 f"P{pct} TPOT {best.tpot_ms.at(pct):,.1f} ms)")  # fmt: skip
    else:  # its queue grows without bound: no percentile to quote
        title = "Where the time goes, means (unstable at the offered load: no percentiles)"
    return lc.breakdown_figure(latency_rows(best, scenario), title)


def pareto_figure(rec: Any, scenario: Scenario):
    """The recommendation page's Pareto frontier, if the chart module provides one."""
    if rec is None or not getattr(rec, "pareto", None):
        return None
    from advisor.charts import recommend_charts as rc

    metric = getattr(rec, "latency_metric", "latency")
    sla = scenario.sla
    target = None
    for word, v in (("TTFT", sla.ttft_ms), ("TPOT", sla.tpot_ms), ("E2E", sla.e2e_ms)):
        if word in metric:
            target = v
    best = rec.best.description if getattr(rec, "best", None) is not None else None
    return rc.pareto_figure(
        rec.pareto, rec.pareto_cost, latency_metric=metric, sla_ms=target, best=best
    )


def figure(kind: str, rec: Any, scenario: Scenario):
    return {"latency": latency_figure, "pareto": pareto_figure}[kind](rec, scenario)

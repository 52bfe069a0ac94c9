"""The app's figure builders applied to a recommendation (one figure builder for app and PDF).

Each function returns a plotly Figure, or None when the data or the builder is not available
(the report then lists the chart as missing with the reason).
"""

from __future__ import annotations

from typing import Any

from advisor.catalog import accelerators
from advisor.scenario import Scenario


def _pick_percentile(p: Any, percentile: int) -> float | None:
    if p is None:
        return None
    if isinstance(p, int | float):
        return float(p)
    v = getattr(p, f"p{percentile}", None)
    return None if v is None else float(v)


def latency_figure(rec: Any, scenario: Scenario):
    """TTFT / TPOT breakdown of the recommended deployment (``latency_charts.breakdown_figure``).

    The breakdown is the single-deployment estimate (``perf.estimate``) at the scenario's load;
    for a disaggregated winner it is the aggregated shape with the decode pool's TP.
    """
    best = getattr(rec, "best", None)
    if best is None:
        return None
    from advisor.charts import latency_charts as lc
    from advisor.perf.estimate import EstimateInput, estimate

    s = scenario
    tp = (best.decode_pool or {}).get("tp", best.tp) if best.kind == "disaggregated" else best.tp
    dp = (best.decode_pool or {}).get("dp", best.dp) if best.kind == "disaggregated" else best.dp
    pp = 1 if best.kind == "disaggregated" else best.pp
    load: dict[str, Any] = (
        {"qps": s.workload.arrival_rate_per_s, "concurrency": None}
        if s.workload.arrival_rate_per_s is not None
        else {"concurrency": max(1, round(best.running_batch))}
    )
    inp = EstimateInput(
        tp=tp, pp=pp, dp=dp, weights=best.weights, kv=best.kv, isl=s.workload.isl_tokens,
        osl=s.workload.osl_tokens, gpus_per_node=s.hardware.gpus_per_node,
        link=s.hardware.intra_link, inter_link=s.hardware.inter_link, engine=s.options.engine,
        **load,
    )  # fmt: skip
    est = estimate(s.model_spec(), accelerators()[best.gpu], inp)
    rows = lc.breakdown_rows(est)
    if not rows:
        return None
    title = f"Latency breakdown (mean): TP={tp}, PP={pp} on {accelerators()[best.gpu].name}"
    return lc.breakdown_figure(rows, title)


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

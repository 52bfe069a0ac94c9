"""The SLA test at a stated confidence, for every target (TTFT, TPOT, E2E).

A deployment meets a P-th percentile target T only when the upper end of the interval of that
predicted percentile, at the scenario's confidence c (``sla.confidence``, default 0.8), is
within it:

    P_pred x high_c(kind, engine, accelerator family) <= T

where ``high_c`` is the upper factor of advisor/perf/intervals.py (out-of-sample errors of that
prediction kind, wider where the family or engine is uncalibrated). So an accelerator predicted
from priors needs more headroom to win. The relative error of a mean or median prediction is
applied to the percentile (the published percentile rows are too few for their own table).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from advisor.catalog import get_accelerator
from advisor.perf.intervals import Interval, factors_for

#: Stated target name -> (prediction kind of advisor/perf/intervals.py, SLA field).
TARGETS = (("TTFT", "ttft", "ttft_ms"), ("TPOT", "tpot", "tpot_ms"), ("E2E", "e2e", "e2e_ms"))


def intervals_by_gpu(sc, gpu_ids: Sequence[str]) -> dict[str, dict[str, Interval]]:
    """gpu id -> target name -> Interval (factors) at the scenario's engine and confidence."""
    out = {}
    moe = sc.model_spec().is_moe
    for g in sorted(set(gpu_ids)):
        fam = get_accelerator(g).family
        out[g] = {
            name: factors_for(kind, sc.options.engine, fam, sc.sla.confidence, moe=moe)
            for name, kind, _ in TARGETS
        }
    return out


def sla_checks(sc, gpu_ids: Sequence[str]) -> list[tuple[str, float, np.ndarray]]:
    """(name, target ms, upper factor per candidate) for each stated target; a candidate meets
    the target when its predicted percentile x the factor is within the target."""
    # one interval per accelerator, spread over the candidates by index (the search passes
    # tens of thousands of candidates and a handful of accelerators)
    uniq, inv = np.unique(np.asarray(gpu_ids, dtype=str), return_inverse=True)
    by_gpu = intervals_by_gpu(sc, list(uniq))
    return [
        (name, float(getattr(sc.sla, field)),
         np.array([by_gpu[g][name].high for g in uniq], dtype=float)[inv.reshape(-1)])
        for name, _, field in TARGETS
        if getattr(sc.sla, field) is not None
    ]  # fmt: skip


def percentile_intervals(sc, gpu: str, ttft_ms: float, tpot_ms: float, e2e_ms: float) -> dict:
    """The interval of each predicted percentile of a deployment (ms), for its result."""
    iv = intervals_by_gpu(sc, [gpu])[gpu]
    got = {"TTFT": ttft_ms, "TPOT": tpot_ms, "E2E": e2e_ms}
    return {
        "confidence": sc.sla.confidence,
        "percentile": sc.sla.percentile,
        **{f"{kind}_ms": iv[name].of(got[name]) for name, kind, _ in TARGETS},
        "calibrated": all(v.calibrated for v in iv.values()),
        "basis": f"TTFT: {iv['TTFT'].basis}. TPOT: {iv['TPOT'].basis}. E2E: {iv['E2E'].basis}.",
    }


def confidence_note(sc) -> str:
    """The assumption behind "meets the SLA", for the recommendation's list of assumptions."""
    c = f"{sc.sla.confidence:.0%}"
    return (
        f"A target counts as met only when the upper end of the {c} range of the predicted "
        f"P{sc.sla.percentile} is within it: ranges from the out-of-sample (leave-one-source-out) "
        "errors of that prediction kind for the engine and accelerator family, among models of "
        "the same class (mixture-of-experts or dense), wider where either is uncalibrated "
        "(advisor/perf/intervals.py; sla.confidence)."
    )

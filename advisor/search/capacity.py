"""Capacity planning: replicas, GPUs and nodes for a target arrival rate at the SLA.

For the winning replica (aggregated; for a disaggregated winner, its decode pool's replica
with prefill included, a conservative stand-in) the largest per-replica Poisson rate that still
meets every SLA target is found on a geometric grid of 64 rates (one vectorised
``latency_under_load`` call); replicas for a target rate = ceil(target / that rate).
"""

from __future__ import annotations

import math

import numpy as np

from advisor.physics.queueing import QUANTILES, latency_under_load
from advisor.search.evaluate import service

MULTIPLIERS = (0.5, 1.0, 2.0, 5.0, 10.0)


def max_rate_at_sla(sc, st, k: int, checks_targets) -> float:
    """Largest per-replica rate (req/s) at which shape ``k`` meets the SLA (0 if none)."""
    wl = sc.workload
    g = 64
    tab = np.repeat(st.step_tab_s[k : k + 1], g, axis=0)
    sm = service(tab, np.full(g, st.prefill_s[k]), np.full(g, st.max_running[k]))
    probe = latency_under_load(sm, np.full(g, 1e-9), float(wl.osl_tokens),
                               isl_tokens=float(wl.isl_tokens))  # fmt: skip
    cap = float(probe.capacity_req_per_s[0])
    rates = cap * np.geomspace(1e-4, 0.999, g)
    res = latency_under_load(sm, rates, float(wl.osl_tokens), isl_tokens=float(wl.isl_tokens),
                             isl_cv=wl.isl_cv, osl_cv=wl.osl_cv)  # fmt: skip
    qi = QUANTILES.index(sc.sla.percentile / 100)
    ok = res.stable.copy()
    for name, target in checks_targets:
        arr = {"TTFT": res.ttft, "TPOT": res.tpot, "E2E": res.e2e}[name].quantile_s(QUANTILES[qi])
        ok &= arr * 1e3 <= target
    if not ok.any():
        return 0.0
    # first failing rate bounds the feasible range (latency rises with the rate)
    bad = np.nonzero(~ok)[0]
    first_ok = np.nonzero(ok)[0][0]
    later_bad = bad[bad > first_ok]
    last = later_bad[0] - 1 if later_bad.size else g - 1
    return float(rates[last])


def capacity_plan(sc, t, best_i: int, checks):
    from advisor.search.recommend import Capacity, CapacityRow

    st = t.st
    k = int(t.shape_of[best_i])
    s = st.shapes[k]
    targets = [(name, target) for name, _, target in checks]
    r1 = max_rate_at_sla(sc, st, k, targets)
    gpr = s.tp * s.pp
    if sc.workload.arrival_rate_per_s is not None:
        offered = sc.workload.arrival_rate_per_s
    else:
        offered = float(t.rate[best_i])
    rows = []
    if r1 > 0:
        for m in MULTIPLIERS:
            reps = max(1, math.ceil(offered * m / r1))
            rows.append(CapacityRow(target_rate_req_s=offered * m, replicas=reps, gpus=reps * gpr,
                                    nodes=math.ceil(reps * gpr / sc.hardware.gpus_per_node)))  # fmt: skip
    dp = int(t.gpus[best_i] // gpr) if best_i < t.na else max(1, int(t.gpus[best_i] // gpr))
    return Capacity(
        replica=f"TP={s.tp}, PP={s.pp} on {s.gpu}, weights {s.weights}, KV {s.kv}"
        + (", speculative" if s.spec else ""),
        gpus_per_replica=gpr,
        max_rate_per_replica_at_sla_req_s=r1,
        sla_headroom=dp * r1 / offered if offered > 0 else math.inf,
        rows=rows,
    )

"""Capacity planning: replicas, GPUs and nodes for a target arrival rate at the SLA.

Aggregated winner: the largest per-replica Poisson rate at which the winning replica still
meets every SLA target is found on a geometric grid of 64 rates (one vectorised
``latency_under_load`` call); replicas for a target rate = ceil(target / that rate).

Disaggregated winner: the two pools are scaled together. The winner's pair is evaluated at
64 multiples s of the offered rate (each pool's replicas sharing it as in the winner); the
largest s meeting every target gives per-replica limits r_p = s x rate / DP_prefill and
r_d = s x rate / DP_decode. For a target rate R: ceil(R / r_p) prefill and ceil(R / r_d)
decode replicas. Each pool then runs at or below its per-replica rate at s, and latency rises
with the rate, so the combined percentiles stay within the SLA (conservative).
"""

from __future__ import annotations

import math

import numpy as np

from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import QUANTILES
from advisor.physics.queueing.service import busy_s_per_request
from advisor.search.evaluate import service
from advisor.search.results import Capacity, CapacityRow
from advisor.search.sla import AT_RISK, VERDICTS

MULTIPLIERS = (0.5, 1.0, 2.0, 5.0, 10.0)
GRID_POINTS = 64


def _largest_ok(ok: np.ndarray) -> int | None:
    """Index of the last point of the first run of True (latency rises along the grid)."""
    if not ok.any():
        return None
    bad = np.nonzero(~ok)[0]
    first_ok = np.nonzero(ok)[0][0]
    later_bad = bad[bad > first_ok]
    return int(later_bad[0] - 1) if later_bad.size else ok.size - 1


def _meets(sc, ttft, tpot, e2e, stable, checks_targets) -> np.ndarray:
    """[n] bool: stable and every stated target met; arrays [n, 4] in seconds or LatencyStats."""
    qi = QUANTILES.index(sc.sla.percentile / 100)
    ok = np.asarray(stable, dtype=bool).copy()
    arrays = {"TTFT": ttft, "TPOT": tpot, "E2E": e2e}
    for name, target, factor in checks_targets:
        arr = arrays[name]
        v = arr.quantile_s(QUANTILES[qi]) if hasattr(arr, "quantile_s") else arr[:, qi]
        ok &= v * factor * 1e3 <= target  # the upper end of the interval (search/sla.py)
    return ok


def max_rate_at_sla(sc, st, k: int, checks_targets, include: float | None = None) -> float:
    """Largest per-replica rate (req/s) at which shape ``k`` meets the SLA (0 if none).

    ``include``: a rate to put on the grid (the winner's own per-replica rate, so that the plan
    at the offered load reproduces the winner).
    """
    wl = sc.workload
    g = GRID_POINTS
    tab = np.repeat(st.step_tab_s[k : k + 1], g, axis=0)
    sm = service(tab, np.full(g, st.prefill_s[k]), np.full(g, st.max_running[k]),
                 st.r.request_overhead_s[k], st.prefill_elasticity[k])  # fmt: skip
    with np.errstate(divide="ignore"):  # the capacity latency_under_load reports
        cap = float(1.0 / busy_s_per_request(sm, float(wl.osl_tokens))[0])
    rates = cap * np.geomspace(1e-4, 0.999, g)
    if include is not None and 0 < include < cap:
        rates = np.sort(np.append(rates[:-1], include))
    res = latency_under_load(sm, rates, float(wl.osl_tokens), isl_tokens=float(wl.isl_tokens),
                             isl_cv=wl.isl_cv, osl_cv=wl.osl_cv)  # fmt: skip
    last = _largest_ok(_meets(sc, res.ttft, res.tpot, res.e2e, res.stable, checks_targets))
    return 0.0 if last is None else float(rates[last])


def max_scale_at_sla(sc, st, dg, j: int, offered: float, checks_targets) -> float:
    """Largest multiple of ``offered`` at which disaggregated pair ``j`` meets the SLA (0 if none)."""
    from advisor.search.disaggregated import pair_latency

    g = GRID_POINTS
    pdp, ddp = float(dg.pre_dp[j]), float(dg.dec_dp[j])
    s_cap = float(dg.capacity_req_per_s[j]) / offered
    scales = s_cap * np.geomspace(1e-4, 0.999, g)
    if s_cap > 1.0:  # the offered load itself is a grid point: the plan reproduces the winner
        scales = np.sort(np.append(scales[:-1], 1.0))
    ttft, tpot, e2e, stable = pair_latency(
        sc, st, np.full(g, int(dg.pre_shape[j])), scales * offered / pdp,
        np.full(g, int(dg.dec_shape[j])), scales * offered / ddp,
        np.full(g, float(dg.kv_transfer_s[j])),
    )  # fmt: skip
    last = _largest_ok(_meets(sc, ttft, tpot, e2e, stable, checks_targets))
    return 0.0 if last is None else float(scales[last])


def _label(s) -> str:
    return f"TP={s.tp}, PP={s.pp} on {s.gpu}, weights {s.weights}, KV {s.kv}" + (
        ", speculative" if s.spec else ""
    )


def capacity_plan(sc, t, best_i: int, checks):
    """The winner's capacity table. A winner "at risk" (search/sla.py) meets the SLA only on
    its point predictions, so its rates are judged on them too (``Capacity.at_risk``): on the
    ranges' upper ends it has no rate within the SLA at all."""
    st = t.st
    gpn = sc.hardware.gpus_per_node
    risky = VERDICTS[t.verdict[best_i]] == AT_RISK
    targets = [(name, target, 1.0 if risky else float(factor[best_i]))
               for name, _, target, factor in checks]  # fmt: skip
    if sc.workload.arrival_rate_per_s is not None:
        offered = sc.workload.arrival_rate_per_s
    else:
        offered = float(t.rate[best_i])
    if best_i >= t.na:
        plan = _disaggregated_plan(sc, t, best_i - t.na, offered, targets, Capacity, CapacityRow)
        return plan.model_copy(update={"at_risk": risky})
    k = int(t.shape_of[best_i])
    s = st.shapes[k]
    gpr = s.tp * s.pp
    dp = int((t.gpus[best_i] - t.spare_gpus[best_i]) // gpr)  # serving replicas, no N+1 spare
    r1 = max_rate_at_sla(sc, st, k, targets, include=offered / dp if offered > 0 else None)
    rows = []
    if r1 > 0:
        for m in MULTIPLIERS:
            reps = max(1, math.ceil(offered * m / r1))
            rows.append(CapacityRow(target_rate_req_s=offered * m, replicas=reps, gpus=reps * gpr,
                                    nodes=math.ceil(reps * gpr / gpn)))  # fmt: skip
    return Capacity(
        replica=_label(s),
        gpus_per_replica=gpr,
        max_rate_per_replica_at_sla_req_s=r1,
        sla_headroom=dp * r1 / offered if offered > 0 else math.inf,
        rows=rows,
        at_risk=risky,
    )


def capacity_text(cap) -> str:
    """What the capacity table counts, in the table's own terms: for a disaggregated deployment
    a "replica" was a decode replica, while the table added the prefill replicas to it, so "one
    replica serves up to 6.44 requests/s" sat above "2.69 requests/s: 2 replicas" (issue 38)."""
    risk = (
        "At risk: rates within the SLA on the point predictions (the ranges reach past it). "
        if cap.at_risk
        else ""
    )
    return risk + _capacity_text(cap)


def _pools(cap) -> list[tuple[float, str]]:
    """(per-replica rate, the CapacityRow field counting that pool's replicas) per pool."""
    if cap.kind != "disaggregated":
        return [(cap.max_rate_per_replica_at_sla_req_s, "replicas")]
    return [(cap.prefill_max_rate_per_replica_at_sla_req_s or 0.0, "prefill_replicas"),
            (cap.max_rate_per_replica_at_sla_req_s, "decode_replicas")]  # fmt: skip


def rate_digits(cap) -> int:
    """Significant figures of the rates in the capacity caption and table: 3, or more where
    3 would show a target rate equal to a replica's limit that still needs one replica more
    (issue 38, the hospital's Qwen3-235B-A22B on 8x B200: "one replica serves up to 2.78
    requests/s" above "2.78 requests/s: 2 replicas", for 2.7773 and 2.7820). The caption's
    rule, ceil(R / limit), applied to the numbers as shown gives the replicas shown.

    >>> from advisor.search.results import Capacity, CapacityRow
    >>> row = CapacityRow(target_rate_req_s=2.7820, replicas=2, gpus=4, nodes=1)
    >>> rate_digits(Capacity(replica="r", gpus_per_replica=2, sla_headroom=1.5,
    ...                      max_rate_per_replica_at_sla_req_s=2.7773, rows=[row]))
    4
    """
    for digits in range(3, 7):
        shown = [(float(f"{r:.{digits}g}"), field) for r, field in _pools(cap)]
        if all(
            r <= 0
            or math.ceil(float(f"{row.target_rate_req_s:.{digits}g}") / r - 1e-9)
            == getattr(row, field)
            for row in cap.rows
            for r, field in shown
        ):
            return digits
    return 6


def _capacity_text(cap) -> str:
    g = f".{rate_digits(cap)}g"
    r = format(cap.max_rate_per_replica_at_sla_req_s, g)
    if cap.kind != "disaggregated":
        return (f"One replica ({cap.replica}, {cap.gpus_per_replica} GPU"
                f"{'s' if cap.gpus_per_replica != 1 else ''}) serves up to {r} requests/s "
                "within the SLA; a target rate R needs ceil(R / that) replicas.")  # fmt: skip
    rp = format(cap.prefill_max_rate_per_replica_at_sla_req_s or 0.0, g)
    return (f"Disaggregated: prefill and decode replicas are counted apart. One prefill replica "
            f"(TP={cap.prefill_gpus_per_replica}) serves up to {rp} requests/s and one "
            f"decode replica ({cap.replica.split(';')[0].removeprefix('decode replica ')}, "
            f"{cap.gpus_per_replica} GPUs) up to {r} requests/s within the SLA (each "
            "measured with the pools scaled together); a target rate R needs ceil(R / "
            f"{rp}) prefill and ceil(R / {r}) decode replicas.")  # fmt: skip


def capacity_rows(cap) -> list[dict[str, object]]:
    """The capacity table's rows (requests/s to the caption's significant figures,
    ``rate_digits``), the prefill and decode replicas in their own columns for a disaggregated
    deployment."""
    out = []
    g = f".{rate_digits(cap)}g"
    for r in cap.rows:
        row: dict[str, object] = {"requests/s": format(r.target_rate_req_s, g)}
        if cap.kind == "disaggregated":
            row |= {"prefill replicas": r.prefill_replicas, "decode replicas": r.decode_replicas}
        else:
            row["replicas"] = r.replicas
        out.append(row | {"GPUs": r.gpus, "nodes": r.nodes})
    return out


def _disaggregated_plan(sc, t, j: int, offered: float, targets, Capacity, CapacityRow):
    st, dg = t.st, t.dg
    gpn = sc.hardware.gpus_per_node
    ps, ds = st.shapes[int(dg.pre_shape[j])], st.shapes[int(dg.dec_shape[j])]
    pdp, ddp = int(dg.pre_dp[j]), int(dg.dec_dp[j])
    s_max = max_scale_at_sla(sc, st, dg, j, offered, targets) if offered > 0 else 0.0
    r_p = s_max * offered / pdp
    r_d = s_max * offered / ddp
    rows = []
    if s_max > 0:
        for m in MULTIPLIERS:
            n_p = max(1, math.ceil(offered * m / r_p))
            n_d = max(1, math.ceil(offered * m / r_d))
            gpus = n_p * ps.tp + n_d * ds.tp
            rows.append(CapacityRow(target_rate_req_s=offered * m, replicas=n_p + n_d, gpus=gpus,
                                    nodes=math.ceil(gpus / gpn), prefill_replicas=n_p,
                                    decode_replicas=n_d))  # fmt: skip
    return Capacity(
        kind="disaggregated",
        replica=f"decode replica {_label(ds)}; prefill replicas TP={ps.tp} "
        f"(each up to {r_p:,.2f} requests/s within the SLA)",
        gpus_per_replica=ds.tp,
        max_rate_per_replica_at_sla_req_s=r_d,
        prefill_gpus_per_replica=ps.tp,
        prefill_max_rate_per_replica_at_sla_req_s=r_p,
        sla_headroom=s_max,
        rows=rows,
    )

"""``recommend(scenario) -> Recommendation``: the SLA-driven deployment search.

Pipeline: enumerate shapes (space.py) -> step tables and memory rejections (evaluate.py) ->
latency under load for every (shape, DP) pair and every disaggregated pool pair -> SLA filter
at the scenario's percentile, three verdicts (sla.py: meets / at risk / misses) -> cost per
million output tokens (cost.py) -> rank by price per hour, then GPUs, headroom, latency
(ranking.py) -> best (the cheapest that meets; with none, the cheapest at risk, flagged), Pareto
frontiers, near misses, explanation, article decision matrix, capacity.

Cost per million output tokens is at the *offered* load (the GPUs are paid for whether busy or
not). Throughput per GPU in the Pareto frontier is likewise the offered output tokens/s per GPU.
"""

from __future__ import annotations

import gc
import math
import time
from collections import Counter

import numpy as np

from advisor.perf.model.intervals import side_of_range
from advisor.physics.params import (
    active_convention,
    active_params_as_published,
    param_breakdown,
)
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import QUANTILES, REASONS, unstable_text
from advisor.scenario import Scenario
from advisor.search.capacity import capacity_plan
from advisor.search.cost import (
    deployment_capex_usd,
    deployment_usd_per_hour,
    server_basis,
    servers_needed,
    usd_per_gpu_hour,
    usd_per_million_tokens,
)
from advisor.search.decision_matrix import article_answer
from advisor.search.deployment_spec import DeploymentSpec
from advisor.search.disaggregated import evaluate_disaggregated
from advisor.search.evaluate import (
    build_shapes,
    decode_steps_ms,
    evaluate_aggregated,
    interp_step,
    service,
)
from advisor.search.explain import (
    agreement,
    confidence_lines,
    explain,
    speculation_line,
    unmet_lines,
)
from advisor.search.pareto import pareto_min_min
from advisor.search.profile_scope import fallback_of
from advisor.search.ranking import lexsort_first, rank_first, rank_order
from advisor.search.results import (
    PCT,
    DecisionMatrix,
    Deployment,
    NearMiss,
    ParetoPoint,
    Percentiles,
    Recommendation,
    decode_batch,
)
from advisor.search.sla import (
    AT_RISK,
    CODE,
    MEETS,
    VERDICTS,
    confidence_note,
    percentile_intervals,
    risk_headline,
    risk_lines,
    sla_checks_coded,
    verdicts,
)
from advisor.search.space import replica_config
from advisor.search.timing import PHASES, Phases, phase

# A full garbage collection walks every object the collector tracks: once the imports are
# done, ~39,000 (modules, classes, pydantic schemas, numpy) that live as long as the process.
# One landing in a search cost 13-25 ms of a 36,000-candidate search (up to 100 ms on a loaded
# machine), every time the collector's counters came round. Frozen (moved to a permanent
# generation the collector skips), they cost it nothing: a full collection after the first
# search takes ~1 ms. Freed objects are still freed by reference counting; only a reference
# cycle that is already garbage now (there are next to none after imports) stays uncollected.
gc.freeze()


def _keep_freed_memory() -> None:
    """Have glibc's allocator keep freed memory for reuse instead of handing it back at once.

    The search's arrays of tens of thousands of candidates are 0.1-1 MB each; glibc returns a
    freed block above its (adaptive) thresholds to the OS and the next array faults the same
    pages in again: ~4,200 page faults (~10 ms of kernel time) per warm 36,000-candidate
    search, ~7,200 in a process's first. Blocks up to 32 MB then come from the heap and up to
    256 MB of it stays mapped (the process keeps its peak footprint, as a long-running server
    does anyway). mallopt(3) parameters M_TRIM_THRESHOLD (-1) and M_MMAP_THRESHOLD (-3);
    nothing happens where the C library has no mallopt (macOS, musl, Windows).
    """
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError, TypeError):
        return
    mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD


_keep_freed_memory()

ASSUMPTIONS = [
    "Queueing: continuous batching (Orca-style), Poisson arrivals, analytic percentiles "
    "(physics/queueing/model.latency_under_load); per-replica arrival rate = total rate / DP.",
    "Concurrent users (closed loop): N users each thinking Z s between an answer and the next "
    "request; throughput X solves X = N / (Z + E2E(X)) (interactive response-time law).",
    "Speculative decoding: draft at the target's TP (at most 8, one node), fp16 (fp8 with fp8 "
    "targets), sharing the target's GPUs; time per token = (k T_draft + T_verify) / E.",
    "Disaggregated: pools on the same accelerator and dtypes, PP = 1; percentiles of the two "
    "pools are added (upper bound); KV moved once per request over the inter-pool link.",
    "Cost per million output tokens at the offered load.",
]


class _Table:
    """All candidates (aggregated then disaggregated) as parallel arrays."""

    def __init__(self, sc: Scenario, st, ev, dg):
        self.st, self.ev, self.dg = st, ev, dg
        na = ev.dp.size
        nd = 0 if dg is None else dg.gpus.size
        self.na, self.n = na, na + nd
        res = ev.res
        q = lambda s: np.stack([s.quantile_s(x) for x in QUANTILES], axis=1)  # noqa: E731
        parts = [(q(res.ttft), q(res.tpot), q(res.e2e))]
        if dg is not None:
            parts.append((dg.ttft_q, dg.tpot_q, dg.e2e_q))
        self.ttft = np.concatenate([p[0] for p in parts])
        self.tpot = np.concatenate([p[1] for p in parts])
        self.e2e = np.concatenate([p[2] for p in parts])
        cat = lambda a, b: np.concatenate([a, b]) if dg is not None else np.asarray(a)  # noqa: E731
        self.stable = cat(res.stable, dg.stable if dg else None)
        self.reason = cat(res.reason_code, dg.reason_code if dg else None)
        self.gpus = cat(ev.gpus, dg.gpus if dg else None).astype(int)
        self.rate = cat(ev.rate, dg.rate if dg else None)
        self.cap = cat(res.capacity_req_per_s * ev.dp, dg.capacity_req_per_s if dg else None)
        # offered / sustainable rate (inf where nothing is sustainable): the headroom check's
        with np.errstate(divide="ignore", invalid="ignore"):
            self.util = np.where(self.cap > 0, self.rate / self.cap, np.inf)
        self.running = cat(res.running_mean, dg.running_mean if dg else None)
        self.tpot_mean = cat(res.tpot.mean_s, dg.tpot_mean_s if dg else None)
        shape_of = cat(ev.shape_idx, dg.dec_shape if dg else None)
        self.shape_of = shape_of
        # N+1: one spare replica (one per pool) bought and powered, not counted in the capacity
        self.spare_replicas = 1 if sc.options.redundancy == "n+1" else 0
        rep = np.array([s.tp * s.pp for s in st.shapes], dtype=int)
        spare = rep[np.asarray(ev.shape_idx, dtype=int)]
        if dg is not None:
            spare = np.concatenate([spare, rep[dg.pre_shape] + rep[dg.dec_shape]])
        self.spare_gpus = spare * self.spare_replicas
        self.gpus = self.gpus + self.spare_gpus
        self.servers = servers_needed(self.gpus, rep[np.asarray(shape_of, dtype=int)],
                                      sc.hardware.gpus_per_node, na)  # fmt: skip
        gpu_ids = sorted({s.gpu for s in st.shapes})
        self.rates = {g: usd_per_gpu_hour(g, sc.cost) for g in gpu_ids}
        per_gpu = np.array([self.rates[st.shapes[i].gpu][0] for i in range(len(st.shapes))])
        self.usd_h = deployment_usd_per_hour(sc, self.gpus, self.servers, per_gpu[shape_of])
        self.capex = deployment_capex_usd(sc, self.servers,
                                          [st.shapes[i].gpu for i in range(len(st.shapes))],
                                          shape_of)  # fmt: skip
        cap_usd = sc.cost.max_capex_usd
        self.over_budget = (
            self.capex > cap_usd if cap_usd is not None else np.zeros(self.n, dtype=bool)
        )
        self.tput = np.where(self.stable, self.rate * sc.workload.osl_tokens, 0.0)
        self.cost = usd_per_million_tokens(1, self.usd_h, self.tput) if self.n else np.zeros(0)


def unmet_head(sla_text: str) -> str:
    """The words a "nothing meets the SLA" reason starts with (``no_best_reason``; the
    Recommendation page's headline says them itself and shows only the rest).

    >>> unmet_head("P99 TPOT ≤ 50 ms")
    'no deployment meets P99 TPOT ≤ 50 ms at the offered load'
    """
    return f"no deployment meets {sla_text} at the offered load"


def _sla(sc: Scenario, t: _Table) -> tuple[np.ndarray, list]:
    """Worst (upper end of the predicted percentile's interval / target) per candidate, and the
    checks: (name, predicted percentile s, target ms, upper factor) per stated target. Sets
    ``t.point_ratio`` (the same on the point predictions) and ``t.verdict`` (search/sla.py)."""
    qi = QUANTILES.index(sc.sla.percentile / 100)
    arrays = {"TTFT": t.ttft, "TPOT": t.tpot, "E2E": t.e2e}
    names = sorted({s.gpu for s in t.st.shapes})
    shape_gpu = np.array([names.index(s.gpu) for s in t.st.shapes], dtype=int)
    checks = [
        (name, arrays[name][:, qi], target, factor)
        for name, target, factor in sla_checks_coded(
            sc, names, shape_gpu[np.asarray(t.shape_of, dtype=int)], t.util
        )
    ]
    ratio, point = np.zeros(t.n), np.zeros(t.n)
    for _, v, target, factor in checks:
        ratio = np.maximum(ratio, v * factor * 1e3 / target)
        point = np.maximum(point, v * 1e3 / target)
    # Headroom: the offered rate may use at most max_utilisation of the sustainable rate.
    cap = t.util / sc.options.max_utilisation
    ratio = np.where(t.stable, np.maximum(ratio, cap), np.inf)
    t.point_ratio = np.where(t.stable, np.maximum(point, cap), np.inf)
    t.verdict = verdicts(ratio, t.point_ratio)
    return ratio, checks


def _latency_metric(sc: Scenario, t: _Table) -> tuple[str, np.ndarray]:
    qi = QUANTILES.index(sc.sla.percentile / 100)
    for name, arr, target in (
        ("TPOT", t.tpot, sc.sla.tpot_ms),
        ("TTFT", t.ttft, sc.sla.ttft_ms),
        ("E2E", t.e2e, sc.sla.e2e_ms),
    ):
        if target is not None:
            return f"P{sc.sla.percentile} {name}", arr[:, qi] * 1e3
    return f"P{sc.sla.percentile} E2E", t.e2e[:, qi] * 1e3


def _pct(row: np.ndarray) -> Percentiles:
    return Percentiles(**{k: float(v) * 1e3 for k, v in zip(PCT, row, strict=True)})


def _layout(s, names: str = "spec") -> dict[str, int]:
    """A shape's MoE layout as DeploymentSpec fields (``ep``, ``dpa``: 1 = off, else TP), or
    with ``names=""`` as a pool's keys (``ep``, ``attention_dp``)."""
    dpa = "dpa" if names else "attention_dp"
    return {"ep": s.tp if s.ep else 1, dpa: s.tp if s.dpa else 1}


def _described(t: _Table, i: int) -> tuple:
    """Candidate ``i``'s shape, kind, TP, PP, DP, description and its spec (and pools): what a
    Deployment and a ParetoPoint both say of it."""
    st = t.st
    if i < t.na:
        s = st.shapes[int(t.ev.shape_idx[i])]
        dp = int(t.ev.dp[i])
        spec = " + speculative decoding" if s.spec else ""
        desc = f"{dp} x ({s.layout}, PP={s.pp}) on {s.gpu}, weights {s.weights}, KV {s.kv}{spec}"
        kind, tp, pp, extra = "aggregated", s.tp, s.pp, {}
        extra["spec"] = DeploymentSpec(gpu=s.gpu, tp=s.tp, pp=s.pp, dp=dp, weights=s.weights,
                                       kv=s.kv, speculative=s.spec, **_layout(s))  # fmt: skip
    else:
        j = i - t.na
        dg = t.dg
        s = st.shapes[int(dg.dec_shape[j])]
        ps = st.shapes[int(dg.pre_shape[j])]
        pdp, ddp = int(dg.pre_dp[j]), int(dg.dec_dp[j])
        desc = (
            f"disaggregated on {s.gpu}: prefill {pdp} x ({ps.layout}) + decode {ddp} x "
            f"({s.layout}), weights {s.weights}, KV {s.kv} "
            f"(KV transfer {dg.kv_transfer_s[j] * 1e3:.2f} ms)"
        )
        kind, tp, pp, dp = "disaggregated", s.tp, 1, ddp
        extra = {"prefill_pool": {"tp": ps.tp, "dp": pdp, **_layout(ps, "")},
                 "decode_pool": {"tp": s.tp, "dp": ddp, **_layout(s, "")}}  # fmt: skip
        pre = {f"prefill_{k}": v for k, v in _layout(ps).items()}
        extra["spec"] = DeploymentSpec(gpu=s.gpu, tp=s.tp, dp=ddp, weights=s.weights, kv=s.kv,
                                       prefill_tp=ps.tp, prefill_dp=pdp, **_layout(s), **pre)  # fmt: skip
    if t.spare_replicas:
        desc += f" + {t.spare_replicas} spare replica{'s' if kind == 'disaggregated' else ''} (N+1)"
    return s, kind, tp, pp, dp, desc, extra


def _pareto_point(sc: Scenario, t: _Table, i: int, ratio: np.ndarray, lat: np.ndarray):
    """Candidate ``i`` as a ParetoPoint: the figures ``_deployment`` gives it, without the
    intervals, risk lines and breakdowns a point does not show (~40 points per frontier)."""
    *_, desc, extra = _described(t, i)
    k = PCT.index(f"p{sc.sla.percentile}")
    return ParetoPoint(description=desc, gpus=int(t.gpus[i]),
        throughput_per_gpu_tok_s=float(t.tput[i] / t.gpus[i]),
        usd_per_million_tokens=float(t.cost[i]), latency_ms=float(lat[i]),
        meets_sla=bool(ratio[i] <= 1.0), spec=extra["spec"],
        sla_verdict=VERDICTS[t.verdict[i]], over_budget=bool(t.over_budget[i]),
        ttft_ms=float(t.ttft[i][k]) * 1e3, tpot_ms=float(t.tpot[i][k]) * 1e3,
        e2e_ms=float(t.e2e[i][k]) * 1e3, usd_per_hour=float(t.usd_h[i]),
        headroom=float(t.cap[i] / t.rate[i]) if t.rate[i] > 0 else math.inf)  # fmt: skip


def _deployment(
    sc: Scenario, t: _Table, i: int, ratio: np.ndarray, breakdown: bool | tuple[dict, dict]
) -> Deployment:
    """Candidate ``i`` as a Deployment; ``breakdown``: with its step breakdowns (True: computed
    here; a pair: the ``step_breakdowns`` already computed)."""
    s, kind, tp, pp, dp, desc, extra = _described(t, i)
    nodes = max(int(t.servers[i]), 1)
    rate = float(t.rate[i])
    qi = QUANTILES.index(sc.sla.percentile / 100)
    points = {name: float(a[i, qi]) * 1e3 for name, a in (("TTFT", t.ttft), ("TPOT", t.tpot),
                                                         ("E2E", t.e2e))}  # fmt: skip
    intervals = percentile_intervals(sc, s.gpu, points["TTFT"], points["TPOT"], points["E2E"],
                                     utilisation=float(t.util[i]), attention_dp=bool(s.dpa))  # fmt: skip
    verdict = VERDICTS[t.verdict[i]]
    bd: dict[str, float] = {}
    pbd: dict[str, float] = {}
    if breakdown is True:
        bd, pbd = step_breakdowns(sc, t, i)
    elif breakdown:
        bd, pbd = breakdown
    if i >= t.na:
        extra["kv_transfer_ms"] = float(t.dg.kv_transfer_s[i - t.na]) * 1e3
    return Deployment(
        kind=kind, description=desc, gpu=s.gpu, tp=tp, pp=pp, dp=dp, weights=s.weights,
        kv=s.kv, speculative=s.spec, ep=s.tp if s.ep else 1, attention_dp=s.tp if s.dpa else 1,
        gpus=int(t.gpus[i]), nodes=int(nodes),
        ttft_ms=_pct(t.ttft[i]), tpot_ms=_pct(t.tpot[i]), e2e_ms=_pct(t.e2e[i]),
        stable=bool(t.stable[i]),
        unstable_reason=None if t.stable[i] else REASONS[int(t.reason[i])],
        meets_sla=bool(ratio[i] <= 1.0), sla_ratio=float(ratio[i]), sla_verdict=verdict,
        at_risk=risk_lines(sc, s.gpu, points, intervals) if verdict == AT_RISK else [],
        throughput_tok_s=float(t.tput[i]),
        throughput_per_gpu_tok_s=float(t.tput[i] / t.gpus[i]),
        usd_per_hour=float(t.usd_h[i]), usd_per_million_tokens=float(t.cost[i]),
        max_rate_req_s=float(t.cap[i]), headroom=float(t.cap[i] / rate) if rate > 0 else math.inf,
        running_batch=float(t.running[i]), step_breakdown_ms=bd, prefill_breakdown_ms=pbd,
        intervals=intervals,
        tpot_mean_ms=float(t.tpot_mean[i]) * 1e3,
        spare_gpus=int(t.spare_gpus[i]),
        capex_usd=float(t.capex[i]) if sc.cost.mode == "purchase" else None,
        over_budget=bool(t.over_budget[i]),
        client_profile_fallback=fallback_of(sc, replica_config(sc, s), dp, i >= t.na),
        **extra,
    )  # fmt: skip


def step_breakdowns(sc: Scenario, t: _Table, i: int) -> tuple[dict, dict]:
    """Decode step (at the decode batch, ``results.decode_batch``) and prefill breakdowns of
    candidate ``i``, ms.

    Aggregated: the replica's. Disaggregated: the decode step of a decode-pool replica and the
    prefill of a prefill-pool replica. Speculative shapes: the target's decode step; the
    prefill adds the draft's prompt pass as "draft".
    """
    return step_breakdowns_of(sc, t, [i])[i]


def step_breakdowns_of(sc: Scenario, t: _Table, rows) -> dict[int, tuple[dict, dict]]:
    """``step_breakdowns`` of candidates ``rows`` in one evaluation of their steps."""
    from advisor.perf.model.step import prefill

    st = t.st
    rows = [int(i) for i in rows]
    if not rows:
        return {}
    ks, kps = [], []
    for i in rows:
        if i < t.na:
            k = kp = int(t.ev.shape_idx[i])
        else:
            k, kp = int(t.dg.dec_shape[i - t.na]), int(t.dg.pre_shape[i - t.na])
        ks.append(k)
        kps.append(kp)
    bs = [decode_batch(float(t.running[i])) for i in rows]
    steps = decode_steps_ms(st, ks, bs)[0]
    pre = prefill(st.r.take(np.array(kps)), np.full(len(rows), float(sc.workload.isl_tokens)))
    out = {}
    for j, i in enumerate(rows):
        bd = steps[j]
        bd["batch"] = bs[j]
        pbd = pre.component_dict(j)
        draft = (float(st.prefill_s[kps[j]]) - float(pre.total[j])) * 1e3
        if draft > 1e-9:
            pbd["draft"] = draft
        out[i] = (bd, pbd)
    return out


def _rank_key(sc: Scenario, t: _Table, lat: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The candidates ``rows`` best first (search/ranking.py): only those in the running are
    sorted (a stable sort of a subset keeps their order among all candidates)."""
    return rows[rank_order(sc.rank_by, *_rank_inputs(t, lat, rows))]


def _rank_best(sc: Scenario, t: _Table, lat: np.ndarray, rows: np.ndarray) -> int | None:
    """``_rank_key(...)[0]`` (None for no rows), without sorting them all."""
    if not rows.size:
        return None
    return int(rows[rank_first(sc.rank_by, *_rank_inputs(t, lat, rows))])


def _rank_inputs(t: _Table, lat: np.ndarray, rows: np.ndarray) -> tuple:
    rate, cap = t.rate[rows], t.cap[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(rate > 0, cap / rate, np.inf)
    return t.usd_h[rows], t.gpus[rows], room, lat[rows]


def _calibration_notes(sc: Scenario) -> list[str]:
    """Say which candidate accelerators are predicted from priors, not fitted measurements."""
    from advisor.catalog import get_accelerator
    from advisor.perf.model.profiles import engine_profile, family_efficiency

    out = []
    for gid in sc.hardware.gpus:
        g = get_accelerator(gid)
        if not family_efficiency(g.family).fitted:
            out.append(
                f"{g.name}: no published serving measurements in data/ for the {g.family} family; "
                "its efficiencies are priors (measured matmul FLOPS, a typical memory-bandwidth fraction), so expect "
                "larger errors than the validation table shows"
            )
    eng = engine_profile(sc.options.engine)
    if not eng.fitted:
        out.append(f"engine {sc.options.engine}: default overheads (no calibration rows)")
    elif not eng.calibrated_under_load:
        out.append(
            f"engine {sc.options.engine}: not calibrated under serving load (fitted on "
            f"{eng.rows} rows, {eng.rows_batched} batched, {eng.rows_under_load} at a fixed "
            "concurrency or request rate): its serving overheads are extrapolated"
        )
    return out


def _headroom_note(sc: Scenario) -> str:
    return (
        f"A deployment counts as meeting the SLA only below {sc.options.max_utilisation:.0%} "
        "utilisation (offered / sustainable rate): near saturation latency percentiles explode "
        "and real traffic is burstier than Poisson (options.max_utilisation)."
    )


def _fails(sc: Scenario, checks, i: int) -> list[str]:
    out = []
    pct, conf = sc.sla.percentile, f"{sc.sla.confidence:.0%}"
    for name, v, target, factor in checks:
        ms = float(v[i]) * 1e3
        hi = ms * float(factor[i])
        if not hi <= target:
            # the held-out rows of this kind can all have come in under the model: the upper
            # end below the prediction is then no slip, and the reason says so
            side = side_of_range(ms, 0.0, hi) if math.isfinite(ms) else ""
            out.append(
                f"P{pct} {name} {ms:.1f} ms, up to {hi:.1f} ms at {conf} confidence"
                f"{f' (the model {side} here)' if side else ''} > "
                f"{target:g} ms (+{(hi / target - 1) * 100:.0f}%)"
                if math.isfinite(ms)
                else f"P{pct} {name} unbounded (unstable)"
            )
    return out


def budget_text(capex_usd: float, max_capex_usd: float) -> str:
    """Why a deployment is not recommended under a budget cap.

    >>> budget_text(440_000.0, 300_000.0)
    'capex $440,000 exceeds the $300,000 budget'
    """
    return f"capex ${capex_usd:,.0f} exceeds the ${max_capex_usd:,.0f} budget"


def misses(sc: Scenario, checks, i: int, d: Deployment) -> list[str]:
    """Why candidate ``i`` (deployment ``d``, not recommended) is not: one line per missed
    target; or its utilisation above the cap; or that it is unstable at the offered load; and
    its purchase above the budget cap."""
    over = (
        [budget_text(d.capex_usd, sc.cost.max_capex_usd)]
        if d.over_budget and d.capex_usd is not None and sc.cost.max_capex_usd is not None
        else []
    )
    if not d.stable:
        return [unstable_text(d.unstable_reason), *over]
    if d.meets_sla:
        return over
    fails = _fails(sc, checks, i) or [
        f"utilisation {1 / d.headroom:.0%} above the {sc.options.max_utilisation:.0%} cap"
        if d.headroom > 0
        else "no capacity at the offered load"
    ]
    return [*fails, *over]


def recommend(scenario: Scenario) -> Recommendation:
    """Search every deployment the scenario's hardware allows; see the module docstring."""
    t0 = time.perf_counter()
    ph = Phases()
    with ph.active():
        rec = _recommend(scenario)
        if rec.best is None and rec.candidates_evaluated:
            rec = _with_speculation_tried(scenario, rec)
    elapsed = (time.perf_counter() - t0) * 1e3
    ms = {k: ph.ms.get(k, 0.0) for k in PHASES}
    ms["other"] = max(elapsed - sum(ms.values()), 0.0)
    return rec.model_copy(update={"elapsed_ms": elapsed, "phase_ms": ms})


def speculation_trial(sc: Scenario) -> tuple[Scenario, str, bool] | None:
    """The scenario with speculative decoding turned on as the CLI turns it on (the draft the
    scenario would run, k = the model's own head's layers or 4, the pair's published acceptance
    or the stated default), the draft, and whether that acceptance is published; None when it
    is on already or no draft exists."""
    from advisor.catalog.drafts import default_spec_tokens
    from advisor.catalog.spec_acceptance import default_acceptance
    from advisor.search.space import scenario_draft

    if sc.options.speculative:
        return None
    on = sc.model_copy(update={"options": sc.options.model_copy(update={"speculative": True})})
    draft, _ = scenario_draft(on)
    if draft is None:
        return None
    target = sc.model_spec().id
    acc = default_acceptance(target, draft)
    opts = on.options.model_copy(
        update={
            "spec_tokens": default_spec_tokens(target, draft),
            "spec_acceptance": acc.acceptance,
        }
    )
    return on.model_copy(update={"options": opts}), draft, acc.published


def _with_speculation_tried(sc: Scenario, rec: Recommendation) -> Recommendation:
    """A search that found nothing with speculative decoding off also says what turning it on
    does: the same question searched with the draft (``speculation_trial``), and the deployment
    it then recommends, or that none would meet it either (explain.speculation_line). The
    article's matrix answers 30B-180B models with speculative decoding, so a workshop that left
    it off should see whether it is the missing piece (DeepSeek-R1 for 100 users on 8 H200: no
    deployment meets a 30 ms P99 TPOT without it, TP=8 does with its own MTP head; Llama-3.1-70B
    at 20 req/s on 16 MI300X misses the TTFT target either way, and the line says so)."""
    trial = speculation_trial(sc)
    if trial is None:
        return rec
    on, draft, published = trial
    line = speculation_line(on, draft, published, _recommend(on))
    return rec.model_copy(update={"explanation": [*rec.explanation, line]})


def _nothing(sc: Scenario, t0: float, rejected: dict, reason: str) -> Recommendation:
    """A result with no deployment and the reason (an infeasible question is not an error)."""
    pb = param_breakdown(sc.model_spec())
    params = pb.total
    m = sc.model_spec()
    ans = article_answer(params, active_params_as_published(m), active_convention(m))
    return Recommendation(
        scenario=sc.name, model=sc.model, sla=sc.sla.describe(), latency_metric="",
        confidence=sc.sla.confidence,
        best=None, no_best_reason=reason, pareto=[], pareto_cost=[], near_misses=[],
        explanation=[], candidates_evaluated=0, feasible=0, rejected=rejected,
        decision_matrix=DecisionMatrix(model_params_b=params / 1e9, row=ans.row,
            article_answer=ans.text, note=ans.note, agrees=None, differences=[reason],
            article_shape=ans.shape_text(sc.hardware.gpus_per_node)),
        capacity=None, cost_basis=[], assumptions=[*ASSUMPTIONS, _headroom_note(sc), confidence_note(sc)],
        elapsed_ms=(time.perf_counter() - t0) * 1e3,
    )  # fmt: skip


def _recommend(sc: Scenario) -> Recommendation:
    t0 = time.perf_counter()
    model = sc.model_spec()
    context = sc.workload.isl_tokens + sc.workload.osl_tokens
    if context > model.max_position_embeddings:
        return _nothing(
            sc, t0, {},
            f"a request of {sc.workload.isl_tokens:,} + {sc.workload.osl_tokens:,} tokens exceeds "
            f"{model.name}'s maximum context of {model.max_position_embeddings:,} tokens",
        )  # fmt: skip
    st, rejected = build_shapes(sc)
    if st.r.n:
        ev = evaluate_aggregated(sc, st)
        dg = evaluate_disaggregated(sc, st) if sc.options.disaggregated else None
    else:
        ev, dg = None, None
    pb = param_breakdown(model)
    params = pb.total
    ans = article_answer(params, active_params_as_published(model), active_convention(model))
    if ev is None:
        return _nothing(
            sc, t0, dict(rejected), "no deployment fits in memory: " + "; ".join(
                f"{k} ({v})" for k, v in Counter(rejected).most_common(3)),
        )  # fmt: skip
    with phase("rank"):
        t = _Table(sc, st, ev, dg)
        ratio, checks = _sla(sc, t)
        metric, lat = _latency_metric(sc, t)
        feasible = (t.verdict == CODE[MEETS]) & ~t.over_budget
        risky = (t.verdict == CODE[AT_RISK]) & ~t.over_budget
        # the cheapest that meets with confidence; with none, the cheapest at risk, flagged
        pool = feasible if feasible.any() else risky
        best_i = _rank_best(sc, t, lat, np.nonzero(pool)[0])
        # near misses: infeasible, smallest violation first, distinct shapes (not the winner)
        winner = -1 if best_i is None else best_i
        out = np.nonzero(~feasible & (np.arange(t.n) != winner))[0]
        miss_order = out[np.lexsort((t.cost[out], ratio[out]))]
        over = (t.verdict == CODE[MEETS]) & t.over_budget
        cheapest_over = None
        if best_i is None and over.any():
            # over the budget cap: those that meet first, in the ranking's order, so that the
            # page's focus, the headline and the explanation name the same cheapest one (issue
            # 38: 4 x TP=2 in focus, 1 x TP=1 "the cheapest to buy", both $472,010)
            first = _rank_key(sc, t, lat, np.nonzero(over)[0])
            cheapest_over = int(first[0])
            miss_order = np.concatenate((first, miss_order[~over[miss_order]]))
        near_rows, seen = [], set()
        for i in miss_order[:200]:
            # a shape, not a row: a client profile's twin row is the same shape (profile_scope)
            shape = st.shapes[int(t.shape_of[i])]
            key = shape if i < t.na else ("d", shape)
            if key in seen:
                continue
            seen.add(key)
            near_rows.append(int(i))
            if len(near_rows) == 5:
                break
        # the winner and the near misses with breakdowns (Compare and the PDF draw the closest
        # miss when nothing meets), their steps evaluated together
        bds = step_breakdowns_of(sc, t, ([] if best_i is None else [best_i]) + near_rows)
        best = _deployment(sc, t, best_i, ratio, bds[best_i]) if best_i is not None else None
        reason = None
        at_risk = (
            risk_headline(
                sc,
                best.description,
                best.at_risk,
                int(((t.verdict == CODE[MEETS]) & t.over_budget).sum()),
            )
            if best is not None and best.sla_verdict == AT_RISK
            else None
        )

        near = []
        for i in near_rows:
            d = _deployment(sc, t, i, ratio, bds[i])
            near.append(NearMiss(deployment=d, fails=misses(sc, checks, i, d)))
        if best is None and near and near[0].deployment.meets_sla:  # over the budget cap
            closest = near[0]
            reason = (
                f"no deployment that meets {sc.sla.describe()} fits the "
                f"${sc.cost.max_capex_usd:,.0f} budget; the cheapest: "
                f"{closest.deployment.description} ({'; '.join(closest.fails)})"
            )
        elif best is None:
            closest = near[0] if near else None
            reason = unmet_head(sc.sla.describe()) + (
                f"; closest: {closest.deployment.description} ({'; '.join(closest.fails)})"
                if closest
                else ""
            )

        # Pareto frontiers (stable candidates)
        stab = np.nonzero(t.stable)[0]
        tpg = t.tput / np.maximum(t.gpus, 1)

        def points(idx: np.ndarray, keep: np.ndarray) -> list[ParetoPoint]:
            # np.union1d, without the numpy.ma import of plain np.unique (see frontier)
            idx = np.unique(
                np.concatenate((idx[:: max(1, idx.size // 40)], keep)), return_index=True
            )[0]
            return [_pareto_point(sc, t, int(i), ratio, lat) for i in idx]

        feas = np.nonzero(pool)[0]
        keep = np.array([] if best_i is None else [best_i], dtype=int)

        def frontier(y: np.ndarray) -> np.ndarray:
            """Frontier of all stable candidates and frontier of those meeting the SLA (a
            cheaper candidate that misses would otherwise hide every one that meets)."""
            both = [stab[pareto_min_min(y[stab], lat[stab])],
                    feas[pareto_min_min(y[feas], lat[feas])] if feas.size else keep, keep]  # fmt: skip
            # return_index: plain np.unique imports numpy.ma to look for a mask (30-100 ms
            # of a fresh process's first search); the sorted unique rows are the same
            return np.unique(np.concatenate(both), return_index=True)[0]

        pareto = points(frontier(-tpg), keep)
        pareto_cost = points(frontier(t.cost), keep)
        fastest = (
            _deployment(sc, t, int(stab[lexsort_first((t.cost[stab], lat[stab]))]), ratio, False)
            if stab.size
            else None
        )

    with phase("explain"):
        cap = capacity_plan(sc, t, best_i, checks) if best_i is not None else None
        explanation = (
            explain(sc, t, best_i, ratio, lat, metric, best.at_risk)
            if best_i is not None
            else unmet_lines(
                sc,
                t,
                checks,
                lambda i: _deployment(sc, t, i, ratio, False).description,
                cheapest_over,
            )
        )
        warning = confidence_lines(sc, t, best_i)[0] if best_i is not None else None
        dm = agreement(
            sc, t, best, ans, params, ratio, lambda i: _deployment(sc, t, i, ratio, False)
        )
    return Recommendation(
        scenario=sc.name, model=sc.model, sla=sc.sla.describe(), latency_metric=metric,
        confidence=sc.sla.confidence, warning=warning,
        best=best, at_risk=at_risk, at_risk_count=int(risky.sum()), no_best_reason=reason, pareto=pareto, pareto_cost=pareto_cost,
        near_misses=near, explanation=explanation, candidates_evaluated=int(t.n),
        feasible=int(feasible.sum()), rejected=dict(rejected), decision_matrix=dm,
        capacity=cap, cost_basis=[*(v[1] for v in t.rates.values()), *server_basis(sc)], lowest_latency=fastest,
        assumptions=[*ASSUMPTIONS, _headroom_note(sc), confidence_note(sc), *_calibration_notes(sc)],
        elapsed_ms=(time.perf_counter() - t0) * 1e3,
    )  # fmt: skip


def recommend_within(sc: Scenario) -> tuple[Recommendation, str | None]:
    """(the recommendation, why the active client profile did not price its deployment, or
    None: it did, it runs on another accelerator, or no profile is active: the deployment's
    ``client_profile_fallback``, which the search fills only under an active profile)."""
    rec = recommend(sc)
    return rec, None if rec.best is None else rec.best.client_profile_fallback


__all__ = ["Recommendation", "recommend", "interp_step", "service", "latency_under_load"]

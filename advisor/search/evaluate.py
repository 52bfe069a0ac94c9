"""Vectorised evaluation: step-time tables per replica shape, latency under load per (shape, DP).

Method (all numpy, no Python loop per candidate):
1. ``build_shapes``: one ReplicaArrays for every shape; shapes whose weights (plus draft) do not
   fit, or whose KV cache cannot hold one sequence of isl + osl tokens, are rejected with a
   counted reason (counted once per (shape, DP) candidate they would have produced).
2. Decode step time per shape on a batch grid 1, 2, 4, ..., 4096 (one ``decode_step`` call over
   shapes x grid at the mean context isl + osl/2, as ``perf.model.service.service_for``); the queueing
   model's ``decode_step_fn`` interpolates linearly between grid points
   (``PiecewiseLinearStep``, whose decode fixed point is solved exactly per segment).
   Speculative decoding (Leviathan et al. 2023): per target step the draft runs k steps and the
   target verifies k + 1 query tokens per sequence (``decode_step`` with
   ``query_tokens_per_seq = k + 1``, each attending to the whole context); a step yields E = (1 - a^(k+1)) / (1 - a) tokens, so the
   time per output token is (k x T_draft(b) + T_verify(b)) / E. Because T_verify grows with the
   batch (the step turns compute-bound), the speedup falls with the batch and can drop below 1.
3. ``latency_under_load`` (physics/queueing/model.py, continuous batching) on every (shape, DP) pair
   with the per-replica arrival rate = total rate / DP.
Closed loop (``workload.concurrent_users`` = N with think time Z): the throughput X solves
X = N / (Z + E2E_mean(X)) (interactive response-time law); solved per candidate in log space
(perf/model/closed_loop.closed_loop_load).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from advisor.catalog.drafts import draft_spec
from advisor.perf.model.closed_loop import closed_loop_load
from advisor.perf.model.predict import prefill_interruption_s
from advisor.perf.model.replica import ReplicaArrays, build_replicas, max_running, with_draft
from advisor.perf.model.service import STEP_GRID, split_service, tabulated_service
from advisor.perf.model.step import decode_step, prefill_with_elasticity
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import LoadResult
from advisor.physics.queueing.service import ServiceModel
from advisor.physics.speculative import expected_tokens_per_step
from advisor.scenario import Scenario
from advisor.search.profile_scope import profile_twins
from advisor.search.space import Shape, dp_pairs, replica_config, scenario_draft, shapes
from advisor.search.timing import phase

GRID = STEP_GRID  # decode batch grid 1..4096
GB = 1e9


@dataclass
class ShapeTable:
    """Feasible shapes with their arrays and step-time tables."""

    shapes: list[Shape]
    r: ReplicaArrays
    step_tab_s: np.ndarray  # [n, G] time per output token at batch GRID[j]
    plain_tab_s: np.ndarray  # [n, G] without speculative decoding (for the speedup)
    prefill_s: np.ndarray  # [n]
    max_running: np.ndarray  # [n] >= 1
    draft: ReplicaArrays | None
    draft_row: np.ndarray  # [n] index into draft arrays (-1 when no speculation)
    tokens_per_step: float
    context_tokens: float
    #: [n] d ln(prefill) / d ln(prompt) at the mean prompt (step.prefill_length_elasticity)
    prefill_elasticity: np.ndarray
    #: Rows before this one are one per shape, built without a workload (under a client
    #: profile with a range: the shipped calibration); the rest are twins of some of them built
    #: with the profile (search/profile_scope.profile_twins).
    n_primary: int = -1
    #: shape row -> (its twin's row, the DPs at which the profile applies to the shape)
    twin: dict[int, tuple[int, frozenset[int]]] = field(default_factory=dict)
    row_of: dict[Shape, int] = field(default_factory=dict)  # shape -> row (filled on init)

    def __post_init__(self) -> None:
        if self.n_primary < 0:
            self.n_primary = len(self.shapes)
        self.row_of.update({s: i for i, s in reversed(list(enumerate(self.shapes)))})

    def priced(self, idx: np.ndarray, dp: np.ndarray) -> np.ndarray:
        """The rows that price (shape row ``idx``, ``dp``) candidates: a shape's twin where the
        client profile applies to it at that DP (its load per replica inside the range)."""
        if not self.twin:
            return idx
        idx = np.array(idx, dtype=int)
        for row, (twin, dps) in self.twin.items():
            sel = np.nonzero(idx == row)[0]
            idx[sel[[int(d) in dps for d in dp[sel]]]] = twin
        return idx


def build_shapes(scenario: Scenario) -> tuple[ShapeTable, Counter]:
    """Enumerate shapes, reject the infeasible with counted reasons, tabulate step times."""
    with phase("enumerate"):
        all_shapes = shapes(scenario)
        # speculative shapes share the target's replica with their non-speculative twin:
        # build each distinct (gpu, TP, PP, weights, KV, layout) once
        uniq: dict[tuple, int] = {}
        reps: list[Shape] = []
        cfg_row = np.empty(len(all_shapes), dtype=int)
        for i, s in enumerate(all_shapes):
            key = (s.gpu, s.tp, s.pp, s.weights, s.kv, s.ep, s.dpa)
            if key not in uniq:
                uniq[key] = len(reps)
                reps.append(s)
            cfg_row[i] = uniq[key]
        cfgs = [replica_config(scenario, s) for s in reps]
    with phase("build"):
        return _build(scenario, all_shapes, cfgs, cfg_row)


def _build(
    scenario: Scenario, all_shapes: list[Shape], cfgs: list, cfg_row: np.ndarray,
    dps: list[int] | None = None,
) -> tuple[ShapeTable, Counter]:  # fmt: skip
    """The shape table of ``all_shapes`` (replica ``cfgs[cfg_row[i]]`` each), with the client
    profile's twin rows for the DPs ``dps`` (None: every DP the GPUs allow)."""
    wl, opt, hw = scenario.workload, scenario.options, scenario.hardware
    n_shapes = len(all_shapes)
    all_shapes, cfgs, cfg_row, twin = profile_twins(scenario, all_shapes, cfgs, cfg_row, dps)
    r = build_replicas(cfgs).take(cfg_row)
    isl, osl = float(wl.isl_tokens), float(wl.osl_tokens)
    total = hw.total_gpus
    weights = r.dense_weight_bytes + r.expert_weight_bytes
    spec = np.array([s.spec for s in all_shapes], dtype=bool)

    draft = None
    draft_row = np.full(len(all_shapes), -1)
    k = opt.spec_tokens
    e_tok = float(expected_tokens_per_step(opt.spec_acceptance, k))
    if spec.any():
        dmodel = draft_spec(scenario.model_spec(), scenario_draft(scenario)[0])
        keys: dict[tuple, int] = {}
        dcfgs = []
        for i, s in enumerate(all_shapes):
            if not s.spec:
                continue
            dtp = min(s.tp, hw.gpus_per_node, 8)
            dw = "fp8" if s.weights == "fp8" else "fp16"
            key = (s.gpu, dtp, s.kv, dw)
            if key not in keys:
                keys[key] = len(dcfgs)
                dcfgs.append(replica_config(scenario, s, model=dmodel, tp=dtp, pp=1, weights=dw))
            draft_row[i] = keys[key]
        draft = build_replicas(dcfgs)
        budget = r.kv_budget_bytes
        r = with_draft(r, draft, draft_row)
        weights = weights + (budget - r.kv_budget_bytes)

    cap = np.minimum(max_running(r, np.full(r.n, isl + osl)), r.max_num_seqs)
    rejected: Counter = Counter()
    n_dp = total // r.gpus.astype(int)
    no_fit = r.kv_budget_bytes <= 0
    for i in np.nonzero(no_fit | (cap < 1))[0]:
        if i >= n_shapes:  # a twin: its shape is counted once, as its own row
            continue
        s = all_shapes[i]
        if no_fit[i]:
            what = "weights + draft" if s.spec else "weights"
            reason = (
                f"{what} do not fit: {weights[i] / GB:.0f} GB > "
                f"{(r.kv_budget_bytes[i] + weights[i]) / GB:.0f} GB per GPU left for weights and KV "
                f"after activations ({s.weights}, {s.layout}, PP={s.pp}, {s.gpu})"
            )
        else:
            reason = f"KV cache cannot hold one sequence of {isl + osl:.0f} tokens ({s.gpu})"
        rejected[reason] += int(n_dp[i])
    ok = np.nonzero(~(no_fit | (cap < 1)))[0]
    new = {int(o): k for k, o in enumerate(ok)}  # a twin fits where its shape does
    twin = {new[p]: (new[t], d) for p, (t, d) in twin.items() if p in new and t in new}
    r = r.take(ok)
    kept = [all_shapes[i] for i in ok]
    spec = spec[ok]
    draft_row = draft_row[ok]
    cap = cap[ok]

    ctx = isl + osl / 2.0
    n, g = r.n, GRID.size
    grid = GRID[None, :]  # [1, G] batches against [n, 1] replica columns
    plain = decode_step(r.column(), grid, ctx).total.reshape(n, g)
    tab = plain.copy()
    pre, elasticity = prefill_with_elasticity(r, np.full(n, isl))
    if spec.any():
        si = np.nonzero(spec)[0]
        verify = decode_step(r.take(si).column(), grid, ctx, query_tokens_per_seq=k + 1.0)
        # the draft's steps depend only on its own (few) distinct replicas: tabulate those
        nd = draft.n
        dtab = decode_step(draft.column(), grid, ctx).total.reshape(nd, g)[draft_row[si]]
        tab[si] = (k * dtab + verify.total.reshape(si.size, g)) / e_tok
        pre = pre.copy()
        # the draft's prompt pass: GPU time only (the request's overheads are in ``pre``)
        pre[si] += prefill_interruption_s(draft, np.full(nd, isl))[draft_row[si]]
    return (
        ShapeTable(
            kept,
            r,
            tab,
            plain,
            pre,
            np.maximum(cap, 1.0),
            draft,
            draft_row,
            e_tok,
            ctx,
            elasticity,
            int((ok < n_shapes).sum()),
            twin,
        ),
        rejected,
    )


def decode_step_ms(st: ShapeTable, k: int, b: float):
    """The decode step of shape row ``k`` at batch ``b`` as the search prices it: (its parts in
    ms, the exact StepTimes for the diagnostics, bytes read per GPU).

    The search's step is interpolated on a power-of-two grid of batch sizes (a few % off the
    exact step between grid points); the parts are scaled to it, so they add up to the step,
    and the mean TPOT, the search decided with, and every view that quotes a part (the
    explanation's all-reduce, the PDF's chart) quotes the same figure (issue 38: 3.46 vs
    3.44 ms). A speculative shape's table holds the time per token, not the target's step:
    its target step is exact.
    """
    parts, step = decode_steps_ms(st, [k], [b])
    return parts[0], step


def decode_steps_ms(st: ShapeTable, ks, bs) -> tuple[list[dict[str, float]], object]:
    """``decode_step_ms`` of shape rows ``ks`` at batches ``bs`` in one evaluation (the search
    reports a winner and up to five near misses with their steps): (parts per row, StepTimes)."""
    from advisor.perf.model.step import decode_step

    ks = np.asarray(ks, dtype=int)
    bs = np.asarray(bs, dtype=float)
    step = decode_step(st.r.take(ks), bs, st.context_tokens)
    searched = interp_step(st.step_tab_s[ks], bs)
    out = []
    for j, k in enumerate(ks.tolist()):
        parts = step.component_dict(j)
        exact = sum(parts.values())
        if not st.shapes[k].spec and exact > 0:
            on_grid = float(searched[j]) * 1e3
            parts = {name: ms * on_grid / exact for name, ms in parts.items()}
        out.append(parts)
    return out, step


def interp_step(tab: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation of ``tab`` [n, G] on the power-of-two GRID at batch ``b``.

    Beyond the last grid point the last segment is extrapolated linearly.

    >>> float(interp_step(np.array([[1.0, 2.0, 4.0] + [8.0] * 10]), np.array([3.0]))[0])
    3.0
    """
    b = np.clip(np.asarray(b, dtype=float), 1.0, None)
    j = np.clip(np.floor(np.log2(b)).astype(int), 0, GRID.size - 2)
    lo = GRID[j]
    frac = (b - lo) / lo  # next grid point is 2 x lo
    rows = np.arange(tab.shape[0])
    return tab[rows, j] + (tab[rows, j + 1] - tab[rows, j]) * frac


def service(
    tab: np.ndarray,
    prefill_s: np.ndarray,
    mr: np.ndarray,
    request_overhead_s: np.ndarray | float,
    elasticity: np.ndarray | float = 1.0,
) -> ServiceModel:
    """Queueing ServiceModel over candidate rows (decode step from the interpolated table,
    ``perf.model.service.tabulated_service``)."""
    return tabulated_service(tab, prefill_s, request_overhead_s, mr, elasticity)


def load(scenario: Scenario, sm: ServiceModel, dp: np.ndarray) -> tuple[LoadResult, np.ndarray]:
    """Latency under the scenario's load for candidates with ``dp`` replicas each.

    Returns (LoadResult per replica, total arrival rate per candidate in requests/s).
    """
    wl = scenario.workload
    kw = dict(isl_tokens=float(wl.isl_tokens), isl_cv=wl.isl_cv, osl_cv=wl.osl_cv)
    osl = float(wl.osl_tokens)
    with phase("queueing"):
        return _load(sm, dp, osl, kw, wl)


def _load(sm: ServiceModel, dp: np.ndarray, osl: float, kw: dict, wl):
    if wl.arrival_rate_per_s is not None:
        rate = np.full(dp.size, wl.arrival_rate_per_s)
        return latency_under_load(sm, rate / dp, osl, **kw), rate
    # Closed loop: X = N / (Z + E2E(X / dp)), solved per candidate (perf.model.closed_loop).
    return closed_loop_load(sm, float(wl.concurrent_users), osl, kw, dp=dp, subset=_subset,
                            think_time_s=wl.think_time_s)  # fmt: skip


def _subset(sm: ServiceModel, rows: np.ndarray) -> ServiceModel:
    """The candidates ``rows`` of a search ServiceModel (PiecewiseLinearStep table rows)."""
    return split_service(sm.decode_step_fn.step_s[rows], sm.prefill_s[rows], sm.request_delay_s[rows],
                         sm.max_running[rows], sm.prefill_elasticity[rows])  # fmt: skip


@dataclass
class Evaluated:
    """Aggregated candidates: (shape row, DP) and their latency under load."""

    shape_idx: np.ndarray
    dp: np.ndarray
    gpus: np.ndarray
    rate: np.ndarray  # total requests/s served
    res: LoadResult


def evaluate_aggregated(
    scenario: Scenario, st: ShapeTable, pairs: tuple[np.ndarray, np.ndarray] | None = None
) -> Evaluated:
    """Every (shape, DP) pair the GPUs allow, or only ``pairs`` (shape rows, DP) when given."""
    with phase("evaluate"):
        return _evaluate_aggregated(scenario, st, pairs)


def _evaluate_aggregated(scenario: Scenario, st: ShapeTable, pairs=None) -> Evaluated:
    if pairs is None:
        idx, dp = dp_pairs(st.r.gpus[: st.n_primary].astype(int), scenario.hardware.total_gpus)
    else:
        idx, dp = (np.asarray(x, dtype=int) for x in pairs)
    idx = st.priced(idx, dp)
    sm = service(
        st.step_tab_s[idx], st.prefill_s[idx], st.max_running[idx],
        st.r.request_overhead_s[idx], st.prefill_elasticity[idx],
    )  # fmt: skip
    res, rate = load(scenario, sm, dp.astype(float))
    return Evaluated(idx, dp, st.r.gpus[idx].astype(int) * dp, rate, res)

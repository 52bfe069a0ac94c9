"""Disaggregated serving candidates: a prefill pool and a decode pool (Splitwise, DistServe, Dynamo).

Each pool is DP replicas of its own TP (PP = 1) on the same accelerator, weight and KV dtype.
- Prefill pool: requests queue for a prefill replica (per-replica rate = rate / DP_p); modelled
  with the same continuous-batching queue, output length 1 (arrivals during a prefill are
  prefilled together next).
- KV transfer per request: isl x kv_bytes_per_token (whole model) over the link between the
  pools: the node's scale-up link when both pools fit in one node, else the inter-node link.
  t_kv = latency + bytes / bandwidth.
- Decode pool: continuous batching with no prompt work (prefill_s = 0), so no prefill stalls.
Combined percentiles are sums of the parts' percentiles (an upper bound for the sum of
independent delays): TTFT_q = TTFT_q(prefill) + t_kv + wait_q(decode); E2E_q likewise.
Closed loop (N users): one throughput per pair through both pools (``_closed_loop_pairs``).
DP per pool: 1, 2, 3, 4, 6, 8, 12, ... (powers of two and 1.5x powers of two) to keep the pairs
tractable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.catalog import interconnects
from advisor.physics.memory import kv_bytes_per_token_per_layer
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import QUANTILES, LoadResult
from advisor.scenario import Scenario
from advisor.search.evaluate import ShapeTable, _subset, load, service
from advisor.search.timing import phase


def dp_values(limit: int) -> np.ndarray:
    """1, 2, 3, 4, 6, 8, 12, 16, ... <= limit.

    >>> dp_values(13).tolist()
    [1, 2, 3, 4, 6, 8, 12]
    """
    out = {1}
    v = 2
    while v <= limit:
        out.add(v)
        if v * 3 // 2 <= limit:
            out.add(v * 3 // 2)
        v *= 2
    return np.array(sorted(out), dtype=int)


def _q(stats) -> np.ndarray:
    return np.stack([stats.quantile_s(q) for q in QUANTILES], axis=1)


@dataclass
class Disagg:
    pre_shape: np.ndarray
    pre_dp: np.ndarray
    dec_shape: np.ndarray
    dec_dp: np.ndarray
    gpus: np.ndarray
    rate: np.ndarray
    ttft_q: np.ndarray  # [n, 4] seconds
    tpot_q: np.ndarray
    e2e_q: np.ndarray
    stable: np.ndarray
    reason_code: np.ndarray
    capacity_req_per_s: np.ndarray  # total
    kv_transfer_s: np.ndarray
    tpot_mean_s: np.ndarray
    running_mean: np.ndarray  # per decode replica


def evaluate_disaggregated(
    scenario: Scenario, st: ShapeTable, pools: tuple[np.ndarray, np.ndarray] | None = None
) -> Disagg | None:
    """All (prefill pool, decode pool) pairs that fit the GPUs; None if the space is empty.

    ``pools``: (shape rows, DP) of the pools to pair instead of every shape x ``dp_values``
    (a hand-set deployment, advisor/search/focus.py).
    """
    with phase("evaluate"):
        return _evaluate_disaggregated(scenario, st, pools)


def _evaluate_disaggregated(scenario: Scenario, st: ShapeTable, pools=None) -> Disagg | None:
    hw = scenario.hardware
    total = hw.total_gpus
    if total < 2:
        return None
    if pools is None:
        base = np.array(
            [i for i, s in enumerate(st.shapes[: st.n_primary])
             if s.pp == 1 and not s.spec and s.tp <= total // 2], dtype=int,
        )  # fmt: skip
        if base.size == 0:
            return None
        # pools: (shape, dp) with shape GPUs x dp <= total - 1
        dps = dp_values(total)
        pi = np.repeat(base, dps.size)
        pd = np.tile(dps, base.size)
    else:
        pi, pd = (np.asarray(x, dtype=int) for x in pools)
    keep = st.r.gpus[pi] * pd <= total - 1
    pi, pd = pi[keep], pd[keep]
    if pi.size == 0:
        return None
    wl = scenario.workload
    # prefill pool: osl = 1
    sc_pre = scenario.model_copy(update={"workload": replace_workload(wl, osl=1)})
    sm_pre, sm_dec = pool_services(st, pi, pi)
    closed = wl.arrival_rate_per_s is None
    if closed:  # pools at a vanishing rate: capacities and unloaded latencies
        with phase("queueing"):
            kw = dict(isl_tokens=float(wl.isl_tokens), isl_cv=wl.isl_cv)
            pre_res = latency_under_load(sm_pre, np.full(pi.size, 1e-9), 1.0, **kw)
            dec_res = latency_under_load(sm_dec, np.full(pi.size, 1e-9), float(wl.osl_tokens),
                                         osl_cv=wl.osl_cv, **kw)  # fmt: skip
    else:
        pre_res, _ = load(sc_pre, sm_pre, pd * 1.0)
        dec_res, _ = load(scenario, sm_dec, pd * 1.0)
    # pair pools: same gpu / dtypes, total GPUs within budget (pairs built group by group)
    groups: dict[tuple, int] = {}
    shape_group = np.array(
        [groups.setdefault((s.gpu, s.weights, s.kv), len(groups)) for s in st.shapes], dtype=int
    )
    gid = shape_group[pi]
    g = st.r.gpus[pi] * pd
    a, b = _pairs_within_groups(gid)
    ok = g[a] + g[b] <= total
    a, b = a[ok], b[ok]
    if a.size == 0:
        return None
    m = scenario.model_spec()
    links = interconnects()
    kv_of = {kv: kv_bytes_per_token_per_layer(m, kv) * m.num_hidden_layers
             for kv in {s.kv for s in st.shapes}}  # fmt: skip
    kv_shape = np.array([kv_of[s.kv] for s in st.shapes])
    kv_tok = kv_shape[pi[a]]
    intra = links[hw.intra_link] if hw.intra_link else None
    same_node = (g[a] + g[b]) <= hw.gpus_per_node
    inter = links[hw.inter_link]
    if intra is None:
        link_bw = {lid: links[lid].bandwidth_bytes_per_s for lid in set(st.r.tp_link_id)}
        bw_shape = np.array([link_bw[lid] for lid in st.r.tp_link_id])
        bw_intra = bw_shape[pi[a]]
    else:
        bw_intra = np.full(a.size, intra.bandwidth_bytes_per_s)
    lat_intra = 1e-5
    bw = np.where(same_node, bw_intra, inter.bandwidth_bytes_per_s)
    lat = np.where(same_node, lat_intra, inter.latency_s)
    t_kv = lat + float(wl.isl_tokens) * kv_tok / bw
    if closed:
        return _closed_loop_pairs(scenario, st, pi, pd, a, b, g, t_kv, sm_pre, sm_dec,
                                  pre_res, dec_res)  # fmt: skip
    # [pairs, 4] sums in place (each a fresh MB-sized temporary otherwise)
    e2e = _q(pre_res.ttft)[a]
    e2e += t_kv[:, None]
    ttft = e2e + _q(dec_res.ttft)[b]
    e2e += _q(dec_res.e2e)[b]
    stable = pre_res.stable[a] & dec_res.stable[b]
    ttft[~stable] = np.inf
    e2e[~stable] = np.inf
    reason = np.where(pre_res.stable[a], dec_res.reason_code[b], pre_res.reason_code[a])
    cap = np.minimum(pre_res.capacity_req_per_s[a] * pd[a], dec_res.capacity_req_per_s[b] * pd[b])
    rate = np.full(a.size, wl.arrival_rate_per_s)
    return Disagg(
        pre_shape=pi[a], pre_dp=pd[a], dec_shape=pi[b], dec_dp=pd[b],
        gpus=(g[a] + g[b]).astype(int), rate=rate,
        ttft_q=ttft, tpot_q=_q(dec_res.tpot)[b], e2e_q=e2e, stable=stable, reason_code=reason,
        capacity_req_per_s=cap, kv_transfer_s=t_kv, tpot_mean_s=dec_res.tpot.mean_s[b],
        running_mean=dec_res.running_mean[b],
    )  # fmt: skip


def _pairs_within_groups(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) of pools in the same group, prefill pool ``a`` major then ``b``, both
    ascending (as a full meshgrid would list them), built in that order: each pool ``a``
    followed by its group's members.

    >>> a, b = _pairs_within_groups(np.array([0, 1, 0]))
    >>> a.tolist(), b.tolist()
    ([0, 0, 1, 2, 2], [0, 2, 1, 0, 2])
    """
    members = np.argsort(gid, kind="stable")  # by group, ascending inside each
    size = np.bincount(gid)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    per_a = size[gid]
    a = np.repeat(np.arange(gid.size), per_a)
    first = np.repeat(np.cumsum(per_a) - per_a, per_a)  # where each a's run begins
    b = members[np.repeat(start[gid], per_a) + np.arange(a.size) - first]
    return a, b


#: Pool load grid for the closed loop: fractions u of a replica's capacity, evenly spaced in
#: logit(u) = log(u / (1 - u)): log-spaced at light load and in 1 - u near saturation, where
#: the queueing delay grows like 1 / (1 - u) (so log delay is nearly linear in logit u).
_LOGIT = np.linspace(np.log(1e-4 / (1 - 1e-4)), np.log(0.999 / 0.001), 48)
U_GRID = 1.0 / (1.0 + np.exp(-_LOGIT))


def _mean_on_grid(sm, cap: np.ndarray, osl: float, kw: dict, metric: str) -> np.ndarray:
    """[m, U] mean latency (s) of each pool replica at U_GRID x its capacity."""
    rows = np.repeat(np.arange(cap.size), U_GRID.size)
    res = latency_under_load(_subset(sm, rows), (cap[:, None] * U_GRID).ravel(), osl, **kw)
    return getattr(res, metric).mean_s.reshape(cap.size, U_GRID.size)


def _interp_grid(tab: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """tab[rows] at load fractions u, linear in (logit u, log value) between U_GRID points."""
    uc = np.clip(u, 1e-300, 0.999)
    lu = np.log(uc) - np.log1p(-uc)
    k = np.clip((lu - _LOGIT[0]) / (_LOGIT[1] - _LOGIT[0]), 0.0, U_GRID.size - 1)
    k0 = np.minimum(np.floor(k).astype(int), U_GRID.size - 2)
    f = k - k0
    with np.errstate(divide="ignore"):
        lv = np.log(tab)
    return np.exp(lv[rows, k0] * (1.0 - f) + lv[rows, k0 + 1] * f)


def _closed_loop_pairs(sc, st, pi, pd, a, b, g, t_kv, sm_pre, sm_dec, pre0, dec0) -> Disagg:
    """Closed loop (N users, think time Z) for pool pairs: one throughput X per pair with
    X = N / (Z + TTFT_prefill(X / DP_p) + t_kv + E2E_decode(X / DP_d)) (interactive
    response-time law over the whole request, physics/queueing/closed_loop.py). The pools' mean latencies are tabulated once per pool on a load grid
    (U_GRID), X is found per pair by bisection in log X on the tables, then
    each pair is evaluated exactly at its X."""
    wl = sc.workload
    users, think_s = float(wl.concurrent_users), wl.think_time_s
    kw = dict(isl_tokens=float(wl.isl_tokens), isl_cv=wl.isl_cv)
    cap_p, cap_d = pre0.capacity_req_per_s, dec0.capacity_req_per_s  # per replica
    with phase("queueing"):
        tp_tab = _mean_on_grid(sm_pre, cap_p, 1.0, kw, "ttft")
        ed_tab = _mean_on_grid(sm_dec, cap_d, float(wl.osl_tokens), dict(kw, osl_cv=wl.osl_cv),
                               "e2e")  # fmt: skip
    dpa, dpb = pd[a] * 1.0, pd[b] * 1.0
    e0 = pre0.ttft.mean_s[a] + t_kv + dec0.e2e.mean_s[b]
    hi = np.minimum(users / (think_s + e0), np.minimum(cap_p[a] * dpa, cap_d[b] * dpb) * 0.999)
    lo = hi * 1e-4
    for _ in range(24):  # bracket ratio 1e4 -> 1e4^(2^-24): below the table's accuracy
        x = np.sqrt(lo * hi)
        e = (_interp_grid(tp_tab, a, x / dpa / cap_p[a]) + t_kv
             + _interp_grid(ed_tab, b, x / dpb / cap_d[b]))  # fmt: skip
        below = x * (think_s + e) < users
        lo, hi = np.where(below, x, lo), np.where(below, hi, x)
    x = lo
    ttft, tpot, e2e, stable, pre, dec = pair_latency(
        sc, st, pi[a], x / dpa, pi[b], x / dpb, t_kv, full=True
    )
    reason = np.where(pre.stable, dec.reason_code, pre.reason_code)
    return Disagg(
        pre_shape=pi[a], pre_dp=pd[a], dec_shape=pi[b], dec_dp=pd[b],
        gpus=(g[a] + g[b]).astype(int), rate=x, ttft_q=ttft, tpot_q=tpot, e2e_q=e2e,
        stable=stable, reason_code=reason,
        capacity_req_per_s=np.minimum(cap_p[a] * dpa, cap_d[b] * dpb), kv_transfer_s=t_kv,
        tpot_mean_s=dec.tpot.mean_s, running_mean=dec.running_mean,
    )  # fmt: skip


def pool_services(st: ShapeTable, pre_k: np.ndarray, dec_k: np.ndarray):
    """Queueing models of prefill replicas (shape rows ``pre_k``) and decode replicas (``dec_k``).

    Prefill replica: its prefill time, unlimited slots, a negligible 1 us "decode step" (the
    request leaves after its first token, osl = 1). Decode replica: the shape's step table,
    no prompt work (prefill_s = 0), its KV slot limit.
    """
    tiny = np.full((pre_k.size, st.step_tab_s.shape[1]), 1e-6)
    sm_pre = service(tiny, st.prefill_s[pre_k], np.full(pre_k.size, np.inf),
                     st.r.request_overhead_s[pre_k], st.prefill_elasticity[pre_k])  # fmt: skip
    sm_dec = service(st.step_tab_s[dec_k], np.zeros(dec_k.size), st.max_running[dec_k], 0.0)
    return sm_pre, sm_dec


def pair_latency(
    scenario: Scenario, st: ShapeTable, pre_k, pre_rate, dec_k, dec_rate, t_kv, full=False
):
    """Percentiles [n, 4] (TTFT, TPOT, E2E) and stability of prefill/decode pool pairs.

    ``pre_rate`` / ``dec_rate`` are Poisson rates per replica of each pool (requests/s);
    combined as in the module docstring (sums of the parts' percentiles). ``full``: also
    return the two pools' LoadResults.
    """
    wl = scenario.workload
    sm_pre, sm_dec = pool_services(st, pre_k, dec_k)
    kw = dict(isl_tokens=float(wl.isl_tokens), isl_cv=wl.isl_cv)
    with phase("queueing"):
        pre = latency_under_load(sm_pre, pre_rate, 1.0, **kw)
        dec = latency_under_load(sm_dec, dec_rate, float(wl.osl_tokens), osl_cv=wl.osl_cv, **kw)
    t = np.asarray(t_kv, dtype=float)[:, None]
    pq = _q(pre.ttft)
    stable = pre.stable & dec.stable
    ttft = np.where(stable[:, None], pq + t + _q(dec.ttft), np.inf)
    e2e = np.where(stable[:, None], pq + t + _q(dec.e2e), np.inf)
    if full:
        return ttft, _q(dec.tpot), e2e, stable, pre, dec
    return ttft, _q(dec.tpot), e2e, stable


def replace_workload(wl, *, osl: int):
    return wl.model_copy(update={"osl_tokens": osl, "osl_cv": 0.0})


__all__ = [
    "Disagg",
    "LoadResult",
    "dp_values",
    "evaluate_disaggregated",
    "pair_latency",
    "pool_services",
]

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
DP per pool: 1, 2, 3, 4, 6, 8, 12, ... (powers of two and 1.5x powers of two) to keep the pairs
tractable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.catalog import interconnects
from advisor.physics.memory import kv_bytes_per_token_per_layer
from advisor.physics.queueing import QUANTILES, LoadResult, latency_under_load
from advisor.scenario import Scenario
from advisor.search.evaluate import ShapeTable, load, service
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


def evaluate_disaggregated(scenario: Scenario, st: ShapeTable) -> Disagg | None:
    """All (prefill pool, decode pool) pairs that fit the GPUs; None if the space is empty."""
    with phase("evaluate"):
        return _evaluate_disaggregated(scenario, st)


def _evaluate_disaggregated(scenario: Scenario, st: ShapeTable) -> Disagg | None:
    hw = scenario.hardware
    total = hw.total_gpus
    if total < 2:
        return None
    base = np.array(
        [i for i, s in enumerate(st.shapes) if s.pp == 1 and not s.spec and s.tp <= total // 2],
        dtype=int,
    )
    if base.size == 0:
        return None
    # pools: (shape, dp) with shape GPUs x dp <= total - 1
    dps = dp_values(total)
    pi = np.repeat(base, dps.size)
    pd = np.tile(dps, base.size)
    keep = st.r.gpus[pi] * pd <= total - 1
    pi, pd = pi[keep], pd[keep]
    if pi.size == 0:
        return None
    wl = scenario.workload
    # prefill pool: osl = 1
    sc_pre = scenario.model_copy(update={"workload": replace_workload(wl, osl=1)})
    sm_pre, sm_dec = pool_services(st, pi, pi)
    pre_res, _ = load(sc_pre, sm_pre, pd * 1.0)
    dec_res, _ = load(scenario, sm_dec, pd * 1.0)
    # pair pools: same gpu / dtypes, total GPUs within budget (pairs built group by group)
    groups: dict[tuple, int] = {}
    shape_group = np.array(
        [groups.setdefault((s.gpu, s.weights, s.kv), len(groups)) for s in st.shapes], dtype=int
    )
    gid = shape_group[pi]
    g = st.r.gpus[pi] * pd
    pa, pb = [], []
    for grp in range(len(groups)):
        members = np.nonzero(gid == grp)[0]
        if members.size:
            x, y = np.meshgrid(members, members, indexing="ij")
            pa.append(x.ravel())
            pb.append(y.ravel())
    a, b = np.concatenate(pa), np.concatenate(pb)
    ok = g[a] + g[b] <= total
    a, b = a[ok], b[ok]
    order = np.lexsort((b, a))  # prefill pool major, as a full meshgrid would list them
    a, b = a[order], b[order]
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
    pq, dq = _q(pre_res.ttft), _q(dec_res.ttft)
    ttft = pq[a] + t_kv[:, None] + dq[b]
    e2e = pq[a] + t_kv[:, None] + _q(dec_res.e2e)[b]
    stable = pre_res.stable[a] & dec_res.stable[b]
    reason = np.where(pre_res.stable[a], dec_res.reason_code[b], pre_res.reason_code[a])
    cap = np.minimum(pre_res.capacity_req_per_s[a] * pd[a], dec_res.capacity_req_per_s[b] * pd[b])
    rate = np.full(a.size, wl.arrival_rate_per_s or 0.0)
    if wl.arrival_rate_per_s is None:  # closed loop: approximate by the slower pool's rate
        rate = np.minimum(pre_res.throughput_tok_per_s[a] * pd[a],
                          dec_res.throughput_tok_per_s[b] * pd[b] / wl.osl_tokens)  # fmt: skip
    return Disagg(
        pre_shape=pi[a], pre_dp=pd[a], dec_shape=pi[b], dec_dp=pd[b],
        gpus=(g[a] + g[b]).astype(int), rate=rate,
        ttft_q=np.where(stable[:, None], ttft, np.inf), tpot_q=_q(dec_res.tpot)[b],
        e2e_q=np.where(stable[:, None], e2e, np.inf), stable=stable, reason_code=reason,
        capacity_req_per_s=cap, kv_transfer_s=t_kv, tpot_mean_s=dec_res.tpot.mean_s[b],
        running_mean=dec_res.running_mean[b],
    )  # fmt: skip


def pool_services(st: ShapeTable, pre_k: np.ndarray, dec_k: np.ndarray):
    """Queueing models of prefill replicas (shape rows ``pre_k``) and decode replicas (``dec_k``).

    Prefill replica: its prefill time, unlimited slots, a negligible 1 us "decode step" (the
    request leaves after its first token, osl = 1). Decode replica: the shape's step table,
    no prompt work (prefill_s = 0), its KV slot limit.
    """
    tiny = np.full((pre_k.size, st.step_tab_s.shape[1]), 1e-6)
    sm_pre = service(tiny, st.prefill_s[pre_k], np.full(pre_k.size, np.inf))
    sm_dec = service(st.step_tab_s[dec_k], np.zeros(dec_k.size), st.max_running[dec_k])
    return sm_pre, sm_dec


def pair_latency(scenario: Scenario, st: ShapeTable, pre_k, pre_rate, dec_k, dec_rate, t_kv):
    """Percentiles [n, 4] (TTFT, TPOT, E2E) and stability of prefill/decode pool pairs.

    ``pre_rate`` / ``dec_rate`` are Poisson rates per replica of each pool (requests/s);
    combined as in the module docstring (sums of the parts' percentiles).
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

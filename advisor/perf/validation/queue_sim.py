"""Discrete-event simulation of one batching LLM server: the reference for the queueing model.

The analytic approximation (:func:`advisor.physics.queueing.model.latency_under_load`) and this
simulation implement the same server model (described in the physics module's docstring); the
tests compare them (tests/test_queueing.py, tests/test_search_sim.py). The simulation is a
check, not a formula, so it lives here rather than in physics.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from advisor.physics.queueing.results import QUANTILES, LatencyStats, LoadResult
from advisor.physics.queueing.service import POLICIES, ServiceModel, utilisation

_MAX_INT_SLOTS = 1 << 40  # stands for "unlimited" max_running inside the simulator


@dataclass(frozen=True)
class SimResult:
    """Per-request samples (after warm-up and before drain) and time averages of one simulation."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    running_mean: float
    throughput_tok_per_s: float
    utilisation: float
    #: Inter-token gaps (s) of the decode iterations inside the measurement window, each with
    #: the sequences that waited it (a gap seen by 8 running sequences counts 8 times).
    itl_gap_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    itl_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def itl_quantile_s(self, q: float) -> float:
        """Quantile q of the inter-token gap over every decoding sequence's gaps (weighted)."""
        if self.itl_gap_s.size == 0:
            return 0.0
        order = np.argsort(self.itl_gap_s)
        cum = np.cumsum(self.itl_weight[order])
        return float(self.itl_gap_s[order][np.searchsorted(cum, q * cum[-1])])

    def stats(self) -> LoadResult:
        """The samples summarised as a one-candidate :class:`LoadResult`."""

        def summ(x: np.ndarray) -> LatencyStats:
            if x.size == 0:
                z = np.zeros(1)
                return LatencyStats(z, z, z, z, z)
            qs = np.percentile(x, [100 * q for q in QUANTILES])
            return LatencyStats(*(np.array([v]) for v in (x.mean(), *qs)))

        one = np.ones(1)
        return LoadResult(
            ttft=summ(self.ttft_s),
            tpot=summ(self.tpot_s),
            e2e=summ(self.e2e_s),
            running_mean=one * self.running_mean,
            utilisation=one * self.utilisation,
            capacity_req_per_s=one * np.nan,
            throughput_tok_per_s=one * self.throughput_tok_per_s,
            stable=np.array([self.utilisation < 1.0]),
            reason_code=np.zeros(1, dtype=np.int8),
        )


def _lengths(rng: np.random.Generator, mean: float, cv: float, size: int) -> np.ndarray:
    if cv <= 0:
        return np.full(size, max(1, round(mean)), dtype=np.int64)
    shape = 1.0 / cv**2
    return np.maximum(1, np.rint(rng.gamma(shape, mean / shape, size))).astype(np.int64)


def simulate(
    service: ServiceModel,
    arrival_rate_per_s: float,
    osl_tokens: float,
    *,
    isl_tokens: float,
    isl_cv: float = 0.0,
    osl_cv: float = 0.0,
    policy: str = "continuous",
    chunk_tokens: int = 512,
    n_requests: int = 20_000,
    warmup_fraction: float = 0.1,
    candidate: int = 0,
    seed: int = 0,
) -> SimResult:
    """Discrete-event simulation of candidate ``candidate`` of ``service`` (see module doc).

    Poisson arrivals (seeded ``numpy.random.default_rng(seed)``); lengths fixed or gamma with
    the given CV (rounded, >= 1). Statistics use requests with arrival index in
    ``[warmup_fraction, 1 - warmup_fraction) x n_requests`` (warm-up and drain removed); time
    averages use the same window. Deterministic for a given seed.

    >>> r = simulate(ServiceModel(0.01, 0.0, 0.05, 8), 0.01, 11, isl_tokens=100, n_requests=50)
    >>> round(float(np.median(r.ttft_s)), 3), round(float(np.median(r.tpot_s)), 3)  # unloaded
    (0.05, 0.01)
    """
    if policy not in POLICIES:
        raise ValueError(f"policy: got {policy!r}, allowed {POLICIES}")
    if not (arrival_rate_per_s > 0 and math.isfinite(arrival_rate_per_s)):
        raise ValueError(f"arrival_rate_per_s: got {arrival_rate_per_s!r}, allowed > 0 and finite")
    if n_requests < 10:
        raise ValueError(f"n_requests: got {n_requests!r}, allowed >= 10")
    if not 0 <= warmup_fraction < 0.5:
        raise ValueError(f"warmup_fraction: got {warmup_fraction!r}, allowed [0, 0.5)")
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens: got {chunk_tokens!r}, allowed >= 1")
    if not 0 <= candidate < service.n:
        raise ValueError(f"candidate: got {candidate!r}, allowed 0..{service.n - 1}")
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1.0 / arrival_rate_per_s, n_requests))
    isl = _lengths(rng, isl_tokens, isl_cv, n_requests)
    osl = _lengths(rng, osl_tokens, osl_cv, n_requests)
    # each prompt's prefill scales with its length by the prefill's elasticity (1: linear)
    elast = float(service.prefill_elasticity[candidate])
    pre_i = float(service.prefill_s[candidate]) * (isl / float(isl_tokens)) ** elast
    m_float = float(service.max_running[candidate])
    m_slots = _MAX_INT_SLOTS if not math.isfinite(m_float) else int(m_float)

    cache: dict[int, float] = {}

    def step(b: int) -> float:
        v = cache.get(b)
        if v is None:
            v = float(service.decode_step_s(np.full(service.n, float(b)))[candidate])
            cache[b] = v
        return v

    ttft = np.full(n_requests, np.nan)
    e2e = np.full(n_requests, np.nan)
    i0 = int(warmup_fraction * n_requests)
    i1 = n_requests - i0 - 1
    t0, t1 = float(arr[i0]), float(arr[i1])
    area = 0.0

    def occupy(t_start: float, dur: float, count: int) -> None:
        nonlocal area
        lo, hi = max(t_start, t0), min(t_start + dur, t1)
        if hi > lo:
            area += count * (hi - lo)

    gaps: list[float] = []
    weights: list[int] = []
    last_token_t = [0.0]

    def gap(t_end: float, seqs: int) -> None:
        """A decode iteration ended at t_end: ``seqs`` sequences that had a token at the
        previous iteration's end waited t_end minus it (prefills in between included)."""
        if seqs > 0 and t0 <= last_token_t[0] and t_end <= t1:
            gaps.append(t_end - last_token_t[0])
            weights.append(seqs)
        last_token_t[0] = t_end

    waiting: deque[int] = deque()
    t = 0.0
    nxt = 0
    done = 0
    if policy == "static":
        while done < n_requests:
            while nxt < n_requests and arr[nxt] <= t:
                waiting.append(nxt)
                nxt += 1
            if not waiting:
                t = float(arr[nxt])
                continue
            k = min(len(waiting), m_slots)
            idx = [waiting.popleft() for _ in range(k)]
            dur_p = float(pre_i[idx].sum())
            occupy(t, dur_p, 0)
            t += dur_p
            st = step(k)
            longest = int(osl[idx].max())
            for j in idx:
                ttft[j] = t - arr[j]
                e2e[j] = ttft[j] + (osl[j] - 1) * st
            occupy(t, (longest - 1) * st, k)
            t += (longest - 1) * st
            done += k
    else:
        running = 0
        g = 0  # decode steps run so far
        heap: list[tuple[int, int]] = []
        prefill_q: deque[list[int]] = deque()  # chunked: [request, prompt tokens left]
        chunked = policy == "chunked"
        while done < n_requests:
            while nxt < n_requests and arr[nxt] <= t:
                waiting.append(nxt)
                nxt += 1
            if running == 0 and not waiting and not prefill_q:
                t = float(arr[nxt])
                continue
            if not chunked:
                k = min(len(waiting), m_slots - running)
                k_new = 0  # admitted now: their first gap starts at their first token
                if k > 0:
                    idx = [waiting.popleft() for _ in range(k)]
                    dur = float(pre_i[idx].sum())
                    occupy(t, dur, running)
                    t += dur
                    for j in idx:
                        ttft[j] = t - arr[j]
                        if osl[j] <= 1:
                            e2e[j] = ttft[j]
                            done += 1
                        else:
                            heapq.heappush(heap, (g + int(osl[j]) - 1, j))
                            running += 1
                            k_new += 1
                if running > 0:
                    dur = step(running)
                    occupy(t, dur, running)
                    t += dur
                    gap(t, running - k_new)
                    g += 1
                    while heap and heap[0][0] == g:
                        _, j = heapq.heappop(heap)
                        e2e[j] = t - arr[j]
                        running -= 1
                        done += 1
            else:
                while waiting and running + len(prefill_q) < m_slots:
                    j = waiting.popleft()
                    prefill_q.append([j, int(isl[j])])
                budget = chunk_tokens
                chunk_s = 0.0
                completed: list[int] = []
                for entry in prefill_q:
                    if budget <= 0:
                        break
                    j, left = entry
                    take = min(budget, left)
                    entry[1] = left - take
                    budget -= take
                    chunk_s += take * pre_i[j] / isl[j]
                    if entry[1] == 0:
                        completed.append(j)
                for _ in completed:
                    prefill_q.popleft()
                decoding = running
                dur = (step(decoding) if decoding > 0 else 0.0) + chunk_s
                occupy(t, dur, decoding)
                t += dur
                if decoding > 0:
                    gap(t, decoding)
                    g += 1
                    while heap and heap[0][0] == g:
                        _, j = heapq.heappop(heap)
                        e2e[j] = t - arr[j]
                        running -= 1
                        done += 1
                for j in completed:
                    ttft[j] = t - arr[j]
                    if osl[j] <= 1:
                        e2e[j] = ttft[j]
                        done += 1
                    else:
                        heapq.heappush(heap, (g + int(osl[j]) - 1, j))
                        running += 1

    keep = slice(i0, i1)
    # the request's front-end delay runs beside the server: it shifts TTFT and E2E only
    delay = float(service.request_delay_s[candidate])
    ttft_k, e2e_k, osl_k = ttft[keep] + delay, e2e[keep] + delay, osl[keep]
    multi = osl_k > 1
    tpot_k = (e2e_k[multi] - ttft_k[multi]) / (osl_k[multi] - 1)
    window = max(t1 - t0, 1e-300)
    rho = float(utilisation(service, arrival_rate_per_s, osl_tokens)[candidate])
    return SimResult(
        ttft_s=ttft_k,
        tpot_s=tpot_k,
        e2e_s=e2e_k,
        running_mean=area / window,
        throughput_tok_per_s=float(osl_k.sum()) / window,
        utilisation=rho,
        itl_gap_s=np.array(gaps),
        itl_weight=np.array(weights, dtype=float),
    )

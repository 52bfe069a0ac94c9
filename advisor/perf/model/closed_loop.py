"""Closed loop (N clients, think time Z): the throughput X with X x (Z + E2E_mean(X)) = N.

A benchmark run with ``--max-concurrency N`` (vLLM ``bench serve``, SGLang ``bench_serving``)
and a recommendation for N concurrent users are both closed loops: each client sends its next
request Z seconds after the last one finishes (Z = 0 for a benchmark client; a person reads
the answer first), so by the interactive response-time law X = N / (Z + E2E_mean(X))
(physics/queueing/closed_loop.py). The latency is then the queueing model's
(:func:`advisor.physics.queueing.model.latency_under_load`) at that X.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import LoadResult
from advisor.physics.queueing.service import ServiceModel


def closed_loop_load(
    service: ServiceModel,
    users: float | np.ndarray,
    osl_tokens: float | np.ndarray,
    load_kw: dict,
    *,
    dp: np.ndarray | None = None,
    subset: Callable[[ServiceModel, np.ndarray], ServiceModel] | None = None,
    think_time_s: float = 0.0,
) -> tuple[LoadResult, np.ndarray]:
    """Latency per replica at the closed-loop throughput, and that total throughput (req/s).

    ``dp`` replicas per candidate share the ``users`` (default 1); ``load_kw`` are the
    keyword arguments of ``latency_under_load`` (isl_tokens, isl_cv, osl_cv, policy...).
    ``users``, ``osl_tokens`` and the ``load_kw`` values may be scalars or arrays ``[n]`` (one
    per candidate). ``subset(service, rows)`` returns the ServiceModel of candidates ``rows``;
    it may be left out for a one-candidate ``service``. ``think_time_s``: each user's pause Z
    between an answer and the next request. The bound on X is users / (Z + unloaded E2E),
    capped just below the candidate's capacity.
    """
    n = service.n
    dp = np.ones(n) if dp is None else dp
    if subset is None and n != 1:
        raise ValueError(f"closed_loop_load: subset is needed for {n} candidates")
    # the root finding reads only the mean E2E and stability: the inter-token quantiles (a
    # 48-step bisection per quantile) are left to the last evaluation (issue 38: 70% of the
    # Speculative page's rerun was ITL quantiles of rates the solver then discarded)
    solve_kw = {**load_kw, "with_itl": False}
    probe = latency_under_load(service, np.full(dp.size, 1e-9), osl_tokens, **solve_kw)
    with np.errstate(divide="ignore"):  # e2e 0 (or inf when unstable): the capacity bounds it
        hi = np.minimum(
            users / (think_time_s + probe.e2e.mean_s), probe.capacity_req_per_s * dp * 0.999
        )

    def part(v, rows: np.ndarray):  # a per-candidate array restricted to ``rows``
        return np.asarray(v)[rows] if np.ndim(v) == 1 and np.size(v) == n else v

    def evaluate(x: np.ndarray, rows: np.ndarray) -> LoadResult:
        sub = service if subset is None else subset(service, rows)
        kw = {k: part(v, rows) for k, v in solve_kw.items()}
        return latency_under_load(sub, x / dp[rows], part(osl_tokens, rows), **kw)

    x = closed_loop_rate(evaluate, users, hi, probe.e2e.mean_s, think_time_s)
    return latency_under_load(service, x / dp, osl_tokens, **load_kw), x


def closed_loop_rate(evaluate, users: float | np.ndarray, hi: np.ndarray, e2e0_s: np.ndarray,
                     think_time_s: float = 0.0, tol: float = 1e-4) -> np.ndarray:  # fmt: skip
    """Throughput X with X x (Z + E2E_mean(X)) = users (interactive response-time law).

    X = N / (Z + R(X)), R = E2E_mean at the total rate X, Z = ``think_time_s`` (0: Little's law
    on the requests in flight). Source: Lazowska et al., "Quantitative System Performance", ch. 3.

    ``evaluate(X, rows)`` returns the LoadResult of candidates ``rows`` at total rates X;
    ``hi`` is an upper bound per candidate (users / unloaded E2E ``e2e0_s``, capped below
    saturation). Root of h(y) = log(X (Z + E2E(X)) / users), y = log X: nearly linear (slope 1 at
    light load, the queueing growth compressed by the log), bracketed in [hi x 1e-4, hi]
    and found by the Illinois variant of regula falsi (Dowell and Jarratt 1971: never loses
    the bracket). Only unconverged candidates are re-evaluated. Stops at a bracket of ``tol``
    in log X (the 16 bisection steps used before reached 1.4e-4) or |h| < tol. Returns the
    bracket's lower end (a rate the candidate sustains), or ``hi`` where h(hi) < 0.
    """
    n = hi.size

    def h_of(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        res = evaluate(x, rows)
        with np.errstate(divide="ignore"):
            u = users[rows] if np.ndim(users) else users
            return np.where(res.stable, np.log(x * (think_time_s + res.e2e.mean_s) / u), 1.0)

    all_rows = np.arange(n)
    ylo, yhi = np.log(hi * 1e-4), np.log(hi)
    glo = np.log(hi * 1e-4 * (think_time_s + e2e0_s) / users)  # at 1e-4 of the bound: unloaded
    ghi = h_of(hi, all_rows)
    beyond = ghi < 0  # the root lies past the bound: serve at the bound
    last = np.zeros(n, dtype=int)  # end that moved last (-1 low, +1 high)
    for _ in range(60):
        act = np.nonzero(~(beyond | (yhi - ylo < tol) | (np.abs(glo) < tol)
                           | (np.abs(ghi) < tol)))[0]  # fmt: skip
        if act.size == 0:
            break
        a_lo, a_hi, g_lo, g_hi = ylo[act], yhi[act], glo[act], ghi[act]
        with np.errstate(divide="ignore", invalid="ignore"):
            y = (a_lo * g_hi - a_hi * g_lo) / (g_hi - g_lo)
        y = np.where(np.isfinite(y) & (y > a_lo) & (y < a_hi), y, 0.5 * (a_lo + a_hi))
        gy = h_of(np.exp(y), act)
        left = gy < 0
        la = last[act]
        # Illinois: when the same end moves twice running, halve the other end's value
        glo[act] = np.where(left, gy, np.where(la == 1, g_lo * 0.5, g_lo))
        ghi[act] = np.where(left, np.where(la == -1, g_hi * 0.5, g_hi), gy)
        ylo[act] = np.where(left, y, a_lo)
        yhi[act] = np.where(left, a_hi, y)
        last[act] = np.where(left, -1, 1)
    # converged from above (a real, stable point): serve just below it
    from_above = (np.abs(ghi) < tol) & ~(np.abs(glo) < tol)
    y_out = np.where(from_above, np.maximum(yhi - tol, ylo), ylo)
    return np.where(beyond, hi, np.exp(y_out))

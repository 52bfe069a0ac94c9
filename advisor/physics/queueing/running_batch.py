"""Step 1 of the model: the running batch, the Little's law fixed point of the decode phase,
and the length-biased iteration a Poisson arrival lands in."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from advisor.physics.queueing.service import PiecewiseLinearStep, ServiceModel


def _running_fixed_point(
    service: ServiceModel,
    a: np.ndarray,
    e: np.ndarray,
    max_running: np.ndarray,
    step_m: np.ndarray | None = None,
    a_step: np.ndarray | None = None,
) -> np.ndarray:
    """Smallest n >= 0 with n = a x step(min(M, 1 + n)) + e (Little's law for the decode phase).

    ``a`` = arrival rate x (decode steps' wall-time multiplier), ``e`` = arrival rate x the
    batch-independent extra decode time. Closed form for the linear step (the right side is
    convex piecewise linear in n, so the smallest root is the largest of the pieces' roots);
    exact per segment for a :class:`PiecewiseLinearStep`; vectorised bisection for any other
    callable step. ``step_m`` (step(M), M = 1e9 if unlimited) and ``a_step`` (``a`` times a
    tabulated step's table): what the caller's outer passes share, computed here if absent.
    """
    if step_m is None:
        step_m = service.decode_step_s(np.where(np.isfinite(max_running), max_running, 1e9))
    capped = np.minimum(a * step_m + e, max_running)  # value when the tagged batch is the full M
    if service.decode_step_fn is None:
        base, per, comp = (
            service.decode_step_base_s,
            service.decode_step_per_seq_s,
            service.compute_per_seq_s,
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            b1 = np.where(a * per < 1.0, (a * (base + per) + e) / (1.0 - a * per), np.inf)
            b2 = np.where(a * comp < 1.0, (a * comp + e) / (1.0 - a * comp), np.inf)
        n_unc = np.maximum(b1, b2)
    elif isinstance(service.decode_step_fn, PiecewiseLinearStep):
        n_unc = service.decode_step_fn.smallest_fixed_point(
            a, e, np.where(np.isfinite(max_running), max_running, 1e9), a_step
        )
    else:
        lo = np.zeros_like(a)
        hi = np.where(np.isfinite(max_running), max_running, 1e9)
        g_hi = a * service.decode_step_s(1.0 + hi) + e - hi  # > 0: uncapped root beyond M
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            g = a * service.decode_step_s(1.0 + mid) + e - mid
            lo = np.where(g > 0, mid, lo)
            hi = np.where(g > 0, hi, mid)
        n_unc = np.where(g_hi > 0, np.inf, hi)
    return np.where(1.0 + n_unc <= max_running, n_unc, capped)


def decode_backlog_gains(
    rho_prefill: np.ndarray, decode_steps: np.ndarray, policy: str
) -> tuple[np.ndarray, np.ndarray]:
    """Weights of the decode step and of the own prefill batch in a request's decode time.

    T_d = h step + g E[Q0], g = rho_p (1 - rho_p^(N_d - 1)) / (1 - rho_p) (continuous; 0 when
    chunked or static), h = max(N_d - rho_p (1 + g), 0) / (1 - rho_p) (0 when N_d < 1), with
    rho_p = arrival rate x prefill time (< 1) and N_d = osl - 1 decode steps.

    The iteration after the own prefill batch Q0 prefills the arrivals of the one before, so
    E[L_j] = D + rho_p E[L_(j-1)] relaxes geometrically from Q0 + D to D / (1 - rho_p); summing
    the N_d steps gives h and g. Chunked prefill spreads the backlog in small pieces: g = 0.
    (Until 2026-11 the code had (1 - rho_p)^(N_d - 1) in place of rho_p^(N_d - 1): equal for
    long outputs, but for osl = 4 at rho 0.85 the mean TPOT came out 3x the simulation's.)

    Source: the stationary recursion of iteration lengths under continuous batching (Orca, Yu
    et al. 2022 OSDI, iteration-level scheduling); geometric series.

    Hand check, rho_p = 0.2, N_d = 3: g = 0.2 (1 - 0.2^2) / 0.8 = 0.24,
    h = (3 - 0.2 x 1.24) / 0.8 = 3.44.

    >>> g, h = decode_backlog_gains(np.array([0.2]), np.array([3.0]), "continuous")
    >>> round(float(g[0]), 6), round(float(h[0]), 6)
    (0.24, 3.44)
    """
    rho = rho_prefill
    if policy == "continuous":
        g = np.where(
            decode_steps >= 1.0,
            rho * (1.0 - rho ** np.maximum(decode_steps - 1.0, 0.0)) / (1.0 - rho),
            0.0,
        )
    else:
        g = np.zeros(rho.shape)
    h = np.maximum(decode_steps - rho * (1.0 + g), 0.0) / (1.0 - rho)
    return g, np.where(decode_steps >= 1.0, h, 0.0)


class DecodePhase(NamedTuple):
    """The running batch at the fixed point, arrays ``[n]`` (see :func:`running_batch_fixed_point`).

    * ``running_seqs`` -- mean number of other sequences in decode seen by a decoding request.
    * ``decode_time_s`` -- mean decode time of a request (all its N_d steps, stalls included).
    * ``tpot_mean_s`` -- decode_time_s / N_d (0 when N_d = 0).
    * ``step_slope_s`` -- step(b + 1) - step(b) at the tagged batch b = min(M, 1 + n).
    * ``p_idle`` -- probability an arrival finds the server empty.
    * ``busy_decode_s`` -- decode time of an iteration, averaged over busy iterations.
    * ``lb1_s``, ``lb2_s2`` -- E[L^2]/E[L] and E[L^3]/E[L] of the length-biased iteration.
    * ``own_prefill_var_s2`` -- variance of the own prefill batch Q0.
    """

    running_seqs: np.ndarray
    decode_time_s: np.ndarray
    tpot_mean_s: np.ndarray
    step_slope_s: np.ndarray
    p_idle: np.ndarray
    busy_decode_s: np.ndarray
    lb1_s: np.ndarray
    lb2_s2: np.ndarray
    own_prefill_var_s2: np.ndarray


def running_batch_fixed_point(
    service: ServiceModel,
    arrival_rate_per_s: np.ndarray,
    prefill_m2_s2: np.ndarray,
    decode_steps: np.ndarray,
    rho_prefill: np.ndarray,
    gain_g: np.ndarray,
    gain_h: np.ndarray,
) -> DecodePhase:
    """Mean running batch and decode time of a request (Little's law fixed point).

    n = lambda (h step(min(M, 1 + n)) + g E[Q0]), E[Q0] = P (1 + (1 - p0) lambda E[L^2]/E[L]),
    p0 = exp(-(n + rho_p)); T_d = h step(min(M, 1 + n)) + g E[Q0], TPOT = T_d / N_d.

    A decoding request sees the others as Poisson(n) (PASTA; the occupancy of an
    infinite-server system is Poisson), so its step is step(min(M, 1 + n)); Little's law ties
    n to the decode time. Four outer passes on E[Q0] (the own prefill batch) converge.

    Source: Little (1961), Operations Research 9(3); Wolff (1982) for PASTA; Kleinrock,
    Queueing Systems vol. 1 (1975) for the M/G/infinity occupancy.

    Hand check without prefill (P = 0: g = 0, h = N_d = 99), step(b) = 10 ms + 1 ms x b,
    lambda = 2 req/s: n = 198 (0.011 + 0.001 n) -> n = 2.178 / 0.802 = 2.71571;
    TPOT = step(3.71571) = 13.7157 ms.

    >>> sm = ServiceModel(0.010, 0.001, 0.0, 256)
    >>> one = np.ones(1)
    >>> d = running_batch_fixed_point(sm, 2 * one, 0 * one, 99 * one, 0 * one, 0 * one, 99 * one)
    >>> round(float(d.running_seqs[0]), 5), round(float(d.tpot_mean_s[0]) * 1e3, 4)
    (2.71571, 13.7157)
    """
    max_running = service.max_running
    prefill_s, step = service.prefill_s, service.decode_step_s
    rho_p = rho_prefill
    rho_safe = np.minimum(rho_p, 0.999999)
    eq0 = prefill_s.copy()
    # what the four passes share: a, step(M) and, for a tabulated step, a x its table
    a = arrival_rate_per_s * gain_h
    step_m = step(np.where(np.isfinite(max_running), max_running, 1e9))
    fn = service.decode_step_fn
    a_step = a[:, None] * fn.step_s if isinstance(fn, PiecewiseLinearStep) else None
    for _ in range(4):  # outer fixed point on E[Q0] (own prefill batch), converges fast
        nrun = _running_fixed_point(
            service, a, arrival_rate_per_s * gain_g * eq0, max_running, step_m, a_step
        )
        nrun = np.where(np.isfinite(nrun), nrun, 0.0)
        b_tag = np.minimum(max_running, 1.0 + nrun)
        step_tag = step(b_tag)
        # probability an arrival finds the system empty (M/G/inf) / decode non-empty
        p_idle = np.exp(-(nrun + rho_p))
        q_dec = -np.expm1(-nrun)
        b_busy = np.minimum(
            max_running, np.maximum(1.0, np.where(q_dec > 0, nrun / np.maximum(q_dec, 1e-300), 1.0))
        )
        # decode part of a busy iteration
        step_busy = step(b_busy)
        d_busy = step_busy * q_dec / np.maximum(1.0 - p_idle, 1e-300)
        biased_iteration_s, biased_iteration_s2 = length_biased_iteration_moments(
            arrival_rate_per_s,
            prefill_m2_s2,
            d_busy / (1.0 - rho_safe),
            d_busy,
            rho_safe,
            1.0 - p_idle,
        )
        eq0 = prefill_s * (1.0 + (1.0 - p_idle) * arrival_rate_per_s * biased_iteration_s)
    t_dec = gain_h * step_tag + gain_g * eq0
    return DecodePhase(
        running_seqs=nrun,
        decode_time_s=t_dec,
        tpot_mean_s=np.where(decode_steps > 0, t_dec / np.maximum(decode_steps, 1.0), 0.0),
        step_slope_s=step(b_tag + 1.0) - step_tag,
        p_idle=p_idle,
        busy_decode_s=step_busy * q_dec,
        lb1_s=biased_iteration_s,
        lb2_s2=biased_iteration_s2,
        own_prefill_var_s2=(1.0 - p_idle)
        * prefill_s**2
        * (
            arrival_rate_per_s * biased_iteration_s
            + arrival_rate_per_s**2 * np.maximum(biased_iteration_s2 - biased_iteration_s**2, 0.0)
        ),
    )


def length_biased_iteration_moments(
    arrival_rate_per_s, prefill_second_moment_s2, mean_iteration_s, decode_step_s, rho_p, busy=None
):
    """E[L^2]/E[L] and E[L^3]/E[L] of the iteration a Poisson arrival lands in (length-biased).

    Iterations L = D + prefills of the Poisson(lambda L) arrivals during the previous iteration:
    E[L] = D / (1 - rho_p), Var[L] = lambda E[L] E[P^2] / (1 - rho_p^2) (stationary recursion);
    the prefill part Y = L - D gets a gamma fit for its third moment,
    E[Y^3] = E[Y^2] (E[Y] + 2 Var[Y] / E[Y]). Arguments: lambda
    (``arrival_rate_per_s``), E[P^2] (``prefill_second_moment_s2``), E[L]
    (``mean_iteration_s``), D (``decode_step_s``), rho_p (the prefill utilisation lambda E[P]).

    Source: renewal theory, length-biased sampling (Kleinrock vol. 1, sec. 5.2, residual life);
    gamma third moment from Johnson, Kotz and Balakrishnan vol. 1, ch. 17.

    Hand check, no prefill (lambda = 0): every iteration is D = 20 ms, so E[L^2]/E[L] = D and
    E[L^3]/E[L] = D^2.

    >>> m1, m2 = length_biased_iteration_moments(0.0, 0.0, 0.02, 0.02, 0.0)
    >>> round(float(m1), 6), round(float(m2), 8)
    (0.02, 0.0004)
    """
    var_len = arrival_rate_per_s * mean_iteration_s * prefill_second_moment_s2 / (1.0 - rho_p**2)
    m_y = mean_iteration_s - decode_step_s
    ey2 = var_len + m_y**2
    ey3 = np.where(m_y > 0, ey2 * (m_y + 2.0 * var_len / np.maximum(m_y, 1e-300)), 0.0)
    el2 = decode_step_s**2 + 2.0 * decode_step_s * m_y + ey2
    el3 = decode_step_s**3 + 3.0 * decode_step_s**2 * m_y + 3.0 * decode_step_s * ey2 + ey3
    safe = np.maximum(mean_iteration_s, 1e-300)
    biased_iteration_s = np.where(mean_iteration_s > 0, el2 / safe, 0.0)
    biased_iteration_s2 = np.where(mean_iteration_s > 0, el3 / safe, 0.0)
    if busy is None:
        return biased_iteration_s, biased_iteration_s2
    # No decode work (D = 0: a prefill-only server, osl = 1): the iterations are the prefill
    # batches alone, and zero-length "iterations" tile the idle time. The D -> 0+ limit of
    # the moments above is a time average over ALL time (E[L^2]/E[L] -> c, E[L^3]/E[L] ->
    # 2 c^2 / rho_p, c = lambda E[P^2] / (1 - rho_p^2)); the caller weights by the probability
    # of finding the server busy, so condition on it: divide by ``busy``. (Setting D = 0
    # directly would lose all queueing.) Then the mean wait is c (1/2 + rho_p): M/D/1 check
    # at rho_p 0.3 (P = 50 ms): 13.2 ms vs 13.1 ms simulated (tests/test_search.py).
    c = arrival_rate_per_s * prefill_second_moment_s2 / (1.0 - rho_p**2)
    only_prefill = (mean_iteration_s <= 0) & (rho_p > 0) & (busy > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        biased_limit_s = c / busy
        biased_limit_s2 = 2.0 * c**2 / (rho_p * busy)
    return np.where(only_prefill, biased_limit_s, biased_iteration_s), np.where(
        only_prefill, biased_limit_s2, biased_iteration_s2
    )

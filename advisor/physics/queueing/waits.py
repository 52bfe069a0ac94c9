"""Steps 2 and 3 of the model: the wait for a free KV slot (Erlang C, scaled by the occupancy's
peakedness) and the wait before a request's own prefill under continuous batching and chunked
prefill (static batches: ``static_batch``)."""

from __future__ import annotations

import numpy as np

from advisor.physics.queueing.classic_queues import erlang_c, pollaczek_khinchine_wait_moments
from advisor.physics.queueing.service import ArrayLike


def occupancy_peakedness(
    arrival_rate_per_s: np.ndarray, gain_h: np.ndarray, step_slope_s: np.ndarray
) -> np.ndarray:
    """Peakedness of the decode occupancy relative to Poisson: z = 1 / (1 - kappa)^2.

    kappa = clip(lambda h (step(b + 1) - step(b)), 0, 0.9): one more running sequence slows
    every step, which keeps everyone longer (dn/dn = kappa); a fluctuation of n is amplified
    by 1 / (1 - kappa), its variance by z.

    Source: first-order feedback (the variance gain of x = kappa x + noise); peakedness as in
    Hayward's approximation (Fredericks 1980, Bell System Technical Journal 59(3)).

    Hand check: lambda = 2 req/s, h = 10 steps, slope 10 ms: kappa = 0.2, z = 1 / 0.64 = 1.5625.

    >>> round(float(occupancy_peakedness(np.array([2.0]), np.array([10.0]), np.array([0.01]))[0]), 9)
    1.5625
    """
    kappa = np.clip(arrival_rate_per_s * gain_h * step_slope_s, 0.0, 0.9)
    return 1.0 / (1.0 - kappa) ** 2


def slot_wait_moments(
    arrival_rate_per_s: np.ndarray,
    occupancy: np.ndarray,
    max_running: np.ndarray,
    z_peak: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wait for a free KV slot: (probability of waiting, mean s, variance s^2).

    C = ErlangC(M / z, A / z) (Hayward's scaling; non-integer M / z interpolated linearly
    between the neighbouring server counts), conditional wait exponential of mean
    w = A / (lambda (M - A)); E[W] = C w, Var[W] = 2 C w^2 - E[W]^2. A = occupancy (mean
    sequences holding a slot). No wait when M is unlimited.

    Source: Erlang C and the M/M/c conditional wait 1 / (c mu - lambda) (Kleinrock vol. 1,
    eqs. 3.40-3.41); Hayward's approximation (Fredericks 1980, BSTJ 59(3)).

    Hand check, M = 4, A = 2, z = 1, lambda = 1 req/s: C = 0.1739 (textbook M/M/4),
    w = 2 / (1 x 2) = 1 s, E[W] = 0.1739 s.

    >>> one = np.ones(1)
    >>> c, w, v = slot_wait_moments(one, 2 * one, 4 * one, one)
    >>> round(float(c[0]), 4), round(float(w[0]), 4)
    (0.1739, 0.1739)
    """
    occ = occupancy
    c_eff = np.where(np.isfinite(max_running), np.maximum(max_running / z_peak, 1.0), 1.0)
    c_lo = np.floor(c_eff)
    frac = c_eff - c_lo
    c_wait = (1.0 - frac) * erlang_c(c_lo, occ / z_peak) + frac * erlang_c(c_lo + 1.0, occ / z_peak)
    c_wait = np.where(np.isfinite(max_running), c_wait, 0.0)
    w_cond = np.where(
        arrival_rate_per_s > 0,
        occ / (arrival_rate_per_s * np.maximum(max_running - occ, 1e-12)),
        0.0,
    )
    w_cond = np.where(np.isfinite(max_running), w_cond, 0.0)
    ew = c_wait * w_cond
    return c_wait, ew, 2.0 * c_wait * w_cond**2 - ew**2


def continuous_wait_moments(
    arrival_rate_per_s,
    prefill_second_moment_s2,
    biased_iteration_s,
    biased_iteration_s2,
    rho_p,
    p_idle,
):
    """Continuous batching: wait before the own prefill, (mean s, variance s^2, P(no wait)).

    With probability p_idle the arrival finds the server idle (no wait). Otherwise it lands in
    a length-biased iteration L_b, waits its uniform residual U L_b, then shares a batched
    prefill with the Poisson(lambda L_b) others that arrived during it: X = U L_b + their
    prefills, E[X | busy] = E[L^2]/E[L] (1/2 + rho_p),
    E[X^2 | busy] = E[L^3]/E[L] (1/3 + rho_p + rho_p^2) + lambda E[L^2]/E[L] E[P^2].

    Source: renewal theory, residual life E[L^2] / 2E[L] (Kleinrock vol. 1, sec. 5.2, the
    Pollaczek-Khinchine residual); compound Poisson moments of the co-batched prefills.

    Hand check, iterations of a fixed 20 ms (E[L^2]/E[L] = 0.02 s, E[L^3]/E[L] = 4e-4 s^2), no
    prefill, busy half the time: E[X] = 0.5 x 0.02 x 0.5 = 5 ms.

    >>> ex, vx, p0 = continuous_wait_moments(0.0, 0.0, 0.02, 4e-4, 0.0, 0.5)
    >>> round(float(ex) * 1e3, 6), float(p0)
    (5.0, 0.5)
    """
    busy = 1.0 - p_idle
    mx_b = biased_iteration_s * (0.5 + rho_p)
    ex2_b = (
        biased_iteration_s2 * (1.0 / 3.0 + rho_p + rho_p**2)
        + arrival_rate_per_s * biased_iteration_s * prefill_second_moment_s2
    )
    ex = busy * mx_b
    ex2 = busy * ex2_b
    return ex, np.maximum(ex2 - ex**2, 0.0), p_idle


def chunked_wait_moments(
    arrival_rate_per_s: np.ndarray,
    prefill_s: np.ndarray,
    isl_tokens: np.ndarray,
    chunk_tokens: np.ndarray,
    isl_cv: np.ndarray,
    busy_decode_s: np.ndarray,
    running_seqs: np.ndarray,
    prefill_elasticity: ArrayLike = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunked prefill: wait before the first token beyond the prefill itself.

    Returns (mean s, variance s^2, P(no wait), rho of the prompt pipeline). The prompt pipeline
    is an M/G/1 queue with service S = P + (isl / chunk) D (each chunk also runs a decode step
    D); its wait has E[W] = lambda E[S^2] / (2 (1 - rho)) (Pollaczek-Khinchine) and E[W^2] from
    Takacs; the arrival also waits half an iteration of residual and its own ceil(isl / chunk)
    decode steps: X = W + L / 2 + (ceil(isl / chunk) D). Gamma-distributed prompt lengths give
    E[S^2] = S^2 (1 + cv_S^2), E[S^3] = S^3 (1 + cv_S^2)(1 + 2 cv_S^2), where S varies with the
    prompt through e P + (isl / chunk) D (e: the prefill's length elasticity), so
    cv_S = cv (e P + (isl / chunk) D) / S.

    Source: Sarathi-Serve (Agrawal et al. 2024 OSDI) for the policy; Kleinrock vol. 1,
    eqs. 5.105 and 5.114 for the M/G/1 wait moments.

    Hand check, lambda = 2 req/s, P = 100 ms, isl = chunk = 512, D = 50 ms, fixed lengths, no
    one decoding: S = 0.15 s, rho = 0.3, E[W] = 2 x 0.0225 / 1.4 = 32.14 ms, iteration
    0.05 + 0.3 x 0.1 = 0.08 s, E[X] = 32.14 + 40 + 50 = 122.14 ms, P(no wait) = 0.7.

    >>> one = np.ones(1)
    >>> ex, vx, p0, rho = chunked_wait_moments(
    ...     2 * one, 0.1 * one, 512 * one, 512 * one, 0 * one, 0.05 * one, 0 * one
    ... )
    >>> round(float(ex[0]) * 1e3, 2), round(float(p0[0]), 6), round(float(rho[0]), 6)
    (122.14, 0.7, 0.3)
    """
    isl, chunk, cv_i = isl_tokens, chunk_tokens, isl_cv
    d_dec = busy_decode_s
    s_util = prefill_s + isl / chunk * d_dec
    rho_prefill = arrival_rate_per_s * s_util
    s_own = prefill_s + np.ceil(isl / chunk) * d_dec
    with np.errstate(divide="ignore", invalid="ignore"):
        cv_s = np.where(
            s_util > 0, cv_i * (prefill_elasticity * prefill_s + isl / chunk * d_dec) / s_util, 0.0
        )
    es2 = s_util**2 * (1.0 + cv_s**2)
    es3 = s_util**3 * (1.0 + cv_s**2) * (1.0 + 2.0 * cv_s**2)
    wq, wq2 = pollaczek_khinchine_wait_moments(arrival_rate_per_s, s_util, es2, es3)
    wq = np.where(np.isfinite(wq), wq, 0.0)
    wq2 = np.where(np.isfinite(wq2), wq2, 0.0)
    # residual of the iteration in progress (decode step + a chunk when prompts queue)
    it_len = d_dec + np.minimum(rho_prefill, 1.0) * prefill_s * np.minimum(chunk, isl) / isl
    ex = wq + 0.5 * it_len + (s_own - prefill_s)
    vx = wq2 - wq**2 + it_len**2 / 12.0 + (cv_i * (s_own - prefill_s)) ** 2
    p_zero = (1.0 - np.minimum(rho_prefill, 1.0)) * np.exp(-running_seqs)
    return ex, vx, p_zero, rho_prefill

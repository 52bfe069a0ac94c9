"""Static (request-level) batching as a gated batch-service queue: the wait before the first
token, the TPOT and the running batch when each batch runs to its end before the next is
taken."""

from __future__ import annotations

import numpy as np

from advisor.physics.queueing.service import ServiceModel
from advisor.physics.queueing.waits import continuous_wait_moments


def static_batch_terms(
    service: ServiceModel,
    arrival_rate_per_s,
    prefill_s,
    prefill_second_moment_s2,
    decode_steps,
    max_running,
):
    """Static batching: (wait mean s, wait variance s^2, P(no wait), TPOT mean s, TPOT
    variance s^2, mean running sequences).

    The busy batch size solves k = m / (1 - exp(-m)), m = lambda S(k), S(k) = k P + N_d step(k)
    (gated batch service: a batch is the arrivals during the previous one, conditioned on
    being non-empty); idle probability pi0 / (pi0 + lambda S), pi0 = exp(-lambda S); the wait
    is the length-biased residual of the batch in progress plus a batched prefill with the
    Poisson(lambda L_b) requests that arrived during it (as :func:`continuous_wait_moments`).

    Source: gated batch-service queues (Kleinrock vol. 1, sec. 5.x bulk service; Deb and
    Serfozo 1973); renewal residual as above.

    Hand check, step 10 ms flat, P = 0, N_d = 10 (S = 0.1 s for any k), lambda = 10 req/s:
    m = 1, k = 1 / (1 - e^-1) = 1.58198, idle = e^-1 / (e^-1 + 1) = 0.26894, wait =
    (1 - 0.26894) x 0.1 / 2 = 36.553 ms.

    >>> sm = ServiceModel(0.010, 0.0, 0.0, 64)
    >>> one = np.ones(1)
    >>> ex, vx, idle, tau, vt, run = static_batch_terms(sm, 10 * one, 0 * one, 0 * one, 10 * one, 64 * one)
    >>> round(float(ex[0]) * 1e3, 3), round(float(idle[0]), 5), round(float(tau[0]) * 1e3, 3)
    (36.553, 0.26894, 10.0)
    """
    step = service.decode_step_s

    def batch_s(k):
        return k * prefill_s + decode_steps * step(k)

    k = np.ones_like(arrival_rate_per_s)
    for _ in range(
        80
    ):  # monotone fixed-point iteration from 1: k = m / (1 - e^-m), m = lambda S(k)
        m = arrival_rate_per_s * batch_s(k)
        k_new = np.where(m > 1e-12, m / -np.expm1(-np.maximum(m, 1e-300)), 1.0 + 0.5 * m)
        k = np.minimum(max_running, np.maximum(1.0, k_new))
    s_k = batch_s(k)
    slope_s = prefill_s + decode_steps * (step(k + 1.0) - step(k))
    var_k = np.where(k < max_running, k, 0.0)  # batch sizes ~ Poisson, none when always full
    var_len = slope_s**2 * var_k
    pi0 = np.exp(-arrival_rate_per_s * s_k)
    # (pi0 / lambda) / (pi0 / lambda + s_k), written without the division that overflows for a
    # tiny rate
    idle = pi0 / (pi0 + arrival_rate_per_s * s_k)
    rho_p = arrival_rate_per_s * prefill_s
    # length-biased residual of the batch in progress, then a batched prefill with the
    # Poisson(lambda L_b) requests that arrived during it
    el2 = var_len + s_k**2
    el3 = el2 * (s_k + 2.0 * var_len / np.maximum(s_k, 1e-300))
    biased_iteration_s = el2 / np.maximum(s_k, 1e-300)
    biased_iteration_s2 = el3 / np.maximum(s_k, 1e-300)
    ex, vx, _ = continuous_wait_moments(
        arrival_rate_per_s,
        prefill_second_moment_s2,
        biased_iteration_s,
        biased_iteration_s2,
        rho_p,
        idle,
    )
    busy = 1.0 - idle
    k_own = np.minimum(
        max_running, 1.0 + arrival_rate_per_s * biased_iteration_s
    )  # own batch: itself + arrivals during the last batch
    tpot_busy = step(k_own)
    tau = idle * step(np.ones_like(k)) + busy * tpot_busy
    slope = step(k_own + 1.0) - tpot_busy
    var_own = busy * np.where(
        k_own < max_running, arrival_rate_per_s * biased_iteration_s, 0.0
    )  # Poisson count of co-batched requests
    var_tpot = slope**2 * var_own + idle * busy * (tpot_busy - step(np.ones_like(k))) ** 2
    # time-average number being decoded: busy x k x (decode share of the batch time)
    running = busy * k * decode_steps * step(k) / np.maximum(s_k, 1e-300)
    return ex, vx, idle, tau, var_tpot, running

"""Steps 4 and 5 of the model: the request-to-request spread of TPOT and E2E, and the
percentiles fitted to the means and variances (TTFT: prefill + a zero-inflated gamma wait; TPOT
and E2E: a gamma above their unloaded floor)."""

from __future__ import annotations

import numpy as np

from advisor.physics.queueing.distributions import gamma_quantile, gamma_quantiles
from advisor.physics.queueing.service import ArrayLike


def tpot_variance_s2(
    step_slope_s: np.ndarray,
    running_seqs: np.ndarray,
    z_peak: np.ndarray,
    rho_prefill: np.ndarray,
    arrival_rate_per_s: np.ndarray,
    decode_time_s: np.ndarray,
    prefill_m2_s2: np.ndarray,
    decode_steps: np.ndarray,
    gain_g: np.ndarray,
    own_prefill_var_s2: np.ndarray,
) -> np.ndarray:
    """Request-to-request variance of TPOT (continuous and chunked batching).

    Var = s^2 (2/3) n z / (1 - rho_p)^2 + sqrt(z) lambda T_d E[P^2] / ((1 - rho_p)^2 N_d^2)
    + g^2 Var[Q0] / N_d^2 (N_d floored at 1), with s the step slope per sequence.

    Three terms: the batch-size fluctuation averaged over the request's lifetime (for an
    M/D/infinity occupancy the lifetime average of the Poisson count has variance 2n/3),
    scaled by the peakedness z; the compound-Poisson prefill stalls during its decode time
    T_d, amplified by the arrivals they let in (busy-period argument: / (1 - rho_p)^2); the
    spread of the own prefill batch Q0 that seeds the transient.

    Source: Kleinrock vol. 1 (M/G/infinity occupancy; compound Poisson variance
    lambda T E[P^2]); busy-period scaling 1 / (1 - rho) (Kleinrock vol. 1, sec. 5.8).

    Hand check: s = 1 ms, n = 3, z = 1, rho_p = 0: 1e-6 x 2/3 x 3 = 2e-6 s^2; plus lambda = 1,
    T_d = 1 s, E[P^2] = 0.01 s^2, N_d = 10: 1 x 1 x 0.01 / 100 = 1e-4 s^2; total 1.02e-4 s^2.

    >>> one = np.ones(1)
    >>> v = tpot_variance_s2(1e-3 * one, 3 * one, one, 0 * one, one, one, 0.01 * one, 10 * one,
    ...                      0 * one, 0 * one)
    >>> round(float(v[0]), 10)
    0.000102
    """
    rho, nd1 = rho_prefill, np.maximum(decode_steps, 1.0)
    return (
        step_slope_s**2 * (2.0 / 3.0) * running_seqs * z_peak / (1.0 - rho) ** 2
        + np.sqrt(z_peak)
        * arrival_rate_per_s
        * decode_time_s
        * prefill_m2_s2
        / (1.0 - rho) ** 2
        / nd1**2
        + gain_g**2 * own_prefill_var_s2 / nd1**2
    )


def e2e_variance_s2(
    ttft_var_s2: np.ndarray,
    decode_steps: np.ndarray,
    tpot_var_s2: np.ndarray,
    ttft_decode_cov_s2: np.ndarray,
    osl_cv: np.ndarray,
    osl_tokens: np.ndarray,
    tpot_mean_s: np.ndarray,
) -> np.ndarray:
    """Variance of the end-to-end latency: Var[TTFT + N_d TPOT] with a random output length.

    Var[E2E] = Var[TTFT] + N_d^2 Var[TPOT] + 2 Cov(TTFT, T_d) + (cv_osl x osl x TPOT)^2.

    Source: variance of a sum; the last term is the spread of osl at the mean TPOT (law of
    total variance, lengths independent of the queue).

    Hand check: 1e-4 + 10^2 x 1e-6 + 0 + (0.5 x 11 x 0.01)^2 = 1e-4 + 1e-4 + 0.003025 =
    0.003225 s^2.

    >>> one = np.ones(1)
    >>> round(float(e2e_variance_s2(1e-4 * one, 10 * one, 1e-6 * one, 0 * one, 0.5 * one,
    ...                             11 * one, 0.01 * one)[0]), 9)
    0.003225
    """
    return (
        ttft_var_s2
        + decode_steps**2 * tpot_var_s2
        + 2.0 * ttft_decode_cov_s2
        + (osl_cv * osl_tokens * tpot_mean_s) ** 2
    )


def _zero_inflated_quantiles(
    mean: np.ndarray, var: np.ndarray, p_zero: np.ndarray, qs
) -> list[np.ndarray]:
    """Quantiles ``qs`` of a variable that is 0 with probability p_zero, else gamma (moments
    matched). The gamma is evaluated only where a quantile falls past the atom at 0 (each
    element on its own, so the same values as over every row)."""
    p_pos = np.clip(1.0 - p_zero, 1e-12, 1.0)
    m_pos = mean / p_pos
    v_pos = np.maximum((var + mean**2) / p_pos - m_pos**2, 0.0)
    m_pos, v_pos = np.broadcast_arrays(m_pos, v_pos)
    out = []
    for q in qs:
        q_pos = np.clip((q - (1.0 - p_pos)) / p_pos, 1e-12, 1.0 - 1e-12)
        past = ~(q <= 1.0 - p_pos)
        x = np.zeros(np.broadcast(past, m_pos, q_pos).shape)
        if past.ndim == 0 or x.ndim == 0:  # scalars: as they come
            x = np.where(past, gamma_quantile(m_pos, v_pos, q_pos), 0.0)
        elif past.any():
            past = np.broadcast_to(past, x.shape)
            rows = np.nonzero(past)
            x[rows] = gamma_quantile(
                m_pos[rows], v_pos[rows], np.broadcast_to(q_pos, x.shape)[rows]
            )
        out.append(x)
    return out


def ttft_quantile_s(
    prefill_s: np.ndarray,
    wait_mean_s: np.ndarray,
    wait_var_s2: np.ndarray,
    p_no_wait: np.ndarray,
    q: float,
    prefill_cv: ArrayLike = 0.0,
) -> np.ndarray:
    """TTFT quantile: prefill + a zero-inflated gamma wait, never below the own prefill's quantile.

    TTFT_q = max(P + x_q, P_q). x_q = 0 if q <= p0, else the gamma quantile (q - p0) / (1 - p0)
    of the positive part, whose mean and variance are W / (1 - p0) and E[W^2] / (1 - p0) -
    mean^2 (the prompt-length spread is in W's variance). P_q is the quantile of the request's
    own prefill, gamma with mean P and cv ``prefill_cv`` (the prompt lengths' cv times the
    prefill's length elasticity): TTFT >= own
    prefill, so its quantile is at least P_q. At light load (no wait in 99 % of arrivals) the
    first term alone would put the P99 at the mean prefill, whatever the prompt spread.

    Source: two-moment gamma fit (Whitt 1982, "Approximating a point process by a renewal
    process"); Wilson and Hilferty (1931) for the gamma quantile (:func:`gamma_quantile`);
    stochastic dominance for the bound.

    Hand check: P = 40 ms, wait mean 10 ms, variance 1e-4 s^2, P(no wait) 0.5: the positive
    part has mean 20 ms and E[W^2] = 2e-4 / 0.5 = 4e-4 s^2, variance 0 (a point at 20 ms), so
    P50 = 40 ms and P99 = 60 ms. With exponential prompts (cv 1) and no wait at all, the P99 is
    the prefill's: 40 ms x ln 100 = 184.2 ms (Wilson-Hilferty: 184.4 ms).

    >>> one = np.ones(1)
    >>> [round(float(ttft_quantile_s(0.04 * one, 0.01 * one, 1e-4 * one, 0.5 * one, q)[0]), 6)
    ...  for q in (0.5, 0.99)]
    [0.04, 0.06]
    >>> round(float(ttft_quantile_s(0.04 * one, 0 * one, 0 * one, one, 0.99, one)[0]) * 1e3, 1)
    184.4
    """
    return ttft_quantiles_s(prefill_s, wait_mean_s, wait_var_s2, p_no_wait, (q,), prefill_cv)[0]


def ttft_quantiles_s(
    prefill_s: np.ndarray,
    wait_mean_s: np.ndarray,
    wait_var_s2: np.ndarray,
    p_no_wait: np.ndarray,
    qs,
    prefill_cv: ArrayLike = 0.0,
    length_dist: str = "gamma",
) -> list[np.ndarray]:
    """``ttft_quantile_s`` at each quantile of ``qs`` (what they share computed once).

    ``length_dist="uniform"``: the own prefill's quantile is a uniform's of the same mean and
    cv (P_q = P + h (2q - 1), h = :func:`uniform_half_width_s`), as a benchmark's random
    prompts are drawn; "gamma" (the default) the gamma's."""
    waits = _zero_inflated_quantiles(wait_mean_s, wait_var_s2, p_no_wait, qs)
    cv = np.asarray(prefill_cv, dtype=float)
    if length_dist == "uniform":
        h = uniform_half_width_s(prefill_s, cv)
        own = [np.maximum(prefill_s + h * (2.0 * q - 1.0), 0.0) for q in qs]
    else:
        own = gamma_quantiles(prefill_s, (prefill_s * cv) ** 2, qs)
    return [np.maximum(prefill_s + w, o) for w, o in zip(waits, own, strict=True)]


def shifted_gamma_quantile_s(
    floor_s: np.ndarray, mean_s: np.ndarray, var_s2: np.ndarray, q: float
) -> np.ndarray:
    """Quantile of floor + a gamma of mean (mean - floor) and the given variance.

    x_q = floor + Gamma_q(mean - floor, var): the unloaded value is a hard lower bound (TPOT
    never beats step(1), E2E never beats the unloaded request), the gamma carries the
    queueing spread above it.

    Source: two-moment gamma fit with a shift (Johnson, Kotz and Balakrishnan vol. 1,
    ch. 17, three-parameter gamma); Wilson and Hilferty (1931) for the quantile.

    Hand check: floor 10 ms, mean 20 ms, variance 1e-4 s^2: an exponential of mean 10 ms above
    the floor, P99 = 10 + 10 ln(100) = 56.05 ms (Wilson-Hilferty: 56.1 ms).

    >>> round(float(shifted_gamma_quantile_s(0.01, 0.02, 1e-4, 0.99)) * 1e3, 1)
    56.1
    """
    return shifted_gamma_quantiles_s(floor_s, mean_s, var_s2, (q,))[0]


def shifted_gamma_quantiles_s(
    floor_s: np.ndarray, mean_s: np.ndarray, var_s2: np.ndarray, qs
) -> list[np.ndarray]:
    """``shifted_gamma_quantile_s`` at each quantile of ``qs``."""
    return [floor_s + x for x in gamma_quantiles(mean_s - floor_s, var_s2, qs)]


#: The length distributions a workload can state (``latency_under_load(length_dist=...)``):
#: "gamma", the scenario's spread as the project's simulator draws it (a two-moment gamma of the
#: whole latency then fits its tails); "uniform", a benchmark's random dataset (SGLang and vLLM
#: draw each length uniformly, ``perf.validation.client_draws.length_cv``).
LENGTH_DISTS = ("gamma", "uniform")
#: The largest cv of a uniform of positive lengths (on [0, 2m]: h = m, cv = 1 / sqrt(3)).
UNIFORM_MAX_CV = 1.0 / np.sqrt(3.0) + 1e-12

# Wilson-Hilferty's gamma is a cube of a normal: integrating over the normal on an even grid
# resolves the upper tail (P99 at z = 2.33) as finely as the middle.
_Z_NODES = np.linspace(-8.0, 8.0, 257)
_Z_WEIGHTS = np.exp(-0.5 * _Z_NODES**2) / np.exp(-0.5 * _Z_NODES**2).sum()


def uniform_half_width_s(mean_s: ArrayLike, cv: ArrayLike) -> np.ndarray:
    """Half-width of the uniform distribution with this mean and coefficient of variation.

    h = sqrt(3) cv mean (a uniform on [m - h, m + h] has standard deviation h / sqrt(3)).

    Source: moments of the uniform distribution. Hand check: lengths uniform on [1, 1000] have
    mean 500.5 and standard deviation 999 / sqrt(12), so h = 999 / 2 = 499.5 tokens.

    >>> round(float(uniform_half_width_s(500.5, 999 / (500.5 * 12**0.5))), 1)
    499.5
    """
    return np.sqrt(3.0) * np.asarray(cv, dtype=float) * np.asarray(mean_s, dtype=float)


def gamma_plus_uniform_quantiles_s(
    floor_s: np.ndarray,
    mean_s: np.ndarray,
    var_s2: np.ndarray,
    half_width_s: np.ndarray,
    qs,
) -> list[np.ndarray]:
    """Quantiles of floor + G + U: G a gamma of mean (mean - floor) and variance var, U an
    independent uniform on [-h, h] (a random output length's decode time about its mean).

    F(x) = E_G[ clip((x - floor - G + h) / 2h, 0, 1) ]; x_q solves F(x_q) = q by bisection
    inside [floor + min G - h, floor + max G + h]. G is Wilson-Hilferty's gamma,
    G = (mean - floor) (1 - 1/(9k) + Z / sqrt(9k))^3 with Z standard normal and
    k = (mean - floor)^2 / var (the same gamma :func:`shifted_gamma_quantile_s` inverts), and
    the expectation is a sum over an even grid of Z (257 nodes on [-8, 8]). Where h = 0 these
    are :func:`shifted_gamma_quantiles_s` exactly; var = 0 gives the uniform's.

    Why not one gamma matched to the sum's two moments: a uniform's tail stops at its upper
    end. Lengths uniform on [1, L] have cv 0.577 and a P99 of 1.98 x their mean; a gamma of
    that cv puts it at 2.8 x (the E2E P99 of a benchmark's random dataset came out 1.3-1.9 x
    the measured one).

    Source: the law of total probability over G (the CDF of a sum of independent variables);
    Wilson and Hilferty (1931) for the gamma. Checked against a seeded Monte Carlo of the same
    sum in tests/test_queueing_tails.py.

    Hand check: G a point (var 0) at 10 s above a floor of 0, h = 5 s: the sum is uniform on
    [5, 15] s, P50 = 10 s, P99 = 5 + 0.99 x 10 = 14.9 s.

    >>> [round(float(x[0]), 3) for x in gamma_plus_uniform_quantiles_s(
    ...     np.zeros(1), np.full(1, 10.0), np.zeros(1), np.full(1, 5.0), (0.5, 0.99))]
    [10.0, 14.9]
    """
    floor, mean, var, h = np.broadcast_arrays(
        *(np.asarray(a, dtype=float) for a in (floor_s, mean_s, var_s2, half_width_s))
    )
    out = [np.array(x, dtype=float) for x in shifted_gamma_quantiles_s(floor, mean, var, qs)]
    mixed = (h > 0) & np.isfinite(floor + mean + var + h)
    if not mixed.any():
        return out
    floor, mean, var, h = floor[mixed], mean[mixed], var[mixed], h[mixed]
    above = np.maximum(mean - floor, 0.0)
    spread = (var > 0) & (above > 0)
    nine_k = np.where(spread, 9.0 * above**2 / np.where(spread, var, 1.0), 1.0)
    # [rows, nodes]: the gamma at the normal grid (a point where it has no spread)
    cube = 1.0 - 1.0 / nine_k[:, None] + _Z_NODES / np.sqrt(nine_k)[:, None]
    g = np.where(spread[:, None], above[:, None] * np.maximum(cube, 0.0) ** 3, above[:, None])
    base = floor[:, None] + g
    with np.errstate(over="ignore"):  # a uniform far narrower than the gamma: a step, clipped
        for q, x in zip(qs, out, strict=True):
            lo, hi = base.min(axis=-1) - h, base.max(axis=-1) + h
            for _ in range(48):  # the bracket / 2^48: far below a microsecond
                mid = 0.5 * (lo + hi)
                cdf = np.clip((mid[:, None] - base + h[:, None]) / (2.0 * h[:, None]), 0.0, 1.0)
                below = cdf @ _Z_WEIGHTS < q
                lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
            x[mixed] = 0.5 * (lo + hi)
    return out

"""The inter-token gap: plain decode steps and steps that carry a prefill (or a chunk of one),
and the percentiles of that mixture."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.physics.queueing.distributions import norm_cdf
from advisor.physics.queueing.results import QUANTILES, LatencyStats
from advisor.physics.queueing.service import ArrayLike


def prefills_per_gap(
    arrival_rate_per_s: ArrayLike, gap_s: ArrayLike, steps_per_prefill: ArrayLike
) -> np.ndarray:
    """Mean number of prompt prefills (or chunks of one) an inter-token gap carries.

        m = lambda x k x g

    lambda requests/s arrive, each prefilled in k iterations (1 when a prompt is prefilled
    whole; ceil(L / C) chunks of C tokens under chunked prefill), and a decoding request sees
    an iteration every g s (the mean inter-token gap), so lambda x k x g prefill pieces fall
    in each gap on average (Little's law on iterations).
    Source: Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
    Sarathi-Serve", OSDI 2024, section 3 ("generation stalls": decodes batched with a prefill).

    Hand check: 4 req/s, 20 ms gaps, whole prompts: 4 x 0.02 = 0.08; in 4 chunks 0.32.

    >>> [round(float(prefills_per_gap(4.0, 0.02, k)), 4) for k in (1, 4)]
    [0.08, 0.32]
    """
    m = (np.asarray(arrival_rate_per_s, dtype=float) * np.asarray(steps_per_prefill, dtype=float)
         * np.asarray(gap_s, dtype=float))  # fmt: skip
    return np.maximum(np.nan_to_num(m, nan=0.0, posinf=1e9), 0.0)


#: Most prefills one gap is modelled to carry (the Poisson count beyond it lumped there).
MAX_PREFILLS_PER_GAP = 6


def itl_quantile_s(
    plain_s: ArrayLike, plain_sd_s: ArrayLike, interruption_s: ArrayLike,
    per_gap: ArrayLike, q: float, *, chunked: bool = False,
) -> np.ndarray:  # fmt: skip
    """Quantile q of the inter-token latency (one gap between two tokens of a request).

    A gap is a plain decode step, normal with mean s and standard deviation sigma (the running
    batch changes from one iteration to the next: sigma = the step's slope x the batch's
    standard deviation), plus the n prefills it carries, p s each:

        F(t) = sum_n w_n Phi((t - s - n p) / sigma),   F(t_q) = q   (bisection: F increases)

    Prompts prefilled whole: n is Poisson with mean m (``prefills_per_gap``; arrivals are
    Poisson, and the scheduler admits every waiting prompt into the next iteration), so
    w_n = e^-m m^n / n!. Chunked prefill: an iteration carries at most one chunk (its token
    budget), w_1 = min(m, 1). So the P99 gap is an interrupted step as soon as more than 1% of
    the gaps carry a prefill, while the mean gap (the TPOT) spreads it thin.
    Source: a mixture distribution; its components as in Sarathi-Serve (Agrawal et al., OSDI
    2024, figure 1: decode iterations that carry a prefill are its "generation stalls").

    Hand check (sigma = 0, s = 20 ms, p = 100 ms): chunked, m = 0.08: 92% of gaps are 20 ms,
    so P90 is 20 ms and P99 120 ms; m = 0.005: P99 20 ms. Whole prompts, m = 0.08: w = 0.9231,
    0.0738, 0.0030: P99 120 ms (0.9231 + 0.0738 = 0.9969 >= 0.99), P99.9 220 ms.

    >>> [round(float(itl_quantile_s(0.02, 0.0, 0.1, m, q, chunked=True)), 4) for m, q in
    ...  ((0.08, 0.9), (0.08, 0.99), (0.005, 0.99))]
    [0.02, 0.12, 0.02]
    >>> [round(float(itl_quantile_s(0.02, 0.0, 0.1, 0.08, q)), 4) for q in (0.99, 0.999)]
    [0.12, 0.22]
    >>> round(float(itl_quantile_s(0.02, 0.002, 0.0, 0.0, 0.99)), 5)  # 20 ms + 2.326 x 2 ms
    0.02465
    """
    s, sd, p, m = np.broadcast_arrays(
        np.asarray(plain_s, dtype=float), np.maximum(np.asarray(plain_sd_s, dtype=float), 0.0),
        np.maximum(np.asarray(interruption_s, dtype=float), 0.0),
        np.maximum(np.asarray(per_gap, dtype=float), 0.0),
    )  # fmt: skip
    if chunked:
        f = np.minimum(m, 1.0)
        weights, top = [(0, 1.0 - f), (1, f)], 1
    else:
        top = MAX_PREFILLS_PER_GAP
        w, left, weights = np.exp(-m), np.ones_like(m), []
        for n in range(top):
            weights.append((n, w))
            left = left - w
            w = w * m / (n + 1)
        weights.append((top, np.maximum(left, 0.0)))
    tiny = 1e-12 + 1e-9 * s
    scale = np.maximum(sd, tiny)

    def cdf(t):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return sum(wn * norm_cdf((t - s - n * p) / scale) for n, wn in weights)

    lo = s - 8.0 * sd - tiny
    hi = s + top * p + 8.0 * sd + tiny
    for _ in range(48):  # the bracket / 2^48: far below a nanosecond
        mid = 0.5 * (lo + hi)
        below = cdf(mid) < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.maximum(hi, 0.0)


def inter_token_stats(
    step: Callable, running: np.ndarray, peakedness: np.ndarray, step_slope_s: np.ndarray,
    tpot_mean_s: np.ndarray, arrival_rate_per_s: np.ndarray, prefill_s: np.ndarray,
    isl_tokens: np.ndarray, chunk_tokens: np.ndarray, policy: str, decode_steps: np.ndarray,
) -> LatencyStats:  # fmt: skip
    """The inter-token gap of a decoding request: mean (the TPOT's) and P50-P99.

    Plain gap: step(b) at the running batch b (at least 1), spread by the batch's changes,
    sigma = slope x sqrt(z b) (a Poisson-like count of running sequences, peakedness z).
    Interruption: the whole prefill P when prompts are prefilled whole ("continuous"), a chunk
    P x min(C, L) / L in ceil(L / C) iterations ("chunked"), none for static batches. The
    prefills a gap carries: ``prefills_per_gap`` at the TPOT; the quantiles: ``itl_quantile_s``.
    """
    b = np.maximum(running, 1.0)
    plain = step(b)
    sd = np.abs(step_slope_s) * np.sqrt(np.maximum(peakedness, 1.0) * b)
    if policy == "chunked":
        k = np.ceil(isl_tokens / np.maximum(chunk_tokens, 1.0))
        extra = prefill_s * np.minimum(chunk_tokens, isl_tokens) / np.maximum(isl_tokens, 1.0)
    else:
        k, extra = np.ones_like(plain), prefill_s
    per_gap = prefills_per_gap(arrival_rate_per_s, tpot_mean_s, k) * (policy != "static")
    none = decode_steps <= 0
    chunked = policy == "chunked"
    qs = [
        np.where(none, 0.0, itl_quantile_s(plain, sd, extra, per_gap, q, chunked=chunked))
        for q in QUANTILES
    ]
    return LatencyStats(np.where(none, 0.0, tpot_mean_s), *qs)

"""Textbook queueing results, one formula per function: Little's law, Kingman's G/G/1 mean
wait, the Pollaczek-Khinchine M/G/1 wait moments, Erlang C."""

from __future__ import annotations

import math

import numpy as np

from advisor.physics.queueing.distributions import norm_cdf
from advisor.physics.queueing.service import ArrayLike

_ERLANG_EXACT_MAX = 64  # exact Erlang-C recursion up to this many servers, Halfin-Whitt above


def littles_law_count(arrival_rate_per_s: ArrayLike, time_in_system_s: ArrayLike) -> np.ndarray:
    """Mean number in a system: L = lambda x W.

    Source: Little (1961), Operations Research 9(3); formulas.md "Batching and queueing".

    >>> round(float(littles_law_count(4.0, 255 * 0.02)), 9)  # 4 req/s x 255 decode steps x 20 ms
    20.4
    """
    return np.asarray(arrival_rate_per_s, dtype=float) * np.asarray(time_in_system_s, dtype=float)


def kingman_mean_wait_s(
    utilisation: ArrayLike, arrival_cv2: ArrayLike, service_cv2: ArrayLike, service_s: ArrayLike
) -> np.ndarray:
    """Kingman's G/G/1 mean wait: rho / (1 - rho) x (ca^2 + cs^2) / 2 x service time.

    ca^2 (``arrival_cv2``) and cs^2 (``service_cv2``): squared coefficients of variation of the
    inter-arrival and service times. Exact for M/M/1 (ca^2 = cs^2 = 1): W_q = rho / (1 - rho) x
    S. Source: Kingman (1961); formulas.md "Batching and queueing". Returns inf for rho >= 1.

    >>> float(kingman_mean_wait_s(0.5, 1.0, 1.0, 0.1))  # M/M/1 at rho 0.5: W_q = S
    0.1
    """
    rho = np.asarray(utilisation, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = (
            rho / (1.0 - rho) * (np.asarray(arrival_cv2) + np.asarray(service_cv2)) / 2.0
            * np.asarray(service_s)
        )  # fmt: skip
    return np.where(rho < 1.0, w, np.inf)


def pollaczek_khinchine_wait_moments(
    arrival_rate_per_s: ArrayLike,
    service_mean_s: ArrayLike,
    service_m2_s2: ArrayLike,
    service_m3_s3: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """M/G/1 FCFS waiting time: mean and second moment (Pollaczek-Khinchine, Takacs).

    E[W] = lambda E[S^2] / (2 (1 - rho)); E[W^2] = 2 E[W]^2 + lambda E[S^3] / (3 (1 - rho)),
    rho = lambda E[S]. Source: Kleinrock, Queueing Systems vol. 1 (1975), eqs. 5.105 and 5.114.
    inf where rho >= 1.

    >>> w, w2 = pollaczek_khinchine_wait_moments(5.0, 0.1, 0.02, 0.006)  # M/M/1, S = 0.1 s
    >>> round(float(w), 6), round(float(w2), 6)  # M/M/1: E[W] = rho S / (1 - rho) = 0.1
    (0.1, 0.04)
    """
    arrival_rate_per_s = np.asarray(arrival_rate_per_s, dtype=float)
    rho = arrival_rate_per_s * np.asarray(service_mean_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = arrival_rate_per_s * np.asarray(service_m2_s2) / (2.0 * (1.0 - rho))
        w2 = 2.0 * w**2 + arrival_rate_per_s * np.asarray(service_m3_s3) / (3.0 * (1.0 - rho))
    ok = rho < 1.0
    return np.where(ok, w, np.inf), np.where(ok, w2, np.inf)


def erlang_c(servers: ArrayLike, offered_load: ArrayLike) -> np.ndarray:
    """Probability that an arrival waits in M/M/c with c servers and offered load A = lambda/mu.

    Exact (Erlang-B recursion B_k = A B_{k-1} / (k + A B_{k-1}), C = B / (1 - rho (1 - B)))
    for c <= 64; Halfin-Whitt (1981) approximation 1 / (1 + beta Phi(beta) / phi(beta)),
    beta = (c - A) / sqrt(A), above. 1 where A >= c. Source: Kleinrock vol. 1, eq. 3.40.

    >>> round(float(erlang_c(4, 2.0)[()]), 4)  # textbook M/M/4 at A = 2: C = 0.1739
    0.1739
    """
    c = np.atleast_1d(np.asarray(servers, dtype=float))
    a = np.atleast_1d(np.asarray(offered_load, dtype=float))
    c, a = np.broadcast_arrays(c, a)
    out = np.ones(c.shape)
    ok = (a < c) & (a > 0)
    out[a <= 0] = 0.0
    small = ok & (c <= _ERLANG_EXACT_MAX)
    if np.any(small):
        cs, as_ = c[small], a[small]
        b = np.ones(cs.shape)
        cmax = int(cs.max())
        for k in range(1, cmax + 1):
            upd = k <= cs
            b = np.where(upd, as_ * b / (k + as_ * b), b)
        rho = as_ / cs
        out[small] = b / (1.0 - rho * (1.0 - b))
    large = ok & ~small
    if np.any(large):
        beta = (c[large] - a[large]) / np.sqrt(a[large])
        phi = np.exp(-0.5 * beta**2) / math.sqrt(2.0 * math.pi)
        out[large] = 1.0 / (1.0 + beta * norm_cdf(beta) / phi)
    return out.reshape(np.broadcast(np.asarray(servers), np.asarray(offered_load)).shape)

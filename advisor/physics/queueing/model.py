"""Latency under load: TTFT, TPOT and end-to-end latency of a batching LLM server at a request rate.

Two implementations of the same server model, tested against each other:

* :func:`latency_under_load` -- a vectorised analytic approximation across candidates (arrays of
  shape ``[n]``, no Python loop per candidate). This is what the recommendation search calls.
* :func:`advisor.perf.validation.queue_sim.simulate` -- a seeded discrete-event simulation of one
  candidate (the reference; in perf because it is a check, not a formula).

Server model (both implementations)
-----------------------------------
Requests arrive as a Poisson process at ``arrival_rate_per_s``. Each request has a prompt of
``isl`` tokens and produces ``osl`` output tokens (the first token comes out of the prefill, the
other ``osl - 1`` out of decode steps). A request holds one of ``max_running`` KV slots from
admission to its last token; the waiting queue is FIFO.

* Decode step time for ``b`` running sequences (the ``linear`` form of :class:`ServiceModel`)::

      step(b) = max(decode_step_base_s + decode_step_per_seq_s * b, compute_per_seq_s * b)

  ``base`` is the batch-independent part (weights read once per step, launch overhead, TP
  collectives), ``per_seq`` the per-sequence memory-bound part (its KV cache at the mean context
  plus per-token work), ``compute_per_seq`` the compute-bound floor (decode FLOPs per token /
  achievable FLOP/s); the step is the larger of the memory and compute times (roofline,
  formulas.md). A callable ``decode_step_fn(b)`` may replace the linear form.
* Prefill of a request takes ``prefill_s * (isl_i / isl) ** e`` with ``e`` the prefill's length
  elasticity (``prefill_elasticity``; 1: linear in tokens, the GEMMs; near 0 where a fixed floor
  such as the host's kernel dispatch sets the time). Its coefficient of variation is then
  ``e * isl_cv`` (first order in the length's spread). Batched prefills of k prompts take the
  sum: prefill is compute-bound so batching saves little.
* Policies (``policy=``):

  - ``"continuous"`` (Orca, Yu et al. 2022 OSDI, iteration-level scheduling; vLLM's pre-chunked
    scheduler): each iteration first prefills every request admitted since the last iteration
    (one batched prefill; those requests' first tokens come out at its end), then runs one decode
    step for all running sequences. A prefill stalls decode for its whole duration.
  - ``"chunked"`` (Sarathi-Serve, Agrawal et al. 2024 OSDI): each iteration runs one decode step
    plus up to ``chunk_tokens`` prompt tokens taken FIFO from admitted requests; the iteration
    takes ``step(b) + chunk_tokens_used * prefill_s / isl``. A request's first token comes out at
    the end of the iteration that completes its prompt; it decodes from the next iteration.
  - ``"static"`` (request-level batching, for comparison): when the server is free it takes up
    to ``max_running`` waiting requests, prefills them together, then runs ``max(osl) - 1``
    decode steps at ``step(k)``; requests arriving meanwhile wait for the whole batch.

Definitions of the outputs follow vLLM ``benchmarks/benchmark_serving.py``: TTFT = first token
time - arrival; TPOT (per request) = (E2E - TTFT) / (osl - 1), averaged over requests with
osl > 1; E2E = last token time - arrival. Requests with osl == 1 have TPOT 0 here.

Capacity and utilisation
------------------------
At the largest batch the server spends ``prefill_s + (osl - 1) * step(M) / M`` of busy time per
request (M = max_running). Its capacity is therefore ``1 / that`` requests/s and the utilisation
is ``rho = arrival_rate * (prefill_s + (osl - 1) * step(M) / M)`` (:func:`utilisation`). Chunked
prefill adds a second bottleneck: each chunk also runs a decode step, so the prompt pipeline has
utilisation ``rho_prefill = arrival_rate * (prefill_s + isl / chunk_tokens * step_busy)``.
``stable`` is ``rho < 1`` (and ``rho_prefill < 1`` for chunked); unstable candidates get ``inf``
latencies and a reason code (:data:`REASONS`).

Analytic approximation (what :func:`latency_under_load` computes)
------------------------------------------------------------------
1. Running batch (mean field + Little's law). A tagged request in decode sees ``n`` others (for a
   Poisson stream the others in an infinite-server system are Poisson(n) distributed, PASTA), so
   its step time is ``step(min(M, 1 + n))``. Prefills of other requests take a fraction
   ``rho_p = arrival_rate * prefill_s`` of the server's time, stretching its time per token to
   ``tau = step(min(M, 1 + n)) / (1 - rho_p)``. Little's law gives ``n = arrival_rate * (osl - 1)
   * tau``; the fixed point is solved in closed form for the linear step (smallest root of a
   convex piecewise-linear equation) and for a tabulated :class:`PiecewiseLinearStep` (exact
   per segment), or by vectorised bisection for any other callable.
2. TTFT, continuous: an arrival waits for the iteration in progress to end, then is prefilled
   together with everyone who arrived during that iteration. Iteration lengths follow
   ``L' = D + sum of the prefills of Poisson(arrival_rate * L) arrivals``, so
   ``E[L] = D / (1 - rho_p)`` and ``Var[L] = arrival_rate E[L] E[P^2] / (1 - rho_p^2)``. The
   arrival lands in a length-biased iteration (moments ``E[L^2]/E[L]``, ``E[L^3]/E[L]``, third
   moment from a gamma fit of the prefill part); the residual is uniform within it (renewal
   theory / Pollaczek-Khinchine residual ``E[L^2] / 2E[L]``). With probability
   ``exp(-(n + arrival_rate * prefill_s))`` (empty infinite-server system) it finds the server
   idle and waits for nothing. When all ``M`` slots are busy it also waits for a slot: Erlang-C
   with ``M`` servers (exact recursion for M <= 64, Halfin-Whitt 1981 above) and an exponential
   conditional wait of mean ``hold / (M - A)``.
3. TTFT, chunked: M/G/1 Pollaczek-Khinchine queue for the prompt pipeline (service
   ``prefill_s + ceil(isl / chunk) * D``), mean and second moment of the wait (Takacs), plus half
   an iteration of residual and the same Erlang-C slot wait.
4. TTFT, static: the same length-biased residual argument with the "iteration" being a whole
   batch (prefill + (osl - 1) decode steps); the busy batch size solves
   ``k = m / (1 - exp(-m))``, ``m = arrival_rate * S(k)`` (gated batch service, a batch being the
   arrivals during the previous one, conditioned on being non-empty).
5. TPOT = ``tau``; its request-to-request variance combines the batch-size fluctuation averaged
   over the request's lifetime (for an M/D/infinity occupancy the lifetime average of the
   Poisson count has variance 2n/3) and the compound-Poisson prefill stalls
   (``arrival_rate * T_decode * E[P^2] / (osl - 1)^2``).
6. Percentiles: two-moment fits. TTFT = prefill + a zero-inflated gamma waiting time (atom at 0
   with the probability of not waiting, gamma fitted to the mean and variance of the positive
   part); TPOT gamma; E2E = prefill + gamma. Gamma quantiles by the Wilson-Hilferty cube-root
   normal approximation (Wilson and Hilferty 1931; Johnson, Kotz and Balakrishnan, Continuous
   Univariate Distributions vol. 1, ch. 17), normal quantiles by Acklam's rational approximation.

Agreement with the simulation is checked in tests/test_queueing.py (mean TTFT and TPOT within
15 %, P99 within 25 %, for rho 0.2..0.8 on small cases). Source for the queueing results:
formulas.md "Batching and queueing"; Kleinrock, Queueing Systems vol. 1 (1975) for M/G/1,
M/G/infinity and Erlang-C; Kingman (1961) for the rho / (1 - rho) growth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

#: Scheduling policies understood by :func:`latency_under_load` and ``perf.validation.queue_sim.simulate``.
POLICIES: tuple[str, ...] = ("continuous", "chunked", "static")

#: Reason codes (index = ``LoadResult.reason_code``).
REASONS: tuple[str, ...] = (
    "ok",
    "prefill_saturated",  # arrival_rate x prefill time (x chunk overhead) >= 1
    "kv_capacity",  # needs more concurrent sequences than max_running allows
    "decode_saturated",  # even with unlimited KV slots, decode work per second >= 1
)
OK, PREFILL_SATURATED, KV_CAPACITY, DECODE_SATURATED = range(4)
#: What each reason code means, for people (the code stays in JSON and CSV output).
REASON_TEXT: dict[str, str] = {
    "ok": "stable",
    "prefill_saturated": "prefilling the arriving prompts alone takes all of the GPUs' time",
    "kv_capacity": "it needs more sequences at once than its KV cache or the engine's running "
    "limit holds",
    "decode_saturated": "the output tokens asked for per second exceed what decoding can produce",
}


def unstable_text(reason: str | None) -> str:
    """'unstable at the offered load: <why>' for a reason code of ``REASONS``.

    >>> unstable_text("prefill_saturated")
    "unstable at the offered load: prefilling the arriving prompts alone takes all of the GPUs' time"
    """
    why = REASON_TEXT.get(reason or "", reason or "the queue grows without bound")
    return f"unstable at the offered load: {why}"


#: Quantiles reported in :class:`LatencyStats`.
QUANTILES: tuple[float, ...] = (0.50, 0.90, 0.95, 0.99)

_ERLANG_EXACT_MAX = 64  # exact Erlang-C recursion up to this many servers, Halfin-Whitt above

ArrayLike = float | int | np.ndarray


# ---------------------------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------------------------


def _as_array(name: str, value: ArrayLike, *, low: float, allow_inf: bool = False) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim > 1:
        raise ValueError(f"{name}: expected a scalar or a 1-D array, got shape {arr.shape}")
    bad = np.isnan(arr) | (arr < low)
    if not allow_inf:
        bad |= np.isinf(arr)
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else float(arr)
        rng = f">= {low}" + ("" if allow_inf else " and finite")
        raise ValueError(f"{name}: got {first!r}, allowed range {rng}")
    return arr


@dataclass(frozen=True)
class ServiceModel:
    """Per-candidate service times, all arrays of shape ``[n]`` (scalars broadcast).

    Fields (seconds unless stated):

    * ``decode_step_base_s`` -- decode step time not proportional to the batch: weights read
      once per step, kernel launches, tensor-parallel collectives. >= 0.
    * ``decode_step_per_seq_s`` -- extra memory-bound decode step time per running sequence
      (its KV cache read at the mean context, per-token activations). >= 0.
    * ``prefill_s`` -- time to prefill one request's prompt alone (``isl`` tokens). >= 0.
    * ``max_running`` -- most sequences that can hold KV cache at once (a count >= 1; ``inf``
      means unlimited).
    * ``compute_per_seq_s`` -- optional compute-bound floor: step(b) >= compute_per_seq_s * b.
    * ``decode_step_fn`` -- optional callable replacing the linear form: it receives the running
      batch per candidate (float array ``[n]``, >= 1) and returns the step time per candidate
      (array ``[n]``); it must be non-decreasing in the batch. ``decode_step_base_s`` and
      ``decode_step_per_seq_s`` are then ignored (pass 0).
    * ``prefill_elasticity`` -- d ln(prefill) / d ln(prompt length) at the mean prompt, in
      [0, 3]: 1 for a pass linear in the prompt (default), below 1 where a length-independent
      part (host dispatch, fixed overheads) weighs, above where attention's quadratic term does.
      The prefill's spread across requests is ``e * isl_cv`` of its mean.
    * ``request_delay_s`` -- per-request front-end time (tokenisation, HTTP, admission) added to
      TTFT and E2E but not to the server's busy time: it runs in the engine's API and tokenizer
      processes beside the GPU (vLLM's AsyncLLM front-end process, SGLang's TokenizerManager).
      >= 0, default 0.

    ``step(b) = max(base + per_seq * b, compute_per_seq * b)`` (see the module docstring).

    >>> sm = ServiceModel(0.010, 0.0005, 0.050, 64)
    >>> float(sm.decode_step_s(np.array([4.0]))[0])  # 10 ms + 4 x 0.5 ms
    0.012
    """

    decode_step_base_s: ArrayLike
    decode_step_per_seq_s: ArrayLike
    prefill_s: ArrayLike
    max_running: ArrayLike
    compute_per_seq_s: ArrayLike | None = None
    decode_step_fn: Callable[[np.ndarray], np.ndarray] | None = field(default=None, compare=False)
    request_delay_s: ArrayLike = 0.0
    prefill_elasticity: ArrayLike = 1.0

    def __post_init__(self) -> None:
        base = _as_array("decode_step_base_s", self.decode_step_base_s, low=0.0)
        per = _as_array("decode_step_per_seq_s", self.decode_step_per_seq_s, low=0.0)
        prefill_s = _as_array("prefill_s", self.prefill_s, low=0.0)
        max_running = _as_array("max_running", self.max_running, low=1.0, allow_inf=True)
        finite = np.isfinite(max_running)
        if np.any(finite & (max_running != np.floor(max_running))):
            raise ValueError(f"max_running: must be whole numbers, got {max_running[finite][0]!r}")
        comp = (
            np.zeros(())
            if self.compute_per_seq_s is None
            else _as_array("compute_per_seq_s", self.compute_per_seq_s, low=0.0)
        )
        try:
            arrays = np.broadcast_arrays(base, per, prefill_s, max_running, comp)
        except ValueError as exc:
            raise ValueError(f"ServiceModel: field shapes do not broadcast ({exc})") from None
        n = max(1, arrays[0].size)
        arrays = [np.broadcast_to(a, (n,)).astype(float) for a in arrays]
        for name, arr in zip(
            (
                "decode_step_base_s",
                "decode_step_per_seq_s",
                "prefill_s",
                "max_running",
                "compute_per_seq_s",
            ),
            arrays,
            strict=True,
        ):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        delay = _as_array("request_delay_s", self.request_delay_s, low=0.0)
        delay = np.broadcast_to(delay, (n,)).astype(float)
        delay.setflags(write=False)
        object.__setattr__(self, "request_delay_s", delay)
        elast = _as_array("prefill_elasticity", self.prefill_elasticity, low=0.0)
        if np.any(elast > 3.0):
            raise ValueError(
                f"prefill_elasticity: got {float(elast.max())!r}, allowed 0-3 (d ln prefill / "
                "d ln prompt length)"
            )
        elast = np.broadcast_to(elast, (n,)).astype(float)
        elast.setflags(write=False)
        object.__setattr__(self, "prefill_elasticity", elast)
        if self.decode_step_fn is None and np.any(
            (arrays[0] + arrays[1] + arrays[4]) <= 0.0
        ):  # pragma: no branch
            raise ValueError("ServiceModel: decode step time is 0 for some candidate (all terms 0)")

    @property
    def n(self) -> int:
        """Number of candidates."""
        return int(self.prefill_s.shape[0])

    def decode_step_s(self, running: np.ndarray) -> np.ndarray:
        """Decode step time (s) per candidate for ``running`` sequences (array ``[n]``)."""
        b = np.asarray(running, dtype=float)
        if self.decode_step_fn is not None:
            out = np.asarray(self.decode_step_fn(np.broadcast_to(b, (self.n,))), dtype=float)
            return np.broadcast_to(out, (self.n,))
        return np.maximum(
            self.decode_step_base_s + self.decode_step_per_seq_s * b, self.compute_per_seq_s * b
        )

    def per_token_at_max_batch_s(self) -> np.ndarray:
        """Busy time per decoded token at the largest batch: step(M) / M (limit if M = inf)."""
        max_running = self.max_running
        finite = np.isfinite(max_running)
        m_eval = np.where(finite, max_running, 1e9)
        return self.decode_step_s(m_eval) / m_eval

    def select(self, i: int) -> ServiceModel:
        """The one-candidate ServiceModel of candidate ``i`` (callable form not supported)."""
        if self.decode_step_fn is not None:
            raise ValueError("select: not available with decode_step_fn")
        return ServiceModel(
            self.decode_step_base_s[i : i + 1],
            self.decode_step_per_seq_s[i : i + 1],
            self.prefill_s[i : i + 1],
            self.max_running[i : i + 1],
            self.compute_per_seq_s[i : i + 1],
            request_delay_s=self.request_delay_s[i : i + 1],
            prefill_elasticity=self.prefill_elasticity[i : i + 1],
        )


class PiecewiseLinearStep:
    """Decode step time tabulated per candidate and interpolated linearly in the batch.

    A callable for ``ServiceModel.decode_step_fn``: ``batches`` is the grid ``[G]`` (increasing,
    first point 1, G >= 2), ``step_s`` the step times ``[n, G]`` (non-decreasing along each
    row). ``step(b)`` is linear between grid points; below 1 the batch is clipped to 1, beyond
    the last point the last segment is extrapolated. Because the step is exactly linear on
    each segment, the decode fixed point n = a step(1 + n) + e has a closed form per segment
    (:meth:`smallest_fixed_point`), which ``latency_under_load`` uses instead of bisection.

    >>> f = PiecewiseLinearStep([1.0, 2.0, 4.0], [[0.010, 0.012, 0.020]])
    >>> [round(float(f(np.array([b]))[0]), 6) for b in (0.5, 1.5, 3.0, 6.0)]  # by hand
    [0.01, 0.011, 0.016, 0.028]
    """

    def __init__(self, batches: ArrayLike, step_s: ArrayLike) -> None:
        g = np.asarray(batches, dtype=float)
        t = np.atleast_2d(np.asarray(step_s, dtype=float))
        if g.ndim != 1 or g.size < 2 or g[0] != 1.0 or np.any(np.diff(g) <= 0):
            raise ValueError(f"batches: need an increasing grid from 1 with >= 2 points, got {g}")
        if t.ndim != 2 or t.shape[1] != g.size:
            raise ValueError(f"step_s: shape {t.shape} does not match {g.size} grid points")
        self.batches = g
        self.step_s = t
        self.slope = np.diff(t, axis=1) / np.diff(g)  # [n, G - 1] seconds per sequence
        self._flat_t = t[:, :-1].ravel()
        self._flat_s = self.slope.ravel()

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        b = np.maximum(np.asarray(batch, dtype=float), 1.0)
        g = self.batches
        j = np.clip(np.searchsorted(g, b, side="right") - 1, 0, g.size - 2)
        flat = np.arange(self.step_s.shape[0]) * (g.size - 1) + j
        return self._flat_t[flat] + self._flat_s[flat] * (b - g[j])

    def smallest_fixed_point(self, a: np.ndarray, e: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Smallest n in [0, hi] with n = a x step(1 + n) + e per candidate; inf if none.

        g(n) = a step(1 + n) + e - n is linear between the grid nodes n_j = batches_j - 1 and
        g(0) >= 0, so the smallest root lies in the first segment whose right node has
        g <= 0 and is found by linear interpolation there (exact); past the last node the
        extrapolated segment has a root iff its slope a s - 1 < 0.

        >>> f = PiecewiseLinearStep([1.0, 2.0, 4.0], [[0.010, 0.012, 0.020]])
        >>> # by hand, a = 100, e = 0: first segment n = 100 (0.010 + 0.002 n) gives n = 1.25,
        >>> # outside it (1 + n > 2); second: n = 100 (0.012 + 0.004 (n - 1)) -> n = 0.8 / 0.6
        >>> float(f.smallest_fixed_point(np.array([100.0]), np.zeros(1), np.array([1e9]))[0])
        1.3333333333333333
        """
        a = np.asarray(a, dtype=float)[:, None]
        e = np.asarray(e, dtype=float)[:, None]
        nodes = self.batches - 1.0
        gv = a * self.step_s + e - nodes  # [n, G]
        neg = gv <= 0.0
        has = neg.any(axis=1)
        j = np.argmax(neg, axis=1)  # first node with g <= 0
        rows = np.arange(gv.shape[0])
        jl = np.maximum(j - 1, 0)
        g_l, g_r = gv[rows, jl], gv[rows, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = nodes[jl] + g_l * (nodes[j] - nodes[jl]) / (g_l - g_r)
            inside = np.where(j == 0, 0.0, inside)
            s_last = self.slope[:, -1]
            k = 1.0 - a[:, 0] * s_last
            beyond = np.where(k > 0.0, nodes[-1] + gv[:, -1] / k, np.inf)
        root = np.where(has, inside, beyond)
        return np.where(root <= hi, root, np.inf)


@dataclass(frozen=True)
class LatencyStats:
    """Mean and percentiles (seconds) of one latency metric, arrays ``[n]``."""

    mean_s: np.ndarray
    p50_s: np.ndarray
    p90_s: np.ndarray
    p95_s: np.ndarray
    p99_s: np.ndarray

    def quantile_s(self, q: float) -> np.ndarray:
        """The stored percentile for q in QUANTILES (0.5, 0.9, 0.95, 0.99)."""
        names = {0.50: self.p50_s, 0.90: self.p90_s, 0.95: self.p95_s, 0.99: self.p99_s}
        if q not in names:
            raise ValueError(f"quantile_s: q={q!r}, allowed {QUANTILES}")
        return names[q]


@dataclass(frozen=True)
class LoadResult:
    """Latency under load per candidate (arrays ``[n]``).

    * ``ttft``, ``tpot``, ``e2e`` -- :class:`LatencyStats` (seconds).
    * ``running_mean`` -- time-average number of sequences in decode (Little's law).
    * ``utilisation`` -- rho = arrival rate / capacity at the largest batch (see module doc);
      for chunked prefill the larger of that and the prompt pipeline's utilisation.
    * ``capacity_req_per_s`` -- the arrival rate at which ``utilisation`` reaches 1.
    * ``throughput_tok_per_s`` -- output tokens/s: arrival_rate x osl when stable, the
      saturated capacity x osl otherwise.
    * ``stable`` -- bool; unstable candidates have inf latencies.
    * ``reason_code`` -- int index into :data:`REASONS` (0 = ok).
    """

    ttft: LatencyStats
    tpot: LatencyStats
    e2e: LatencyStats
    running_mean: np.ndarray
    utilisation: np.ndarray
    capacity_req_per_s: np.ndarray
    throughput_tok_per_s: np.ndarray
    stable: np.ndarray
    reason_code: np.ndarray
    #: Inter-token latency (one gap), when asked for (``latency_under_load(with_itl=True)``):
    #: mean = the TPOT's, percentiles from ``itl_quantile_s``.
    itl: LatencyStats | None = None

    @property
    def reason(self) -> np.ndarray:
        """Reason codes as strings (array ``[n]`` of str)."""
        return np.asarray(REASONS, dtype=object)[self.reason_code]


# ---------------------------------------------------------------------------------------------
# Formulas (one formula, one function)
# ---------------------------------------------------------------------------------------------


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
        out[large] = 1.0 / (1.0 + beta * _norm_cdf(beta) / phi)
    return out.reshape(np.broadcast(np.asarray(servers), np.asarray(offered_load)).shape)


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF via erf (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * (1.0 + np.sign(x) * erf)


_A = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690)
_A += (-30.66479806614716, 2.506628277459239)
_B = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972)
_B += (-13.28068155288572,)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838, -2.549732539343734)
_C += (4.374664141464968, 2.938163982698783)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996, 3.754408661907416)


def norm_ppf(p: ArrayLike) -> np.ndarray:
    """Standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).

    Source: P. J. Acklam, "An algorithm for computing the inverse normal cumulative distribution
    function" (2003).

    >>> round(float(norm_ppf(0.99)), 4)  # tables: z_0.99 = 2.3263
    2.3263
    """
    p = np.clip(np.asarray(p, dtype=float), 1e-300, 1.0 - 1e-16)
    q = np.where(p < 0.5, p, 1.0 - p)
    low = q < 0.02425
    r = np.sqrt(-2.0 * np.log(np.where(low, q, 0.5)))
    tail = (((((_C[0] * r + _C[1]) * r + _C[2]) * r + _C[3]) * r + _C[4]) * r + _C[5]) / (
        (((_D[0] * r + _D[1]) * r + _D[2]) * r + _D[3]) * r + 1.0
    )
    s = q - 0.5
    r2 = s * s
    mid = (((((_A[0] * r2 + _A[1]) * r2 + _A[2]) * r2 + _A[3]) * r2 + _A[4]) * r2 + _A[5]) * s
    mid = mid / (((((_B[0] * r2 + _B[1]) * r2 + _B[2]) * r2 + _B[3]) * r2 + _B[4]) * r2 + 1.0)
    z_lower = np.where(low, tail, mid)  # quantile of q (<= 0.5): non-positive
    return np.where(p < 0.5, z_lower, -z_lower)


def gamma_quantile(mean: ArrayLike, var: ArrayLike, q: ArrayLike) -> np.ndarray:
    """Quantile of the gamma distribution with this mean and variance (Wilson-Hilferty).

    shape k = mean^2 / var; x_q ~ mean (1 - 1/(9k) + z_q / sqrt(9k))^3, clipped at 0. var = 0
    gives the mean. Source: Wilson and Hilferty (1931), PNAS 17; accurate to ~1 % at the upper
    percentiles for k >= 0.5 (exponential, k = 1: x_0.99 = 4.61 x mean vs exact ln(100) = 4.605).

    >>> round(float(gamma_quantile(1.0, 1.0, 0.99)), 2)  # exponential of mean 1: ln 100 = 4.61
    4.61
    """
    mean = np.asarray(mean, dtype=float)
    var = np.maximum(np.asarray(var, dtype=float), 0.0)
    z = norm_ppf(q)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        nine_k = 9.0 * mean**2 / var
        x = mean * np.maximum(1.0 - 1.0 / nine_k + z / np.sqrt(nine_k), 0.0) ** 3
    return np.where((var > 0) & (mean > 0), x, mean)


def _zero_inflated_quantile(
    mean: np.ndarray, var: np.ndarray, p_zero: np.ndarray, q: float
) -> np.ndarray:
    """Quantile of a variable that is 0 with probability p_zero, else gamma (moments matched)."""
    p_pos = np.clip(1.0 - p_zero, 1e-12, 1.0)
    m_pos = mean / p_pos
    v_pos = np.maximum((var + mean**2) / p_pos - m_pos**2, 0.0)
    q_pos = np.clip((q - (1.0 - p_pos)) / p_pos, 1e-12, 1.0 - 1e-12)
    return np.where(q <= 1.0 - p_pos, 0.0, gamma_quantile(m_pos, v_pos, q_pos))


def utilisation(
    service: ServiceModel, arrival_rate_per_s: ArrayLike, osl_tokens: ArrayLike
) -> np.ndarray:
    """rho = arrival_rate x (prefill_s + (osl - 1) x step(M) / M): busy time at the largest batch.

    Source: work conservation at full batch (each request needs its prefill and osl - 1 decode
    slots; a step serves M of them); formulas.md "Batching and queueing".

    >>> round(float(utilisation(ServiceModel(0.010, 0.0, 0.05, 10), 4.0, 101)[0]), 9)  # 4 x (0.05 + 0.1)
    0.6
    """
    arrival_rate_per_s = np.asarray(arrival_rate_per_s, dtype=float)
    return arrival_rate_per_s * (
        service.prefill_s + (np.asarray(osl_tokens) - 1.0) * service.per_token_at_max_batch_s()
    )


# ---------------------------------------------------------------------------------------------
# Analytic approximation, vectorised across candidates
# ---------------------------------------------------------------------------------------------


def _check_workload(
    n: int,
    arrival_rate_per_s: ArrayLike,
    isl_tokens: ArrayLike,
    osl_tokens: ArrayLike,
    isl_cv: ArrayLike,
    osl_cv: ArrayLike,
    policy: str,
    chunk_tokens: ArrayLike,
) -> tuple[np.ndarray, ...]:
    if policy not in POLICIES:
        raise ValueError(f"policy: got {policy!r}, allowed {POLICIES}")
    out = []
    for name, val, low in (
        ("arrival_rate_per_s", arrival_rate_per_s, 0.0),
        ("isl_tokens", isl_tokens, 1.0),
        ("osl_tokens", osl_tokens, 1.0),
        ("isl_cv", isl_cv, 0.0),
        ("osl_cv", osl_cv, 0.0),
        ("chunk_tokens", chunk_tokens, 1.0),
    ):
        arr = _as_array(name, val, low=low)
        if arr.ndim == 1 and arr.shape[0] not in (1, n):
            raise ValueError(f"{name}: shape {arr.shape} does not match {n} candidates")
        out.append(np.broadcast_to(arr, (n,)).astype(float))
    return tuple(out)


def _stats(mean, p50, p90, p95, p99) -> LatencyStats:
    return LatencyStats(mean, p50, p90, p95, p99)


def _mask_inf(stats: LatencyStats, bad: np.ndarray) -> LatencyStats:
    def m(a):
        return np.where(bad, np.inf, a)

    return LatencyStats(
        m(stats.mean_s), m(stats.p50_s), m(stats.p90_s), m(stats.p95_s), m(stats.p99_s)
    )


def _running_fixed_point(
    service: ServiceModel, a: np.ndarray, e: np.ndarray, max_running: np.ndarray
) -> np.ndarray:
    """Smallest n >= 0 with n = a x step(min(M, 1 + n)) + e (Little's law for the decode phase).

    ``a`` = arrival rate x (decode steps' wall-time multiplier), ``e`` = arrival rate x the
    batch-independent extra decode time. Closed form for the linear step (the right side is
    convex piecewise linear in n, so the smallest root is the largest of the pieces' roots);
    exact per segment for a :class:`PiecewiseLinearStep`; vectorised bisection for any other
    callable step.
    """
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
            a, e, np.where(np.isfinite(max_running), max_running, 1e9)
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


# -- step 1: the running batch (Little's law fixed point) --------------------------------------


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
    for _ in range(4):  # outer fixed point on E[Q0] (own prefill batch), converges fast
        nrun = _running_fixed_point(
            service, arrival_rate_per_s * gain_h, arrival_rate_per_s * gain_g * eq0, max_running
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
        d_busy = step(b_busy) * q_dec / np.maximum(1.0 - p_idle, 1e-300)
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
        busy_decode_s=step(b_busy) * q_dec,
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


# -- step 2: the queue wait for a KV slot ------------------------------------------------------


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


# -- step 3: the wait before the first token, per batching policy -----------------------------


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


# -- the inter-token gap: plain steps and steps that carry a prefill ---------------------------


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
            return sum(wn * _norm_cdf((t - s - n * p) / scale) for n, wn in weights)

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
    return _stats(np.where(none, 0.0, tpot_mean_s), *qs)


# -- step 4: the spread of TPOT and E2E -------------------------------------------------------


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


# -- step 5: percentiles -----------------------------------------------------------------------


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
    waited = prefill_s + _zero_inflated_quantile(wait_mean_s, wait_var_s2, p_no_wait, q)
    cv = np.asarray(prefill_cv, dtype=float)
    return np.maximum(waited, gamma_quantile(prefill_s, (prefill_s * cv) ** 2, q))


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
    return floor_s + gamma_quantile(mean_s - floor_s, var_s2, q)


# -- the whole model ---------------------------------------------------------------------------


def latency_under_load(
    service: ServiceModel,
    arrival_rate_per_s: ArrayLike,
    osl_tokens: ArrayLike,
    *,
    isl_tokens: ArrayLike,
    isl_cv: ArrayLike = 0.0,
    osl_cv: ArrayLike = 0.0,
    policy: str = "continuous",
    chunk_tokens: ArrayLike = 512,
    with_itl: bool = False,
) -> LoadResult:
    """TTFT / TPOT / E2E mean and percentiles per candidate at a Poisson arrival rate (analytic).

    Arguments are arrays ``[n]`` or scalars: ``arrival_rate_per_s`` (requests/s), ``osl_tokens``
    and ``isl_tokens`` (means), ``isl_cv`` / ``osl_cv`` (coefficients of variation of the lengths,
    0 = fixed), ``policy`` (one of :data:`POLICIES`), ``chunk_tokens`` (prompt tokens per
    iteration for ``"chunked"``), ``with_itl`` (also the inter-token gap's percentiles,
    :func:`inter_token_stats`; the search does not ask). The approximation is described in the
    module docstring; its
    steps are :func:`running_batch_fixed_point`, :func:`slot_wait_moments`, the policy's wait
    (:func:`continuous_wait_moments`, :func:`chunked_wait_moments`, :func:`static_batch_terms`),
    :func:`tpot_variance_s2` / :func:`e2e_variance_s2` and the quantiles
    (:func:`ttft_quantile_s`, :func:`shifted_gamma_quantile_s`).

    >>> sm = ServiceModel(0.010, 0.0002, 0.040, 256)
    >>> r = latency_under_load(sm, 1e-6, 101, isl_tokens=512)  # nearly no load
    >>> round(float(r.ttft.mean_s[0]), 4), round(float(r.tpot.mean_s[0]), 4)  # prefill, step(1)
    (0.04, 0.0102)
    """
    n = service.n
    arrival_rate_per_s, isl, osl, cv_i, cv_o, chunk = _check_workload(
        n, arrival_rate_per_s, isl_tokens, osl_tokens, isl_cv, osl_cv, policy, chunk_tokens
    )
    max_running = service.max_running
    prefill_s = service.prefill_s
    decode_steps = osl - 1.0  # decode steps per request
    cv_p = cv_i * service.prefill_elasticity  # the prefill's spread across prompts
    prefill_second_moment_s2 = prefill_s**2 * (1.0 + cv_p**2)  # E[P^2]
    step = service.decode_step_s

    per_tok_max = service.per_token_at_max_batch_s()
    rho_full = arrival_rate_per_s * (prefill_s + decode_steps * per_tok_max)
    rho_p = arrival_rate_per_s * prefill_s
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        capacity = 1.0 / (prefill_s + decode_steps * per_tok_max)
        unlimited_tok = step(np.full(n, 1e9)) / 1e9
        rho_unlimited = arrival_rate_per_s * (prefill_s + decode_steps * unlimited_tok)
        rho_p_safe = np.minimum(rho_p, 0.999999)

        # 1. running batch
        g_tr, h_tr = decode_backlog_gains(rho_p_safe, decode_steps, policy)
        dec = running_batch_fixed_point(
            service, arrival_rate_per_s, prefill_second_moment_s2, decode_steps, rho_p, g_tr, h_tr
        )
        nrun, tau = dec.running_seqs, dec.tpot_mean_s

        # 2. queue wait for a KV slot
        z_peak = occupancy_peakedness(arrival_rate_per_s, h_tr, dec.step_slope_s)
        occ = np.minimum(
            nrun + rho_p, np.where(np.isfinite(max_running), max_running * rho_full, np.inf)
        )
        c_wait, ew, vw = slot_wait_moments(arrival_rate_per_s, occ, max_running, z_peak)

        # 3. wait before the first token, per policy
        rho_prefill = rho_p
        if policy == "continuous":
            ex, vx, p_zero_x = continuous_wait_moments(
                arrival_rate_per_s,
                prefill_second_moment_s2,
                dec.lb1_s,
                dec.lb2_s2,
                rho_p_safe,
                dec.p_idle,
            )
        elif policy == "chunked":
            ex, vx, p_zero_x, rho_prefill = chunked_wait_moments(
                arrival_rate_per_s,
                prefill_s,
                isl,
                chunk,
                cv_i,
                dec.busy_decode_s,
                nrun,
                service.prefill_elasticity,
            )
        else:  # static
            ex, vx, p_zero_x, tau, var_tpot_static, nrun = static_batch_terms(
                service,
                arrival_rate_per_s,
                prefill_s,
                prefill_second_moment_s2,
                decode_steps,
                max_running,
            )
        ttft_mean = prefill_s + ex + ew
        y_var = np.maximum(vx + vw + (prefill_s * cv_p) ** 2, 0.0)
        p_zero = p_zero_x * (1.0 - c_wait)

        # 4. spread of TPOT and E2E
        if policy == "static":
            var_tpot = var_tpot_static
            cov_q0 = np.zeros(n)
        else:
            var_tpot = tpot_variance_s2(
                dec.step_slope_s, nrun, z_peak, rho_p_safe, arrival_rate_per_s, dec.decode_time_s, prefill_second_moment_s2, decode_steps,
                g_tr, dec.own_prefill_var_s2,
            )  # fmt: skip
            cov_q0 = g_tr * dec.own_prefill_var_s2  # Cov(TTFT, decode time) through Q0
        tpot_mean = np.where(decode_steps > 0, tau, 0.0)
        var_tpot = np.where(decode_steps > 0, var_tpot, 0.0)
        e2e_mean = ttft_mean + decode_steps * tau
        e2e_var = e2e_variance_s2(y_var, decode_steps, var_tpot, cov_q0, cv_o, osl, tau)
        # shifts for the percentile fits: the unloaded values are hard lower bounds
        tpot_floor = np.where(decode_steps > 0, np.minimum(step(np.ones(n)), tpot_mean), 0.0)
        e2e_floor = np.minimum(prefill_s + decode_steps * tpot_floor, e2e_mean)

    stable = (rho_full < 1.0) & (rho_prefill < 1.0) & np.isfinite(rho_full)
    reason = np.full(n, OK, dtype=np.int8)
    reason = np.where(~stable & (rho_unlimited >= 1.0), DECODE_SATURATED, reason)
    reason = np.where(~stable & (rho_unlimited < 1.0), KV_CAPACITY, reason)
    reason = np.where(~stable & (rho_prefill >= 1.0), PREFILL_SATURATED, reason).astype(np.int8)
    bad = ~stable

    # 5. percentiles
    # The request's own front-end work (tokenisation, HTTP, admission) delays its first token
    # but runs beside the GPU, so it is outside every utilisation above.
    d = service.request_delay_s
    ttft = _stats(
        ttft_mean + d,
        *(ttft_quantile_s(prefill_s, ex + ew, y_var, p_zero, q, cv_p) + d for q in QUANTILES),
    )
    # static batching has no stalls: a request's TPOT is step(its batch) <= step(M)
    tpot_cap = (
        step(np.where(np.isfinite(max_running), max_running, 1e9)) if policy == "static" else np.inf
    )
    tpot = _stats(
        tpot_mean,
        *(
            np.minimum(shifted_gamma_quantile_s(tpot_floor, tpot_mean, var_tpot, q), tpot_cap)
            for q in QUANTILES
        ),
    )
    e2e = _stats(
        e2e_mean + d,
        *(shifted_gamma_quantile_s(e2e_floor + d, e2e_mean + d, e2e_var, q) for q in QUANTILES),
    )
    itl = None
    if with_itl:
        itl = _mask_inf(
            inter_token_stats(step, nrun, z_peak, dec.step_slope_s, tpot_mean, arrival_rate_per_s, prefill_s, isl,
                              chunk, policy, decode_steps),
            bad,
        )  # fmt: skip
    util = np.maximum(rho_full, rho_prefill)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(
            policy == "chunked",
            np.minimum(
                capacity, np.where(rho_prefill > 0, arrival_rate_per_s / rho_prefill, np.inf)
            ),
            capacity,
        )
    throughput = np.where(stable, arrival_rate_per_s, cap) * osl
    return LoadResult(
        ttft=_mask_inf(ttft, bad),
        tpot=_mask_inf(tpot, bad),
        e2e=_mask_inf(e2e, bad),
        running_mean=np.where(stable, nrun, max_running),
        utilisation=util,
        capacity_req_per_s=cap,
        throughput_tok_per_s=throughput,
        stable=stable,
        reason_code=reason,
        itl=itl,
    )

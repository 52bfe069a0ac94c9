"""What the queueing model serves with: each candidate's service times (:class:`ServiceModel`;
a decode step tabulated on a batch grid, :class:`PiecewiseLinearStep`), the scheduling policies,
and the utilisation they give at a request rate (the server model: ``model`` module docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: Scheduling policies understood by :func:`latency_under_load` and ``perf.validation.queue_sim.simulate``.
POLICIES: tuple[str, ...] = ("continuous", "chunked", "static")

ArrayLike = float | int | np.ndarray


def checked_array(
    name: str, value: ArrayLike, *, low: float, allow_inf: bool = False
) -> np.ndarray:
    """``value`` as a float array (a scalar or 1-D), every element >= ``low`` and finite unless
    ``allow_inf``; otherwise a ValueError that names the field, the value and the allowed range."""
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
        base = checked_array("decode_step_base_s", self.decode_step_base_s, low=0.0)
        per = checked_array("decode_step_per_seq_s", self.decode_step_per_seq_s, low=0.0)
        prefill_s = checked_array("prefill_s", self.prefill_s, low=0.0)
        max_running = checked_array("max_running", self.max_running, low=1.0, allow_inf=True)
        finite = np.isfinite(max_running)
        if np.any(finite & (max_running != np.floor(max_running))):
            raise ValueError(f"max_running: must be whole numbers, got {max_running[finite][0]!r}")
        comp = (
            np.zeros(())
            if self.compute_per_seq_s is None
            else checked_array("compute_per_seq_s", self.compute_per_seq_s, low=0.0)
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
        delay = checked_array("request_delay_s", self.request_delay_s, low=0.0)
        delay = np.broadcast_to(delay, (n,)).astype(float)
        delay.setflags(write=False)
        object.__setattr__(self, "request_delay_s", delay)
        elast = checked_array("prefill_elasticity", self.prefill_elasticity, low=0.0)
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
        # 1, 2, 4, ...: the segment of a batch b >= 1 is its binary exponent (np.frexp, exact),
        # ~4x faster than a binary search (the search's grid, perf.model.service.STEP_GRID)
        self._powers_of_two = bool(np.array_equal(g, 2.0 ** np.arange(g.size)))
        self._rows = np.arange(t.shape[0]) * (g.size - 1)

    def segment(self, b: np.ndarray) -> np.ndarray:
        """Index j of the grid segment [g_j, g_(j+1)] of batches ``b`` >= 1 (the last one
        beyond the grid; NaN and inf there too, as a binary search puts them)."""
        g = self.batches
        if not self._powers_of_two:
            return np.clip(np.searchsorted(g, b, side="right") - 1, 0, g.size - 2)
        j = np.clip(np.frexp(b)[1] - 1, 0, g.size - 2)
        finite = np.isfinite(b)
        if not finite.all():
            j = np.where(finite, j, g.size - 2)
        return j

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        b = np.maximum(np.asarray(batch, dtype=float), 1.0)
        j = self.segment(b)
        rows = self._rows if b.shape == self._rows.shape else np.arange(self.step_s.shape[0]) * (
            self.batches.size - 1)  # fmt: skip
        flat = rows + j
        return self._flat_t[flat] + self._flat_s[flat] * (b - self.batches[j])

    def smallest_fixed_point(
        self, a: np.ndarray, e: np.ndarray, hi: np.ndarray, a_step: np.ndarray | None = None
    ) -> np.ndarray:
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

        ``a_step``: ``a[:, None] * step_s`` when the caller has it (the same ``a`` over the
        running batch's outer passes).
        """
        a = np.asarray(a, dtype=float)[:, None]
        e = np.asarray(e, dtype=float)[:, None]
        nodes = self.batches - 1.0
        # [n, G], in place: a second [n, G] temporary freed at once makes the allocator hand
        # the pages back and fault them in again (~1.5 ms of 2 per call at 10,000 rows)
        gv = (a * self.step_s if a_step is None else a_step) + e
        gv -= nodes
        neg = gv <= 0.0
        j = np.argmax(neg, axis=1)  # first node with g <= 0 (0 if none)
        rows = np.arange(gv.shape[0])
        has = neg[rows, j]
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
    return arrival_rate_per_s * busy_s_per_request(service, osl_tokens)


def busy_s_per_request(service: ServiceModel, osl_tokens: ArrayLike) -> np.ndarray:
    """prefill_s + (osl - 1) x step(M) / M: a request's busy time at the largest batch, so
    ``utilisation`` = rate x it and the capacity (the rate where it reaches 1) = 1 / it.

    >>> round(float(busy_s_per_request(ServiceModel(0.010, 0.0, 0.05, 10), 101)[0]), 9)
    0.15
    """
    return service.prefill_s + (np.asarray(osl_tokens) - 1.0) * service.per_token_at_max_batch_s()

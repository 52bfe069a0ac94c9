"""What the queueing model returns: the mean and percentiles of each latency
(:class:`LatencyStats`) per candidate (:class:`LoadResult`), and why a candidate is unstable
(:data:`REASONS`, in words :func:`unstable_text`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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

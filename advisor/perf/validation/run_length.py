"""Which of a benchmark run's requests a percentile reads, and what that makes the percentile.

The benchmark clients (``vllm bench serve``, ``sglang.bench_serving``) compute a percentile
with ``numpy.percentile``'s default linear interpolation over the run's requests, so the P99 of
a run of at most 101 prompts reads its two slowest requests: one slow request sets it. Such a
tail is its own statistic for the ranges ("p99-short"); what the published short runs' slowest
requests added is in ``short_runs``.
"""

from __future__ import annotations

import math


def slowest_requests_read(requests: int, quantile: float) -> int:
    """How many of a run's slowest requests its linearly interpolated quantile reads.

        k = n - floor(q (n - 1))

    The q quantile of n sorted samples x_0..x_{n-1} interpolates between x_j and x_{j+1},
    j = floor(q (n - 1)); the samples from x_j up are the k slowest. Source: numpy.percentile,
    method "linear" (Hyndman & Fan 1996, definition 7), which both benchmark clients call.

    >>> slowest_requests_read(10, 0.99), slowest_requests_read(100, 0.99)
    (2, 2)
    >>> slowest_requests_read(1000, 0.99), slowest_requests_read(10, 0.5)
    (11, 6)
    """
    if requests < 1:
        raise ValueError(f"requests: got {requests!r}, allowed >= 1")
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile: got {quantile!r}, allowed [0, 1]")
    # the tiny slack keeps q (n - 1) = 98.01 from flooring to 98 via 98.00999...
    return int(requests - math.floor(quantile * (requests - 1) + 1e-9))


#: A run whose P99 reads at most this many requests is "short": one request sets its P99.
SHORT_RUN_REQUESTS_READ = 2


def is_short_run(requests: int) -> bool:
    """A run whose P99 reads at most ``SHORT_RUN_REQUESTS_READ`` requests (n <= 101).

    >>> is_short_run(101), is_short_run(102)
    (True, False)
    """
    return slowest_requests_read(requests, 0.99) <= SHORT_RUN_REQUESTS_READ


def run_statistic_of_tail(statistic: str, requests: float) -> str:
    """The ranges' statistic of a published or forecast tail (``intervals.STATISTICS``): "p99"
    becomes "p99-short" (and "p90" "p90-short") when the run's ``requests`` are stated and its
    quantile (0.99, 0.9: the statistic's own) reads at most ``SHORT_RUN_REQUESTS_READ`` of them;
    any other statistic, or a run of unstated length (0 or not finite), is kept.

    >>> run_statistic_of_tail("p99", 80), run_statistic_of_tail("p99", 1000)
    ('p99-short', 'p99')
    >>> run_statistic_of_tail("p90", 80), run_statistic_of_tail("p99", 0)
    ('p90', 'p99')
    """
    if statistic not in ("p90", "p99") or not (requests and math.isfinite(requests)):
        return statistic
    quantile = int(statistic[1:]) / 100
    short = slowest_requests_read(int(requests), quantile) <= SHORT_RUN_REQUESTS_READ
    return f"{statistic}-short" if short else statistic

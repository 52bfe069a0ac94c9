"""The P99 of a short benchmark run is its slowest request (advisor/perf/validation/short_runs.py):
which requests a client's P99 reads, the published one-client runs' excess of that request
over their median, and the note ``estimate --num-prompts`` prints for such a run (issue 37:
published P99 TTFTs are the family the model misses most, 65% held out)."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.perf.model.replica import ReplicaConfig
from advisor.perf.validation.bench_forecast import forecast_run
from advisor.perf.validation.run_length import slowest_requests_read
from advisor.perf.validation.short_runs import (
    excess_summary,
    published_short_runs,
    short_run_note,
)


@pytest.mark.parametrize("n", [2, 10, 80, 100, 101, 500, 1000])
def test_the_requests_a_p99_reads_are_numpys(n):
    """Hand check against numpy.percentile itself (the clients' call): raising the k slowest
    samples moves the P99, raising the (k + 1)-th slowest does not."""
    k = slowest_requests_read(n, 0.99)
    base = np.arange(n, dtype=float)
    p99 = np.percentile(base, 99)
    below = base.copy()
    below[: n - k] -= 5.0  # every request but the k slowest
    assert np.percentile(below, 99) == pytest.approx(p99)
    if n - k - 1 >= 0:
        moved = base.copy()
        moved[n - k - 1] = n + 10.0  # the (k + 1)-th slowest becomes the slowest
        assert np.percentile(moved, 99) != pytest.approx(p99)


def test_ten_prompts_read_two_requests_and_a_thousand_read_eleven():
    """q (n - 1) = 8.91 for 10 prompts: 0.09 x the 9th + 0.91 x the 10th; 989.01 for 1,000."""
    assert slowest_requests_read(10, 0.99) == 2
    assert slowest_requests_read(1000, 0.99) == 11
    with pytest.raises(ValueError, match="requests: got 0"):
        slowest_requests_read(0, 0.99)


def test_the_published_qwen3_b200_run_has_one_slow_request():
    """sgl-cookbook docs/Qwen/Qwen3.md @eeda7bb, Qwen3-235B-A22B on 8 B200, 10 prompts of
    [1, 1000] tokens, one client (rows C0002-C0004): median 65.22 ms, P99 359.71 ms, so the
    excess the note quotes is 294.49 ms; the mean, 96.27 ms, is one ~380 ms request among
    nine at the median."""
    runs = [t for t in published_short_runs()
            if t.median_ttft_s == pytest.approx(0.06522) and t.p99_ttft_s == pytest.approx(0.35971)]  # fmt: skip
    assert len(runs) == 1
    assert runs[0].requests == 10 and runs[0].engine == "sglang"
    assert runs[0].excess_s == pytest.approx(0.29449)
    # one slow request among nine at the median: its size from the published mean, then
    # numpy's P99 of that run lands on the published P99 (a spread of many would not)
    slow_ms = 10 * 96.27 - 9 * 65.22
    run_ms = np.array([65.22] * 9 + [slow_ms])
    assert np.percentile(run_ms, 99) == pytest.approx(359.71, rel=0.05)


def test_sglang_on_mi300x_published_a_48_s_request():
    """sgl-cookbook docs/autoregressive/Llama/Llama4.md: Llama-4-Scout on 8 MI300X, one client,
    10 prompts, median TTFT 68.57 ms, P99 48,091.05 ms: the largest excess shipped."""
    s = excess_summary("sglang", "cdna3")
    assert s["max_excess_s"] == pytest.approx(48.091 - 0.06857, rel=1e-3)
    assert s["max_run"].model == "llama-4-scout"
    # NVIDIA's SGLang one-client runs stay under 0.3 s (same cookbook, B200 pages)
    assert excess_summary("sglang", "blackwell")["max_excess_s"] < 0.3


def _cfg(gpu: str) -> ReplicaConfig:
    return ReplicaConfig(model=get_model("llama-3.3-70b"), gpu=get_accelerator(gpu), tp=2,
                         weights="fp8", kv="fp8", engine="sglang")  # fmt: skip


def test_a_ten_prompt_forecast_says_its_p99_is_one_request():
    run = forecast_run(_cfg("mi300x"), 1000, 1000, prompts=10, clients=1, client="sglang")
    note = [n for n in run.notes if "slowest requests" in n]
    assert len(note) == 1
    assert "reads its 2 slowest requests" in note[0] and "sglang on CDNA3" in note[0]
    assert "up to 48.0 s" in note[0]
    assert note[0] == short_run_note(10, "sglang", "cdna3")


def test_a_short_runs_forecast_ranges_its_p99_by_the_short_runs():
    """The forecast of 10 prompts from one client ranges its P99 TTFT by the published short
    runs' P99s (their one slow request), one of 1,000 prompts by the longer runs' only."""
    short = forecast_run(_cfg("mi300x"), 1000, 1000, prompts=10, clients=1, client="sglang")
    long = forecast_run(_cfg("mi300x"), 1000, 1000, prompts=1000, clients=1, client="sglang")
    assert "short-run P99 ttft rows" in short.basis["ttft p99"]
    assert "short-run" not in long.basis["ttft p99"]
    # the sgl-cookbook MI300X one-client runs' cold requests (~400-700 x) reach the short
    # run's upper end only: a run of 1,000 prompts reads 11 requests, not the one slow one
    assert short.ranges["ttft"]["p99"][1] > 5 * long.ranges["ttft"]["p99"][1]


def test_a_long_run_has_no_such_note():
    run = forecast_run(_cfg("h100-sxm"), 1000, 200, prompts=1000, qps=2.0, client="sglang")
    assert not any("slowest requests" in n for n in run.notes)


def test_the_client_counts_every_replicas_requests():
    """The client's P99 is over every request it sent: 150 prompts over 2 replicas read the 3
    slowest of 150 (no note), though each replica serves 75 (which alone would read 2)."""
    assert slowest_requests_read(150, 0.99) == 3 and slowest_requests_read(75, 0.99) == 2
    run = forecast_run(_cfg("mi300x"), 1000, 200, prompts=150, clients=8, client="sglang",
                       replicas=2)  # fmt: skip
    assert not any("slowest requests" in n for n in run.notes)
    run = forecast_run(_cfg("mi300x"), 1000, 200, prompts=100, clients=8, client="sglang",
                       replicas=2)  # fmt: skip
    assert any("P99 of 100 prompts reads its 2 slowest" in n for n in run.notes)

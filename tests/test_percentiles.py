"""The percentile check (advisor/perf/validation/percentiles.py) against published median/P99 rows.

Expected values are copied from the measurement files (row ids named) or derived by hand from
the rows' notes (token totals / number of prompts; SGLang's random lengths uniform on [1, L]).
"""

from __future__ import annotations

import math

import pytest

from advisor.perf.validation.measurements import Skipped, load_rows
from advisor.perf.validation.percentiles import (
    PercentileCase,
    percentile_case,
    percentile_report,
)


def _row(rid: str) -> dict:
    return next(r for r in load_rows() if r["id"] == rid)


def test_closed_loop_row_parsed_at_its_concurrency():
    # E0051: DeepSeek-R1 on 8 x B200, SGLang, max concurrency 1, "ttft_ms_p99" = 214.66 ms;
    # notes: 10 prompts, 6101 input / 4210 generated tokens, random lengths with no range ratio.
    pc = percentile_case(_row("E0051"))
    assert isinstance(pc, PercentileCase)
    assert (pc.metric, pc.quantile) == ("ttft", 0.99)
    assert pc.measured_s == pytest.approx(0.21466)
    assert pc.closed_loop and pc.load == 1.0
    assert pc.case.config.model.id == "deepseek-r1" and pc.case.config.gpu.id == "b200"
    assert (pc.case.isl, pc.case.osl) == pytest.approx((610.1, 421.0))
    assert pc.isl_cv == pytest.approx(1 / math.sqrt(3))  # uniform on [1, 1000]


def test_amd_row_and_poisson_row():
    # A0053: DeepSeek-V3.1 on 8 x MI300X, max concurrency 64, "tpot_ms_p99" = 157.84 ms.
    pc = percentile_case(_row("A0053"))
    assert isinstance(pc, PercentileCase)
    assert (pc.metric, pc.quantile, pc.load) == ("tpot", 0.99, 64.0)
    assert pc.measured_s == pytest.approx(0.15784)
    assert pc.case.config.gpu.id == "mi300x"
    # E0461: Llama-3.1-405B on 8 x H200, "request rate 1 req/s (Poisson), 300 prompts", median
    # TTFT 218.808 ms; predicted at the REQUESTED rate (the achieved one is an output).
    pc = percentile_case(_row("E0461"))
    assert isinstance(pc, PercentileCase)
    assert (pc.metric, pc.quantile) == ("ttft", 0.5)
    assert not pc.closed_loop and pc.load == 1.0
    assert pc.measured_s == pytest.approx(0.21880842198152095)
    assert pc.case.config.model.id == "llama-3.1-405b" and pc.case.config.tp == 8


def test_lengths_from_a_bench_serving_json_total():
    # E0409: Llama-3.3-70B on 4 x H200, Poisson 1 req/s, median TTFT 85.745 ms; isl/osl empty,
    # notes: "152612 input / 160347 output tokens over 300 completed requests", random lengths
    # with random_range_ratio 0.0 (SGLang: uniform on [1, 1024]).
    pc = percentile_case(_row("E0409"))
    assert isinstance(pc, PercentileCase)
    assert (pc.case.isl, pc.case.osl) == pytest.approx((152612 / 300, 160347 / 300))
    assert pc.measured_s == pytest.approx(0.08574514742940664, rel=1e-3)
    assert pc.isl_cv == pytest.approx(1 / math.sqrt(3)) and pc.load == 1.0


def test_unrepresentable_rows_say_why_and_other_metrics_are_not_percentiles():
    s = percentile_case(_row("A0744"))  # Kimi-K2.5 P99 TTFT: model not in the catalog
    assert isinstance(s, Skipped) and "Kimi-K2.5" in s.reason
    assert percentile_case(_row("S0001")) is None  # output throughput: not a percentile


@pytest.mark.parametrize(
    "rid",
    [
        "C0130",  # "--random-input-len 1024 ... but no --dataset-name, so bench_serving's
        #           default dataset (ShareGPT ...)": 301701 / 188375 tokens over 1000 prompts
        "S0020",  # the same run as read from another page revision ("consistent with
        #           bench_serving default ShareGPT")
        "E0178",  # "dataset: default (sharegpt)", 100 prompts of 331.8 / 212.5 tokens on average
    ],
)
def test_sglang_default_dataset_is_sharegpt_not_random(rid):
    # sglang.bench_serving without --dataset-name runs ShareGPT (its default), even with
    # --random-input-len given: only the mean lengths are known, and their spread sets the
    # percentiles, so these rows say why they are not predicted (they were read as uniform).
    s = percentile_case(_row(rid))
    assert isinstance(s, Skipped) and "ShareGPT" in s.reason


def test_random_commands_under_a_sharegpt_heading_stay_random():
    # C0004: "The section text mentions ShareGPT but the listed commands use --dataset-name
    # random": SGLang's random lengths, uniform on [1, L].
    pc = percentile_case(_row("C0004"))
    assert isinstance(pc, PercentileCase) and pc.isl_cv == pytest.approx(1 / math.sqrt(3))


def _far_above_capacity() -> dict:
    """E0461 again at 1000 req/s, far above the capacity of 8 x H200 for ~510/530-token requests
    of a 405B model, with a stated --seed 7 that does not reproduce its lengths: no replay of
    the finite run (client_draws.client_arrivals), so the queueing model answers, unstable."""
    r = _row("E0461")
    return dict(r, id="X0001", batch_or_concurrency="request rate 1000 req/s",
                notes=r["notes"] + " --seed 7")  # fmt: skip


@pytest.fixture(scope="module")
def report():
    # E0051, A0053 and E0461 as published; X0001 (_far_above_capacity) predicted unstable: it
    # must still be counted (as a failure).
    rows = [_row("E0051"), _row("A0053"), _row("E0461"), _row("A0744")]
    rows.append(_far_above_capacity())
    return percentile_report(rows)


def test_summary_counts_every_representable_row(report):
    assert (report["rows_total"], report["rows_used"], report["rows_skipped"]) == (5, 4, 1)
    tables = report["by_percentile"]
    assert sum(v["rows"] for v in tables["by_metric"].values()) == 4  # no row dropped
    assert sum(v["rows"] for v in tables["headline"].values()) == 4  # all TTFT / TPOT
    assert [f["id"] for f in report["failures"]] == ["X0001"]
    high = tables["headline"]["P50 high"]
    # counted as a 100 % error (validate.error_stats), listed with an infinite one
    assert high["rows"] == 1 and high["failures"] == 1 and high["median_ape_pct"] == 100.0
    row = next(r for r in report["rows"] if r["id"] == "X0001")
    assert row["level"] == "high" and row["error_pct"] == math.inf


def test_range_coverage_scores_the_published_percentile_against_the_answers_range(monkeypatch):
    import advisor.perf.model.intervals as intervals
    from advisor.perf.validation.percentiles import (
        percentile_cases,
        predict_percentiles,
        range_coverage,
    )

    # Every answer's 80% range fixed at [0.5, 1.6] x the prediction. Measured / predicted
    # (the report fixture's rows, data/calibration.yaml of 2026-12-05): E0051 P99 TTFT
    # 214.7 / 130.0 ms = 1.65 (the replayed run's longest prompts), outside; A0053 P99 TPOT
    # 157.8 / 103.8 ms = 1.52, inside; E0461 P50 TTFT 218.8 / 194.8 ms = 1.12 (its run replayed
    # on SGLang's seeded lengths and send times), inside; X0001 predicted unstable, outside.
    fixed = intervals.Interval(0.5, 1.6, "fixed", 10, True)
    monkeypatch.setattr(intervals, "range_factors", lambda *a, **k: fixed)
    rows = [_row("E0051"), _row("A0053"), _row("E0461")]
    rows.append(_far_above_capacity())
    cov = range_coverage(predict_percentiles(percentile_cases(rows)[0]))
    assert {k: (v["rows"], v["inside_pct"]) for k, v in cov.items()} == {
        "P50": (2, 50.0), "P50 TTFT": (2, 50.0),
        "P99": (2, 50.0), "P99 TPOT": (1, 100.0), "P99 TTFT": (1, 0.0),
    }  # fmt: skip


def test_one_clients_tpot_tail_is_flat_and_its_e2e_median_is_the_median_answers():
    from advisor.perf.validation.percentiles import percentile_cases, predict_percentiles

    # sgl-cookbook DeepSeek-V3.1 on 8 MI300X, one client, 10 prompts (A0004 / A0005): TPOT P50
    # 23.90 ms, P99 24.03 ms, a ratio of 1.005: one client decodes alone, every request at the
    # same step. The run is replayed on the prompts SGLang's seed sent (client_draws.client_lengths),
    # so the predicted ratio is as flat; the queueing model's length spread put it at 1.1 or more.
    p50, p99 = predict_percentiles(percentile_cases([_row("A0004"), _row("A0005")])[0])
    assert p99.predicted_s / p50.predicted_s == pytest.approx(24.03 / 23.90, abs=0.02)
    # sgl-cookbook DeepSeek-R1 on 8 B200, one client, 10 prompts (E0056, E2E P50): seed 1's
    # outputs are 144 129 972 583 749 508 390 281 178 276 tokens, so the median answer is
    # between the 281- and the 390-token ones (requests 8 and 7), not the mean's (421).
    from advisor.perf.validation.bench_run import replay_runs

    (pc,) = percentile_cases([_row("E0056")])[0]
    e2e = replay_runs([pc.case])[0].e2e_s
    got = predict_percentiles([pc])[0].predicted_s
    assert e2e[7] < got < e2e[6]


def test_itl_tail_of_a_replayed_run_is_its_prefill_stalls():
    """sgl-cookbook DeepSeek-R1-0528 on 8 B200, 100 clients, 500 random prompts (E0070 / E0071):
    median ITL 26.36 ms, P99 150.08 ms, a ratio of 5.7: most gaps are a decode step of about 100
    answers, the tail is a step that also prefilled an arriving prompt (SGLang runs the prefill
    between two decode steps). The run is replayed on the prompts its seed sent, and the ITL
    quantiles are read from the replay's gaps, one per answer per iteration; the Poisson
    mixture of the queueing model (what ``estimate`` prints) puts P99 at 1.7x the published value."""
    from advisor.perf.validation.percentiles import percentile_cases, predict_percentiles

    p50, p99 = predict_percentiles(percentile_cases([_row("E0070"), _row("E0071")])[0])
    assert p50.predicted_s == pytest.approx(0.02636, rel=0.10)
    assert p99.predicted_s == pytest.approx(0.15008, rel=0.15)
    assert 4.5 < p99.predicted_s / p50.predicted_s < 7.0  # published 150.08 / 26.36 = 5.69
    # What estimate prints for a steady service, the mixture, on the same row: well above.
    steady = predict_percentiles(percentile_cases([_row("E0071")])[0], replay=False)[0]
    assert steady.predicted_s > 1.4 * 0.15008

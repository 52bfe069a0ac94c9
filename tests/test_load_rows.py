"""Request-rate measurement rows (advisor/perf/validation/load_rows.py): parsing, load levels, validation.

Rows are read from data/measurements*.csv; expected values are copied from the rows' text.
"""

from __future__ import annotations

import pytest

from advisor.perf.validation.load_rows import (
    load_level,
    parse_request_rate,
    rate_rows,
    summarise_validation,
    validate_against_rows,
)
from advisor.physics.queueing.service import ServiceModel

# ------------------------------------------------------------------ validation path


def _measurement_rows() -> list[dict]:
    from advisor.catalog.loader import measurement_rows

    return list(measurement_rows())


def test_parse_rate_and_load_levels():
    assert parse_request_rate("request rate QPS=8 (measured 7 req/s)") == (8.0, 7.0)
    assert parse_request_rate("concurrency 8 (150 requests)") is None
    # 32 requested, 16 achieved: the server could not keep up; 8 -> 7 is drain + rounding
    assert load_level(32, 16) == "saturated" and load_level(8, 7) == "steady"


def _llama31_8b_h100_tp1(row: dict) -> ServiceModel:
    """Hand-made roofline model for Llama-3.1-8B BF16 on one H100-SXM (exercise only).

    weights 16.06e9 B / (3.35e12 B/s x 0.8 achievable) = 6.0 ms per step; KV 131,072 B/token
    (2 x 32 layers x 8 KV heads x 128 x 2 B) at context isl + osl/2, / 2.68e12 B/s per sequence;
    prefill 2 x 8.03e9 x isl FLOP / (989e12 x 0.5 achievable); 512 slots. Not calibrated: the
    real coefficients come from the performance model, and the real validation runs in the
    lead's `validate` command.
    """
    isl, osl = float(row["isl"]), float(row["osl"])
    return ServiceModel(
        decode_step_base_s=16.06e9 / (3.35e12 * 0.8),
        decode_step_per_seq_s=131072 * (isl + osl / 2) / 2.68e12,
        prefill_s=2 * 8.03e9 * isl / (989e12 * 0.5),
        max_running=512,
    )


def test_validate_against_rows_exercises_the_path():
    rows = [
        r
        for r in _measurement_rows()
        if r["model"] == "Llama-3.1-8B" and r["gpu"] == "H100-SXM-80GB" and r["tp"] == "1"
    ]
    rr = rate_rows(rows)
    assert rr, "the H100 8B request-rate rows are in data/measurements.csv"
    res = validate_against_rows(rr, _llama31_8b_h100_tp1)
    assert len(res) == len(rr)
    levels = [d["load_level"] for d in res]
    assert levels == sorted(levels, key=["steady", "saturated", "burst"].index)  # grouped
    steady = [d for d in res if d["load_level"] == "steady"]
    assert steady and all(d["abs_pct_error"] is not None for d in steady if d["stable"])
    for d in steady:  # the error is |pred - meas| / meas
        if d["abs_pct_error"] is not None:
            want = abs(d["predicted_ms"] - d["measured_ms"]) / d["measured_ms"] * 100
            assert d["abs_pct_error"] == pytest.approx(want)
            # a sanity bound for an uncalibrated hand model at steady load (measured 6-29 ms)
            assert d["abs_pct_error"] < 60.0, d
    assert all(d["abs_pct_error"] is None for d in res if d["load_level"] != "steady")
    burst = [d for d in res if d["load_level"] == "burst" and d["measured_output_tok_s"]]
    assert burst and all(d["capacity_abs_pct_error"] is not None for d in burst)
    summary = summarise_validation(res)
    assert any(k.startswith("steady:") for k in summary)

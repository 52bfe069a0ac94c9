"""Collective measurement rows (advisor/perf/collective_fit.py): parsing, fit, validation.

Expected values are read off data/measurements.csv (the row ids are named); the stored
calibration in advisor/physics/collectives.py must be what a fresh fit gives.
"""

from __future__ import annotations

import pytest

from advisor.perf import collective_fit as f
from advisor.physics import collectives as c

# ---- validation against data/measurements.csv -----------------------------------------------


@pytest.fixture(scope="module")
def rows():
    return f.load_collective_rows()


def test_row_parsing(rows):
    by_id = {r.row_id: r for r in rows}
    assert by_id["M0975"].message_bytes == 65536 and by_id["M0975"].n_gpus == 8
    assert by_id["M0997"].message_bytes == 128 * 1024
    assert by_id["M1049"].message_bytes == 8 * 2**30  # "1-8 GiB" -> top of the sweep
    assert by_id["M1051"].message_bytes == 1024  # 512 bf16 elements
    assert by_id["M1016"].algorithms == ("ring",)
    assert by_id["M1017"].algorithms == ("nvls",)  # notes: NVLS used for n>=5
    assert by_id["M1015"].algorithms == ("ring",)  # n=4 < 5
    assert by_id["M1043"].reason  # p2p copy: not a collective


def test_validation_median_error_within_10pct(rows):
    res = f.validate_collectives(rows)
    busbw = f.summarize(res, ["allreduce_busbw_gbps"])
    lat = f.summarize(res, ["allreduce_latency_us"])
    both = f.summarize(res, ["allreduce_busbw_gbps", "allreduce_latency_us"])
    assert busbw["rows"] >= 25 and lat["rows"] >= 10
    assert both["median_abs_pct"] <= 10.0
    assert busbw["median_abs_pct"] <= 10.0
    unrep = [v for v in res if v.predicted is None]
    assert all(v.reason for v in unrep)


def test_stored_calibration_reproduces_fit(rows):
    fitted = f.fit_calibration(rows)
    cal = c.CALIBRATION
    for k, v in cal["link_efficiency"].items():
        assert fitted["link_efficiency"][k] == pytest.approx(v, rel=1e-3), k
    for k in ("nvls_efficiency", "custom_efficiency", "custom_base_latency_s"):
        assert fitted[k] == pytest.approx(cal[k], rel=1e-3, abs=1e-9), k
    for k, v in cal["harness_overhead_s"].items():
        assert fitted["harness_overhead_s"][k] == pytest.approx(v, rel=1e-3, abs=1e-9), k

"""Collective measurement rows (advisor/perf/validation/collectives.py): parsing, validation, and
the fit of the collectives constants (advisor/perf/calibration/collective_fit.py).

Expected values are read off data/measurements.csv (the row ids are named); the stored
calibration in advisor/physics/collectives.py must be what a fresh fit gives.
"""

from __future__ import annotations

import pytest

from advisor.perf.calibration import collective_fit as f
from advisor.perf.validation import collectives as cr
from advisor.physics import collectives as c

# ---- validation against data/measurements.csv -----------------------------------------------


@pytest.fixture(scope="module")
def rows():
    return cr.load_collective_rows()


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
    res = cr.validate_collectives(rows)
    busbw = cr.summarize(res, ["allreduce_busbw_gbps"])
    lat = cr.summarize(res, ["allreduce_latency_us"])
    both = cr.summarize(res, ["allreduce_busbw_gbps", "allreduce_latency_us"])
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


# ---- the latency-bound regime: NCCL's protocols (issue 37) ----------------------------------


def test_small_allreduce_grows_at_the_ll_protocols_half_bandwidth(rows):
    # stas00/ml-engineering network/benchmarks (rows M0999, M1000: NCCL 2.27.7 through
    # torch.distributed, 8 x H200 NVLink4): busbw 23.94 GB/s at 512 KiB and 39.93 GB/s at 1 MiB,
    # i.e. t = S x 1.75 / busbw = 38.33 us and 45.96 us: +7.63 us for the extra 512 KiB. The
    # harness's own overhead cancels in the difference; what is left is the protocol's rate.
    # NCCL runs these sizes with LL (tuning.cc), whose bus bandwidth is half the Simple one,
    # capped at 141 GB/s on Hopper: 1.75 x 524288 / 141e9 = 6.51 us. At Simple's full rate
    # (0.783 x 450 GB/s) it would be 2.60 us, and NVLS's 1.125 x 524288 / 307 GB/s 1.92 us.
    from advisor.catalog.loader import get_interconnect

    by_id = {r.row_id: r for r in rows}
    measured = [cr.measured_time_s(by_id[i]) for i in ("M0999", "M1000")]
    assert measured[1] - measured[0] == pytest.approx(7.63e-6, abs=0.01e-6)
    nvl = get_interconnect("nvlink4")
    model = [
        float(c.allreduce_time_s(s, 8, nvl, algorithms=c.NCCL_ALGORITHMS)) for s in (2**19, 2**20)
    ]
    assert model[1] - model[0] == pytest.approx(6.51e-6, abs=0.02e-6)
    assert c.allreduce(2**20, 8, nvl, algorithms=c.NCCL_ALGORITHMS).algorithm == "ring"


def test_small_ring_collective_against_a_kernel_timed_row(rows):
    # Megatron-LM PR 5596 (row M1063): NCCL ring all-gather of a 2 MiB buffer on 8 x H100,
    # 20.2 us of kernel device time (no harness around it). Hand calculation with NCCL's LL
    # protocol (tuning.cc: base 6.6 us, 0.6 us per NVLink step, half bandwidth capped at
    # 141 GB/s): 6.6 + 7 x 0.6 + 0.875 x 2097152 / 141e9 = 23.81 us (+18%). With one Simple-like
    # alpha of 2.2 us at full bandwidth (the model before) it was 27.2 us (+35%).
    by_id = {v.row_id: v for v in cr.validate_collectives([r for r in rows if r.row_id == "M1063"])}
    assert by_id["M1063"].measured == 20.2
    assert by_id["M1063"].predicted == pytest.approx(23.81, abs=0.01)
    assert by_id["M1063"].abs_pct_error < 20

"""A collective's predicted time carries a range from held-out errors of the published rows
nearest it in size (advisor/perf/validation/collective_ranges.py)."""

from __future__ import annotations

import json
import math
import re

import pytest

from advisor.catalog import get_interconnect
from advisor.perf.validation.collective_ranges import (
    HeldOutRow,
    collective_range,
    held_out_rows,
)
from advisor.physics.collectives import collective


def _nvls_8(nbytes: float):
    link = get_interconnect("nvlink4")
    r = collective("allreduce", nbytes, 8, link)
    return r, collective_range(link, nbytes, r.time_s)


def test_the_16_mib_range_holds_the_published_nvls_times_the_point_misses():
    # Azure's AI benchmarking guide (samuel-bohman/AI-benchmarking-guide, nccl-tests with
    # NCCL_ALGO=NVLS, 8 GPUs, rows K0136 and K0160): 16 MiB at 234.45 GB/s busbw on H100 and
    # 240.37 GB/s on H200, i.e. 1.75 x 16,777,216 B / busbw = 125.2 us and 122.1 us. The model's
    # NVLS line prices no chunk loops and says 91.1 us, below both; the range, read from the
    # held-out rows nearest 16 MiB, reaches them.
    r, span = _nvls_8(16 * 2**20)
    measured_us = [1.75 * 16 * 2**20 / bw / 1e3 for bw in (234.45, 240.37)]
    assert [round(t, 1) for t in measured_us] == [125.2, 122.1]
    assert all(r.time_s * 1e6 < t < span.high_s * 1e6 for t in measured_us)
    assert span.rows == 12 and "on nvlink" in span.basis


def test_one_sweep_does_not_make_the_range_alone():
    # Twelve rows of one sweep at the very size asked, all exact (ratio 1.0), and rows of four
    # other sources further away, all 2x slow: at most PER_SOURCE = 3 rows come from one source,
    # so the range reaches the other sources' 2x. Twelve of one sweep would say "exact".
    one = tuple(HeldOutRow(f"a{i}", "nvlink", 2.0**20, 8, 1.0, "sweep A") for i in range(12))
    others = tuple(HeldOutRow(f"{s}{i}", "nvlink", 2.0**22, 8, 2.0, f"source {s}")
                   for s in "BCDE" for i in range(3))  # fmt: skip
    span = collective_range(get_interconnect("nvlink4"), 2.0**20, 1e-5, 0.8, one + others)
    assert span.rows == 12 and span.low_ratio == 1.0 and span.high_ratio == 2.0


def test_the_8_gib_range_is_narrow_where_the_rows_agree():
    # 8 GiB on 8 x H200 with NVLS, K0169: 480.94 GB/s, 1.75 x 2^33 / 480.94e9 = 31,256 us.
    # Large NVLS rows repeat within a few percent, so the range is much narrower than at 16 MiB.
    r, span = _nvls_8(8 * 2**30)
    assert span.low_s * 1e6 < 1.75 * 2**33 / 480.94e9 * 1e6 < span.high_s * 1e6
    _, mid = _nvls_8(16 * 2**20)
    assert span.high_ratio / span.low_ratio < mid.high_ratio / mid.low_ratio


def test_every_held_out_row_is_kept_a_failed_one_as_an_infinite_ratio():
    # Never drop a row because the model failed on it: a failed fit's row tops the range.
    rows = tuple(HeldOutRow(f"r{i}", "nvlink", 2.0**20, 8, 1.0) for i in range(11))
    rows += (HeldOutRow("failed", "nvlink", 2.0**20, 8, math.inf),)
    span = collective_range(get_interconnect("nvlink4"), 2.0**20, 1e-5, 0.99, rows)
    assert span.high_s == math.inf and span.low_s == pytest.approx(1e-5)
    # All 258 published all-reduce rows of data/crossval.yaml are read (none dropped).
    assert len(held_out_rows()) == 258


def test_a_link_kind_with_too_few_rows_pools_every_kind_and_says_so():
    link = get_interconnect("pcie5")  # one PCIe all-reduce row (M1049, 8 x RTX 5090)
    r = collective("allreduce", 4e6, 8, link)
    span = collective_range(link, 4e6, r.time_s)
    assert "on any link (1 published row on pcie, fewer than 10: not a check" in span.basis
    # The rows are 8-GPU runs: a 4-GPU PCIe all-reduce, and an all-gather, say they are outside.
    span = collective_range(link, 4e6, r.time_s, n_gpus=4, op="allgather")
    assert "4 GPUs lie outside the rows' 8 GPUs" in span.basis
    assert "no allgather rows are held out" in span.basis


def test_the_cli_prints_the_range_and_refuses_a_bad_confidence(run_cli):
    code, out, _ = run_cli(["collective", "--gpu", "h200-sxm", "--n", "8", "--bytes", "16777216",
                            "--json"])  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["confidence"] == 0.8
    lo, hi = doc["time_us_range"]
    assert (
        lo < doc["time_us"] < hi
        and "published all-reduce rows nearest in size" in doc["range_basis"]
    )
    code, out, _ = run_cli(["collective", "--gpu", "h200-sxm", "--n", "8", "--bytes", "16777216"])
    assert re.search(r"80% range [\d,.]+-[\d,.]+ us: .*measured [\d.]+-[\d.]+x of predicted", out)
    code, _, err = run_cli(["collective", "--gpu", "h100-sxm", "--n", "8", "--bytes", "1e6",
                            "--confidence", "2"])  # fmt: skip
    assert code == 2 and "--confidence" in err and "0.5" in err and "0.99" in err
    code, out, _ = run_cli(["collective", "--gpu", "h100-sxm", "--n", "1", "--bytes", "100",
                            "--json"])  # fmt: skip
    assert code == 0 and json.loads(out)["time_us_range"] is None

"""Random-dataset lengths of InferenceX runs (advisor/perf/validation/measurements.py ``mean_random_length``).

InferenceX's workflow sets RANDOM_RANGE_RATIO 0.8 (.github/workflows/benchmark-tmpl.yml, at
every commit read, March to August 2026) and its utils/bench_serving/benchmark_serving.py draws
each length with np.random.randint(int(L x 0.8), L + 1): a "1k/1k" run averages
(819 + 1024) / 2 = 921.5 tokens each way. Expected values below are hand calculations and figures copied from the rows.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from advisor.perf.validation.measurements import _lengths, _num, cases, load_rows

RANGE = "lengths uniform on [int(0.8 x L), L], mean 921.5 for L = 1024"


def test_a_row_that_states_its_range_is_read_at_the_mean_length():
    row = {"isl": "1024", "osl": "8192", "notes": f"closed loop at conc 4; {RANGE}"}
    assert _lengths(row) == (921.5, 7372.5)  # (819 + 1024) / 2, (6553 + 8192) / 2
    # a row that does not say how its lengths were drawn keeps the stated ones
    assert _lengths({"isl": "1024", "osl": "1024", "notes": "fixed lengths"}) == (1024, 1024)


def test_every_inferencex_harness_row_with_nominal_lengths_states_the_range():
    # a new row from the harness read at its nominal lengths would be ~11% long each way
    rows = [r for r in load_rows() if "SemiAnalysisAI/InferenceX" in r["source"]]
    assert len(rows) >= 98
    missing = [r["id"] for r in rows if r["isl"] and r["osl"] and RANGE[:40] not in r["notes"]]
    assert missing == []
    by_id = {c.id: c for c in cases()[0]}
    assert by_id["N0014"].isl == by_id["N0014"].osl == 921.5  # H200 sweep, nominal 1k/1k
    assert (by_id["R0101"].isl, by_id["R0101"].osl) == (7372.5, 921.5)  # MI325X, nominal 8k/1k


def test_the_runs_own_figures_agree_with_the_harness_range():
    # Each issue-870/890 table gives mean E2E, TTFT and TPOT of one run: output tokens per request
    # = 1 + (E2E - TTFT) / TPOT. The harness's range says 921.5 of a nominal 1,024 (0.90); the
    # rows give 0.886-0.908 (a check of the setting, not an input to any prediction).
    runs: dict[tuple, dict] = defaultdict(dict)
    for r in load_rows():
        if re.search(r"InferenceX/issues/(870|890)", r["source"]):
            key = (r["source"], r["gpu"], r["isl"], r["osl"], r["batch_or_concurrency"])
            runs[key][r["metric"]] = _num(r["value"])
    ratios = [
        (1 + (m["e2e_s_mean"] - m["ttft_ms_mean"] / 1e3) / (m["tpot_ms_mean"] / 1e3)) / float(k[3])
        for k, m in runs.items()
        if {"e2e_s_mean", "ttft_ms_mean", "tpot_ms_mean"} <= m.keys()
    ]
    assert len(ratios) >= 9
    assert min(ratios) > 0.88 and max(ratios) < 0.91
    assert sum(ratios) / len(ratios) == pytest.approx(921.5 / 1024, abs=0.01)

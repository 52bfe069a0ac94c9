"""Prediction intervals (advisor/perf/model/intervals.py) on hand-made tables of held-out errors.

Every expected value is derived by hand in the comment beside it: the quantile at p of n sorted
values x_(1)..x_(n) (type 6, numpy's "weibull") is x_(h) interpolated in logs at h = p (n + 1),
clamped to x_(1) and x_(n).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from advisor.perf.model.intervals import (
    ErrorRow,
    ErrorTable,
    coverage,
    estimate_intervals,
    interval_factors,
    rows_from_doc,
)

#: measured / predicted of 11 held-out TTFT rows (vLLM on Hopper), sorted.
RATIOS = (0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.4, 2.0)
#: Their 80% bounds (test_quantiles_of_a_hand_made_table_at_80_and_50_percent).
LOW_HIGH_80 = (0.5348, 1.8623)


def rows(
    kind="ttft", engine="vllm", family="hopper", ratios=RATIOS, calibrated=True, tag="r", **fields
):
    """Held-out rows at ``ratios``; ``fields`` sets the other ErrorRow fields (moe, source...)."""
    return [
        ErrorRow(f"{tag}{i}", kind, engine, family, calibrated, math.log(x), **fields)
        for i, x in enumerate(ratios)
    ]


def test_quantiles_of_a_hand_made_table_at_80_and_50_percent():
    t = ErrorTable(tuple(rows()), {})
    iv = interval_factors("ttft", "vllm", "hopper", 0.8, table=t)
    # c = 0.8: p = 0.1 -> h = 12 x 0.1 = 1.2 -> 0.2 of the way (in logs) from x_(1) = 0.5 to
    # x_(2) = 0.7: 0.5 x 1.4^0.2 = 0.5348; p = 0.9 -> h = 10.8 -> from x_(10) = 1.4 to
    # x_(11) = 2.0: 1.4 x (2 / 1.4)^0.8 = 1.8623
    assert (iv.low, iv.high) == pytest.approx(LOW_HIGH_80, abs=1e-4)
    assert iv.of(100.0) == pytest.approx([53.48, 186.23], abs=1e-2)
    assert iv.calibrated and iv.rows == 11 and "vllm on hopper" in iv.basis
    iv = interval_factors("ttft", "vllm", "hopper", 0.5, table=t)
    # c = 0.5: h = 12 x 0.25 = 3 -> x_(3) = 0.8; h = 9 -> x_(9) = 1.2
    assert (iv.low, iv.high) == pytest.approx((0.8, 1.2))


def test_fallback_hierarchy_engine_family_then_family_then_engine_then_all():
    t = ErrorTable(
        tuple(
            rows()  # 11 vllm/hopper rows: ratios 0.5 .. 2.0
            + rows(engine="trtllm", ratios=(1.0,) * 3, tag="a")  # 3 trtllm/hopper
            + rows(engine="trtllm", family="ampere", ratios=(3.0,) * 4, tag="b")  # 4 trtllm/ampere
        ),
        {},
    )
    # trtllm on hopper: 3 rows < 10 -> hopper any engine: 14 rows; c = 0.8: h = 1.5 and 13.5.
    # sorted: 0.5, 0.7, 0.8, 0.9, 0.95, 1.0 x4, 1.05, 1.1, 1.2, 1.4, 2.0
    # halfway (in logs) from x_(1) = 0.5 to x_(2) = 0.7: sqrt(0.35) = 0.5916;
    # from x_(13) = 1.4 to x_(14) = 2.0: sqrt(2.8) = 1.6733
    iv = interval_factors("ttft", "trtllm", "hopper", 0.8, table=t)
    assert "hopper, any engine" in iv.basis and iv.rows == 14
    assert (iv.low, iv.high) == pytest.approx((0.5916, 1.6733), abs=1e-4)
    # vllm on ampere: no ampere vllm rows, ampere only 4 -> vllm any accelerator: the 11 rows
    iv = interval_factors("ttft", "vllm", "ampere", 0.8, table=t)
    assert "vllm, any accelerator" in iv.basis
    assert (iv.low, iv.high) == pytest.approx(LOW_HIGH_80, abs=1e-4)
    # sglang on ampere: nothing at the first three levels -> all 18 rows; h = 1.9 and 17.1:
    # 0.5 x 1.4^0.9 = 0.6768; x_(15)..x_(18) = 3.0 -> 3.0
    iv = interval_factors("ttft", "sglang", "ampere", 0.8, table=t)
    assert "all engines" in iv.basis and iv.rows == 18
    assert (iv.low, iv.high) == pytest.approx((0.6768, 3.0), abs=1e-4)


def test_uncalibrated_family_is_wider_by_the_leave_one_family_out_spread():
    t = ErrorTable(tuple(rows()), {("gpu", "TTFT"): 35.0, ("gpu", "TTFT/ITL under load"): 20.0})
    iv = interval_factors("ttft", "vllm", "cdna3", 0.8, table=t, family_calibrated=False)
    # base: the 11 vllm rows, [0.5348, 1.8623]; w = ln(1.35) x z(0.9) / z(0.95)
    #   = 0.30010 x 1.28155 / 1.64485 = 0.23382 (the larger P90 of the two TTFT families)
    # -> [0.5348 e^-0.23382, 1.8623 e^0.23382] = [0.4233, 2.3529]
    assert not iv.calibrated
    assert (iv.low, iv.high) == pytest.approx((0.4233, 2.3529), abs=1e-4)
    assert "uncalibrated cdna3 family" in iv.basis and "P90 35%" in iv.basis
    # family and engine both uncalibrated: w = sqrt(2) x 0.23382 with an engine P90 of 35% too
    t2 = ErrorTable(t.rows, {("gpu", "TTFT"): 35.0, ("engine", "TTFT"): 35.0})
    iv2 = interval_factors(
        "ttft", "vllm", "cdna3", 0.8, table=t2, family_calibrated=False, engine_calibrated=False
    )
    assert iv2.high == pytest.approx(1.8623 * math.exp(math.sqrt(2) * 0.23382), abs=1e-3)


def test_uncalibrated_rows_of_their_own_extend_the_interval():
    # 11 calibrated rows [0.5348, 1.8623] + 11 rows predicted from priors, measured 2x-4x
    # slower than predicted (ratios 2.0 .. 4.0 step 0.2): their c = 0.8 quantiles are
    # 2.0 x 1.1^0.2 = 2.0385 (h = 1.2) and 3.8 x (4 / 3.8)^0.8 = 3.9592 (h = 10.8)
    slow = tuple(2.0 + 0.2 * i for i in range(11))
    t = ErrorTable(tuple(rows() + rows(ratios=slow, calibrated=False, tag="u")), {})
    iv = interval_factors("ttft", "vllm", "cdna3", 0.8, table=t, family_calibrated=False)
    # the hull, no spread in the table (w = 0): [min(0.5348, 2.0385), max(1.8623, 3.9592)]
    assert (iv.low, iv.high) == pytest.approx((0.5348, 3.9592), abs=1e-4)
    # a calibrated query ignores them
    iv = interval_factors("ttft", "vllm", "hopper", 0.8, table=t)
    assert (iv.low, iv.high) == pytest.approx(LOW_HIGH_80, abs=1e-4)


def test_reader_maps_case_kinds_and_keeps_failed_predictions():
    doc = {"loso_rows": [
        # batch-1 decode in tok/s: measured 50 tok/s vs 40 predicted = TPOT 0.8x predicted
        {"id": "a", "kind": "decode_b1", "family": "batch-1 decode", "engine": "vllm",
         "accelerator_family": "hopper", "calibrated": True, "measured": 50.0, "predicted": 40.0},
        # a load row predicted unstable (inf): kept, at the worst finite TTFT miss that way
        {"id": "b", "kind": "load_ttft", "family": "TTFT/ITL under load", "engine": "vllm",
         "accelerator_family": "hopper", "calibrated": True, "measured": 0.2,
         "predicted": float("inf")},
        # TTFT rows measured at 0.5x and 1.5x the prediction
        {"id": "d", "kind": "ttft_b1", "family": "TTFT", "engine": "vllm",
         "accelerator_family": "hopper", "calibrated": True, "measured": 0.05, "predicted": 0.1},
        {"id": "e", "kind": "ttft_b1", "family": "TTFT", "engine": "vllm",
         "accelerator_family": "hopper", "calibrated": True, "measured": 0.15, "predicted": 0.1},
        # a throughput predicted 0 with no finite throughput row: 100x the other way
        {"id": "f", "kind": "offline", "family": "offline throughput", "engine": "vllm",
         "accelerator_family": "hopper", "calibrated": True, "measured": 900.0, "predicted": 0.0},
        {"id": "c", "kind": "allreduce_latency_us", "family": "all-reduce", "engine": "nccl",
         "accelerator_family": "hopper", "calibrated": True, "measured": 1.0, "predicted": 1.0},
    ]}  # fmt: skip
    got = {r.id: r for r in rows_from_doc(doc)}
    assert set(got) == {"a", "b", "d", "e", "f"}  # all-reduce is no headline number
    assert got["a"].kind == "tpot" and got["a"].log_ratio == pytest.approx(math.log(0.8))
    assert got["b"].kind == "ttft" and got["b"].log_ratio == pytest.approx(math.log(0.5))
    assert got["f"].kind == "throughput" and got["f"].log_ratio == pytest.approx(math.log(100))


def test_coverage_scores_each_row_by_an_interval_built_without_it():
    # 21 rows with log ratios 0, 0.01, ..., 0.20 (j / 100). Leaving row j out leaves 20 values;
    # c = 0.8 -> h = 21 x 0.1 = 2.1 and 18.9. For 3 <= j <= 17 the bounds are 0.011 and 0.189,
    # j inside. j = 2: remaining 0, 0.01, 0.03 -> low 0.01 + 0.1 x 0.02 = 0.012 <= 0.02: inside;
    # j = 1: remaining 0, 0.02, 0.03 -> low 0.021 > 0.01: outside, j = 0 too; j = 18 inside and
    # 19, 20 outside by symmetry. Inside: 17 of 21 = 81.0% (type 7 gave 15 of 21). No sources
    # given: each row is its own, so leaving its source out is leaving the row out.
    t = ErrorTable(tuple(ErrorRow(f"r{j}", "tpot", "vllm", "hopper", True, j / 100)
                         for j in range(21)), {})  # fmt: skip
    cov = coverage(t, 0.8)
    assert cov["tpot"]["rows"] == cov["dense models"]["rows"] == 21 and "MoE models" not in cov
    assert cov["all"]["inside_pct"] == pytest.approx(100 * 17 / 21)


def test_estimate_intervals_combine_ttft_and_tpot_for_e2e():
    t = ErrorTable(tuple(rows() + rows(kind="tpot", ratios=(0.9,) * 5 + (1.1,) * 6, tag="p")), {})
    result = {"engine": "trtllm", "ttft_ms": 100.0, "tpot_ms": 10.0, "e2e_ms": 1090.0,
              "osl": 100, "throughput_tok_s": 500.0}  # fmt: skip
    iv = estimate_intervals(result, "hopper", 0.8, table=t)
    # TTFT [53.48, 186.23] (the 11 rows); TPOT: h = 1.2 in the five 0.9s, h = 10.8 in the six
    # 1.1s -> [9, 11]; E2E = TTFT + 99 TPOT at each end: [53.48 + 891, 186.23 + 1089]
    assert iv["ttft_ms"] == pytest.approx([53.48, 186.23], abs=1e-2)
    assert iv["tpot_ms"] == pytest.approx([9.0, 11.0])
    assert iv["e2e_ms"] == pytest.approx([944.48, 1275.23], abs=1e-2)
    assert iv["throughput_tok_s"] == [500.0, 500.0]  # no throughput rows: an empty basis
    assert "no out-of-sample throughput rows" in iv["basis"]
    assert iv["calibrated"] is True  # hopper and trtllm are fitted in data/calibration.yaml


def test_confidence_outside_range_names_the_value():
    t = ErrorTable(tuple(rows()), {})
    with pytest.raises(ValueError, match=r"confidence 0\.995 is outside 0\.5\.\.0\.99"):
        interval_factors("ttft", "vllm", "hopper", 0.995, table=t)


# --- the CLI: `advisor estimate` carries the intervals --------------------------------------


def _estimate(capsys, *extra):
    from advisor.cli import main

    try:
        code = main(["estimate", "--model", "llama-3.1-8b", "--isl", "1024", "--osl", "256",
                     *extra])  # fmt: skip
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _cdna3_uncalibrated(monkeypatch):
    """CDNA3 (MI300X) predicted from priors, whatever data/calibration.yaml fits today."""
    import advisor.perf.model.intervals as intervals

    real = intervals.is_calibrated
    monkeypatch.setattr(
        intervals, "is_calibrated", lambda e, f: (f != "cdna3" and real(e, f)[0], real(e, f)[1])
    )


def test_estimate_json_has_an_interval_around_each_headline_number(capsys, monkeypatch):
    import json

    _cdna3_uncalibrated(monkeypatch)

    code, out, _ = _estimate(capsys, "--gpu", "mi300x", "--engine", "vllm", "--json",
                             "--confidence", "0.9")  # fmt: skip
    r = json.loads(out)
    iv = r["intervals"]
    assert code == 0 and iv["confidence"] == 0.9
    for key in ("ttft_ms", "tpot_ms", "e2e_ms", "throughput_tok_s"):
        lo, hi = iv[key]
        assert lo <= r[key] <= hi, key
    # MI300X (CDNA3) without fitted constants: predicted from priors, the range widened
    assert iv["calibrated"] is False and "uncalibrated cdna3" in iv["basis"]
    assert iv["tpot_ms"][1] > r["tpot_ms"] * 1.05  # widened: not the bare point


def test_estimate_text_prints_the_range_and_the_uncalibrated_warning(capsys, monkeypatch):
    _cdna3_uncalibrated(monkeypatch)
    code, out, _ = _estimate(capsys, "--gpu", "mi300x")
    assert code == 0 and "(80% range " in out and "UNCALIBRATED: mi300x" in out


@pytest.mark.parametrize("value", ["1.5", "0.3", "nan", "x"])
def test_estimate_confidence_out_of_range_exits_2_naming_flag_value_and_range(capsys, value):
    code, out, err = _estimate(capsys, "--gpu", "h100-sxm", "--confidence", value)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--confidence" in err and value in err and "0.5" in err and "0.99" in err


# --- the search: "meets the SLA" at a stated confidence --------------------------------------


def _widening_table(monkeypatch):
    """Every kind measured exactly as predicted (factor 1) on calibrated families; a
    leave-one-GPU-out P90 of 35% for every metric family; cdna3 (MI300X) uncalibrated."""
    import advisor.perf.model.intervals as intervals

    fams = ("TTFT", "TTFT/ITL under load", "batch-1 decode", "offline throughput")
    t = ErrorTable(
        tuple(r for k in ("ttft", "tpot", "throughput")
                for r in rows(kind=k, engine="generic", ratios=(1.0,) * 10, tag=k)),
        {("gpu", f): 35.0 for f in fams},
    )  # fmt: skip
    monkeypatch.setattr(intervals, "load_table", lambda path=None: t)
    monkeypatch.setattr(
        intervals, "is_calibrated", lambda engine, family: (family != "cdna3", True)
    )


def _scenario(gpu: str, tpot_ms: float, confidence: float = 0.8):
    from advisor.scenario import SLA, Hardware, Options, Scenario, Workload

    return Scenario(
        model="llama-3.1-8b", hardware=Hardware(gpus=[gpu]),
        workload=Workload(isl_tokens=512, osl_tokens=128, arrival_rate_per_s=0.5),
        sla=SLA(percentile=99, ttft_ms=None, tpot_ms=tpot_ms, confidence=confidence),
        options=Options(weight_dtypes=["fp16"], kv_dtypes=["fp16"], disaggregated=False),
    )  # fmt: skip


def test_uncalibrated_accelerator_needs_headroom_to_meet_the_sla(monkeypatch):
    from advisor.search.recommend import recommend

    _widening_table(monkeypatch)
    # MI300X TPOT upper factor at c = 0.8: exp(ln(1.35) x 1.28155 / 1.64485) = exp(0.23382)
    # = 1.2634 (the calibrated rows give factor 1 before widening)
    f = 1.2634
    loose = recommend(_scenario("mi300x", 1000.0))
    d = loose.best
    p99 = d.tpot_ms.p99
    assert loose.confidence == 0.8
    assert d.intervals["tpot_ms"] == pytest.approx([p99 / f, p99 * f], rel=1e-4)
    assert d.intervals["calibrated"] is False
    assert loose.explanation[0].startswith("AMD Instinct MI300X 192GB is uncalibrated: ")
    assert "80% steady range P99 TPOT" in loose.explanation[0]
    # A target 10% above the point prediction: met by the point, not by the upper end (x1.26).
    tight = recommend(_scenario("mi300x", p99 * 1.1))
    assert tight.best is not None and tight.best.description != d.description
    assert tight.best.tpot_ms.p99 * f <= p99 * 1.1  # the winner has the headroom (TP=2)
    assert "at 80% confidence" in tight.near_misses[0].fails[0]
    # The same deployment at confidence 0.5: factor exp(0.23382 x 0.67449 / 1.28155) = 1.1308,
    # still above 1.1; at a target 15% above it meets.
    half = recommend(_scenario("mi300x", p99 * 1.15, confidence=0.5))
    assert half.best is not None and half.best.tpot_ms.p99 * 1.1308 <= p99 * 1.15 * (1 + 1e-9)


def test_calibrated_accelerator_meets_on_its_point_when_its_errors_are_nil(monkeypatch):
    from advisor.search.recommend import recommend

    _widening_table(monkeypatch)
    loose = recommend(_scenario("h100-sxm", 1000.0))
    p99 = loose.best.tpot_ms.p99
    tight = recommend(_scenario("h100-sxm", p99 * 1.01))  # factor 1: a 1% margin is enough
    assert tight.best is not None and tight.best.description == loose.best.description
    assert not tight.explanation[0].endswith("inside the SLA.")  # no uncalibrated headline
    assert tight.explanation[-1].startswith("Meets the SLA at 80% confidence")


def test_scenario_confidence_is_validated_with_field_value_and_range():
    from advisor.scenario import ScenarioError, load_scenario

    with pytest.raises(
        ScenarioError, match=r"sla\.confidence: .*0\.99 \(got 1\.5; allowed \[0\.5, 0\.99\]\)"
    ):
        load_scenario('{"schema_version": 1, "sla": {"confidence": 1.5}}')
    assert load_scenario('{"schema_version": 1}').sla.confidence == 0.8


# --- the PDF: the range beside each headline number, the warning in the headline -----------


def test_pdf_headline_carries_ranges_and_the_uncalibrated_warning(monkeypatch):
    import io

    from pypdf import PdfReader

    from advisor.report.pdf import build_report
    from advisor.search.recommend import recommend

    _widening_table(monkeypatch)
    sc = _scenario("mi300x", 1000.0)
    rec = recommend(sc)
    pdf = build_report(sc, recommendation=rec, charts=False, sensitivities=False)
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())
    summary = text[text.index("Executive summary") :]
    warn = summary.index("AMD Instinct MI300X 192GB is uncalibrated: predictions from priors")
    assert warn < summary.index("Why this deployment")  # in the headline, before the reasons
    lo, hi = rec.best.intervals["tpot_ms"]
    p99 = rec.best.tpot_ms.p99
    # the TPOT range beside the P99 TPOT headline number, as the search computed it
    assert (
        f"P99 TPOT {p99:,.1f} ms (80% steady range {lo:,.1f}-{hi:,.1f} ms; a benchmark run" in text
    )
    blo, bhi = rec.best.intervals["benchmark"]["tpot_ms"]  # named apart, as `estimate` prints it
    assert f"a benchmark run's published P99: {blo:,.1f}-{bhi:,.1f} ms) against ≤ 1000 ms" in text


def test_an_infinite_p90_gives_no_spread_and_the_others_still_do():
    from advisor.perf.model.intervals import table_from_doc

    doc = {"held_out": {"accelerator_family": {
        "TTFT/ITL under load": {"rows": 101, "p90_ape_pct": float("inf")},  # >10% failures
        "TTFT": {"rows": 15, "p90_ape_pct": 51.0},
    }}}  # fmt: skip
    t = table_from_doc(doc)
    assert t.p90_by_group == {("accelerator_family", "TTFT"): 51.0}
    iv = interval_factors("ttft", "vllm", "cdna3", 0.9, table=t, family_calibrated=False)
    # no rows: [1, 1] widened by ln(1.51) at c = 0.9 (z ratio 1): [1 / 1.51, 1.51]
    assert (iv.low, iv.high) == pytest.approx((1 / 1.51, 1.51))


@pytest.mark.parametrize("moe", [None, False])  # all rows, or all rows of the dense class
def test_e2e_rows_of_other_engines_and_families_give_way_to_ttft_and_tpot(moe):
    ttft_tpot = rows() + rows(kind="tpot", ratios=(0.9,) * 5 + (1.1,) * 6, tag="p")
    result = {"engine": "trtllm", "ttft_ms": 100.0, "tpot_ms": 10.0, "e2e_ms": 1090.0,
              "osl": 100, "throughput_tok_s": 500.0}  # fmt: skip
    # 10 E2E rows of vLLM on CDNA3 measured at exactly the prediction: only the all-rows level
    # for TensorRT-LLM on Hopper, so E2E = TTFT + 99 TPOT at each end: [944.48, 1275.23] (above)
    other = rows(kind="e2e", family="cdna3", ratios=(1.0,) * 10, tag="e")
    table = ErrorTable(tuple(ttft_tpot + other), {})
    iv = estimate_intervals(result, "hopper", 0.8, table=table, moe=moe)
    assert iv["e2e_ms"] == pytest.approx([944.48, 1275.23], abs=1e-2)
    # the same rows on Hopper (family level) are used: factor 1 -> [1090, 1090]
    own = rows(kind="e2e", ratios=(1.0,) * 10, tag="e")
    table = ErrorTable(tuple(ttft_tpot + own), {})
    iv = estimate_intervals(result, "hopper", 0.8, table=table, moe=moe)
    assert iv["e2e_ms"] == pytest.approx([1090.0, 1090.0])


def test_attention_dp_ranges_come_from_rows_of_that_layout_first():
    # 11 held-out throughput rows of attention-DP deployments came in at 0.6-0.8 x the model
    # (it runs high for that layout), 11 of the same engine and family at RATIOS. An attention-DP
    # estimate takes its range from the first: c = 0.8 -> h = 1.2 and 10.8 of the 11 DP ratios:
    # 0.60 x (0.62 / 0.60)^0.2 = 0.6039 and 0.78 x (0.80 / 0.78)^0.8 = 0.7960.
    dp_ratios = (0.60, 0.62, 0.64, 0.66, 0.68, 0.70, 0.72, 0.74, 0.76, 0.78, 0.80)
    dp = rows("throughput", "trtllm", "hopper", dp_ratios, tag="d", attention_dp=True)
    t = ErrorTable(tuple(rows("throughput", "trtllm", "hopper") + dp), {})
    iv = interval_factors("throughput", "trtllm", "hopper", 0.8, table=t, attention_dp=True)
    assert (iv.low, iv.high) == pytest.approx((0.6039, 0.7960), abs=1e-4)
    assert iv.basis.startswith("11 held-out throughput rows (attention-DP deployments: trtllm on")
    plain = interval_factors("throughput", "trtllm", "hopper", 0.8, table=t)
    assert plain.rows == 22  # every layout: the DP rows are rows of that engine and family too
    # Fewer than 10 DP rows: every layout, and the basis says so.
    few = ErrorTable(tuple(rows("throughput", "trtllm", "hopper") + dp[:5]), {})
    iv = interval_factors("throughput", "trtllm", "hopper", 0.8, table=few, attention_dp=True)
    assert iv.rows == 16
    assert "fewer than 10 rows or 3 sources of held-out attention-DP deployments" in iv.basis


@pytest.mark.parametrize("flag", ["attention_dp", "moe"])
def test_reader_keeps_the_true_only_flags(flag):
    doc = {"loso_rows": [
        {"id": "a", "kind": "offline", "engine": "trtllm", "accelerator_family": "hopper",
         "calibrated": True, "measured": 1.0, "predicted": 1.2, flag: True},
        {"id": "b", "kind": "offline", "engine": "trtllm", "accelerator_family": "hopper",
         "calibrated": True, "measured": 1.0, "predicted": 1.2},
    ]}  # fmt: skip
    assert [getattr(r, flag) for r in rows_from_doc(doc)] == [True, False]


def test_moe_and_dense_models_draw_on_rows_of_their_own_class():
    # 11 dense vLLM/Hopper TTFT rows at RATIOS ([0.5348, 1.8623] at 80%) and 11 MoE rows of the
    # same engine and family measured 2x-4x slower (2.0 .. 4.0 step 0.2: [2.0385, 3.9592], see
    # test_uncalibrated_rows_of_their_own_extend_the_interval)
    slow = rows(ratios=tuple(2.0 + 0.2 * i for i in range(11)), tag="m", moe=True)
    t = ErrorTable(tuple(rows() + slow), {})
    moe = interval_factors("ttft", "vllm", "hopper", 0.8, table=t, moe=True)
    assert (moe.low, moe.high) == pytest.approx((2.0385, 3.9592), abs=1e-4)
    assert moe.basis == "11 held-out ttft rows (MoE models: vllm on hopper)"
    dense = interval_factors("ttft", "vllm", "hopper", 0.8, table=t, moe=False)
    assert (dense.low, dense.high) == pytest.approx(LOW_HIGH_80, abs=1e-4)
    assert "dense models: vllm on hopper" in dense.basis
    # no class given: one pool of 22; h = 2.3 and 20.7 -> 0.7 x (0.8 / 0.7)^0.3 = 0.7286 and
    # x_(20) = 3.6, x_(21) = 3.8: 3.6 x (3.8 / 3.6)^0.7 = 3.7389
    both = interval_factors("ttft", "vllm", "hopper", 0.8, table=t)
    assert both.rows == 22 and (both.low, both.high) == pytest.approx((0.7286, 3.7389), abs=1e-4)
    # Fewer than 10 MoE rows: both classes, and the basis says so.
    few = ErrorTable(tuple(rows() + slow[:5]), {})
    iv = interval_factors("ttft", "vllm", "hopper", 0.8, table=few, moe=True)
    assert iv.rows == 16
    assert "fewer than 10 rows or 3 sources of held-out MoE-model rows, both classes" in iv.basis


@pytest.mark.parametrize(("model", "cls"), [("qwen3-30b-a3b", "MoE"), ("llama-3.1-8b", "dense")])
def test_estimate_and_search_ranges_come_from_the_models_class(capsys, model, cls):
    import json

    from advisor.cli import main
    from advisor.scenario import Hardware, Scenario
    from advisor.search.sla import intervals_by_gpu

    # data/crossval.yaml marks the held-out rows of MoE models (bench/crossval.py)
    assert main(["estimate", "--model", model, "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--json"]) == 0  # fmt: skip
    basis = json.loads(capsys.readouterr().out)["intervals"]["basis"]
    assert f"({cls} models: " in basis
    sc = Scenario(model=model, hardware=Hardware(gpus=["h100-sxm"]))
    iv = intervals_by_gpu(sc, ["h100-sxm"])["h100-sxm"]
    assert all(f"({cls} models: " in v.basis for v in iv.values())


def test_a_level_needs_rows_from_three_sources():
    # 11 vLLM/Hopper rows all from one page, 11 TensorRT-LLM/Hopper rows measured at the model
    # (1.0) from three: vLLM on Hopper has the rows but one source -> Hopper, any engine: 22 rows;
    # sorted 0.5, 0.7, 0.8, 0.9, 0.95, 1.0 x 12, 1.05, 1.1, 1.2, 1.4, 2.0; h = 2.3 and 20.7:
    # 0.7 x (0.8 / 0.7)^0.3 = 0.7286 and 1.2 x (1.4 / 1.2)^0.7 = 1.3367
    ones = [rows(engine="trtllm", ratios=(1.0,) * n, tag=f"t{src}", source=src)
            for src, n in (("a", 4), ("b", 4), ("c", 3))]  # fmt: skip
    t = ErrorTable(tuple(rows(source="one page") + ones[0] + ones[1] + ones[2]), {})
    iv = interval_factors("ttft", "vllm", "hopper", 0.8, table=t)
    assert iv.basis == "22 held-out ttft rows (hopper, any engine)"
    assert (iv.low, iv.high) == pytest.approx((0.7286, 1.3367), abs=1e-4)
    # a row without a source (an older crossval.yaml) counts as a source of its own
    assert rows()[0].source == "r0"


def test_coverage_leaves_out_the_rows_whole_source():
    # Source A: 10 rows measured 2x the prediction; B, C, D: 10 rows each at 1.0 (one engine and
    # family). Leaving one row out, an A row still sees 9 twos among 39: h = 0.9 x 40 = 36 ->
    # x_(36) = 2.0, inside; a B row sees 29 ones and 10 twos: [1.0, 2.0], inside -> 100%.
    # Leaving its source out, an A row sees only ones: [1, 1], outside; a B row sees 20 ones
    # and 10 twos: h = 3.1 -> 1.0 and h = 27.9 -> x_(27) = 2.0, inside -> 30 of 40 = 75%.
    t = ErrorTable(tuple(
        ErrorRow(f"{s}{i}", "tpot", "vllm", "hopper", True, math.log(2.0 if s == "A" else 1.0),
                 source=s)
        for s in "ABCD" for i in range(10)), {})  # fmt: skip
    assert coverage(t, 0.8, leave_out="row")["all"]["inside_pct"] == pytest.approx(100.0)
    assert coverage(t, 0.8)["all"]["inside_pct"] == pytest.approx(75.0)
    with pytest.raises(ValueError, match="leave_out 'page'; allowed: source, row"):
        coverage(t, 0.8, leave_out="page")


def test_the_compact_ranges_table_holds_every_held_out_row_of_crossval_yaml():
    """data/crossval_ranges.json (read by the answers; issue 38: yaml.safe_load of the 445 KB
    crossval.yaml took most of a fresh process's first recommend) is crossval.yaml's loso_rows,
    each with its load regime: regenerate it with python -m advisor crossval --ranges when this fails."""
    import yaml

    from advisor.catalog.loader import DATA_DIR
    from advisor.perf.model.intervals import RANGES_PATH, REGIMES, load_table

    full = rows_from_doc(yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8")))
    compact = {r.id: r for r in load_table(RANGES_PATH).rows
               if not r.statistic.startswith(("p90", "p99"))}  # fmt: skip
    assert set(compact) == {r.id for r in full}
    for r in full:
        c = compact[r.id]
        assert (c.kind, c.engine, c.accelerator_family, c.moe, c.source) == (
            r.kind, r.engine, r.accelerator_family, r.moe, r.source)  # fmt: skip
        assert c.log_ratio == pytest.approx(r.log_ratio, abs=1e-6)
        assert c.regime in REGIMES


def test_load_regimes_and_statistics_select_their_own_rows():
    # 12 light rows at ratio 1.0 and 12 near-saturation rows at 2.0, 4 sources each: a light
    # query gets [1, 1], a near-saturation one [2, 2]; a P99 query without P99 rows says so
    light = rows(ratios=[1.0] * 12, regime="light", tag="l")
    near = rows(ratios=[2.0] * 12, regime="near saturation", tag="n")
    table = ErrorTable(tuple(_sources(light) + _sources(near)), {})
    lo = interval_factors("ttft", "vllm", "hopper", table=table, regime="light")
    hi = interval_factors("ttft", "vllm", "hopper", table=table, regime="near saturation")
    assert (round(lo.low, 6), round(lo.high, 6), round(hi.low, 6), round(hi.high, 6)) == (
        1.0, 1.0, 2.0, 2.0)  # fmt: skip
    p99 = interval_factors("ttft", "vllm", "hopper", table=table, statistic="p99")
    assert "0 held-out P99 rows, too few: mean/median rows" in p99.basis


def _sources(rs):
    import dataclasses

    return [dataclasses.replace(r, source=f"s{i % 4}") for i, r in enumerate(rs)]


def test_the_sla_factor_of_each_candidate_is_its_load_regimes(monkeypatch):
    """search/sla.py: light candidates are judged on light-load errors, near-saturation ones on
    theirs (hand table: TPOT measured 1.0 x predicted at light load, 1.5 x near saturation, ten
    rows from five sources each)."""
    import dataclasses

    import numpy as np

    import advisor.perf.model.intervals as intervals
    from advisor.search.sla import sla_checks

    light = [dataclasses.replace(r, regime="light", source=f"a{i % 5}")
             for i, r in enumerate(rows(kind="tpot", ratios=(1.0,) * 10, tag="l"))]  # fmt: skip
    near = [dataclasses.replace(r, regime="near saturation", source=f"b{i % 5}")
            for i, r in enumerate(rows(kind="tpot", ratios=(1.5,) * 10, tag="n"))]  # fmt: skip
    t = ErrorTable(tuple(light + near), {})
    monkeypatch.setattr(intervals, "load_table", lambda path=None: t)
    monkeypatch.setattr(intervals, "is_calibrated", lambda engine, family: (True, True))
    intervals._MEMO.clear()
    sc = _scenario("h100-sxm", 50.0)
    ((name, target, factor),) = sla_checks(sc, ["h100-sxm"] * 3, np.array([0.2, 0.7, 0.45]))
    assert name == "TPOT" and target == 50.0
    assert [round(float(f), 6) for f in factor] == [1.0, 1.5, 1.0]
    # without the utilisations: any load, the upper quantile of all 20 rows (1.5)
    ((_, _, any_load),) = sla_checks(sc, ["h100-sxm"])
    assert round(float(any_load[0]), 6) == 1.5


def test_a_predicted_p50_takes_the_range_of_the_held_out_medians():
    """Published P50s sat inside the range shown beside a predicted P50 for 65.3% of 219 rows
    (target 70-90%): it was built from means and medians together, and a median TTFT misses
    more than a mean. Hand table: 12 means at 1.0 x the prediction, 12 medians at 2.0 x, four
    sources each: a P50 now gets [2, 2] (the medians'), a mean [1, 2] (both, as before), and
    the answer's P50 range says it came from medians."""
    from advisor.perf.model.intervals import PERCENTILE_STATISTIC

    means = rows(ratios=[1.0] * 12, regime="light", tag="m", statistic="mean")
    medians = rows(ratios=[2.0] * 12, regime="light", tag="d", statistic="median")
    table = ErrorTable(tuple(_sources(means) + _sources(medians)), {})
    p50 = interval_factors("ttft", "vllm", "hopper", table=table,
                           statistic=PERCENTILE_STATISTIC["p50"])  # fmt: skip
    assert (round(p50.low, 6), round(p50.high, 6)) == (2.0, 2.0)
    assert p50.basis.startswith("12 held-out median ttft rows")
    mean = interval_factors("ttft", "vllm", "hopper", table=table)
    assert (round(mean.low, 6), round(mean.high, 6)) == (1.0, 2.0)


def test_a_short_runs_p99_and_a_longer_runs_p99_are_ranged_by_their_own_rows():
    """A P99 of at most 101 prompts reads the run's two slowest requests (numpy.percentile,
    linear: tests/test_short_runs.py), so one cold request sets it: the sgl-cookbook one-client
    runs of 10 prompts on MI300X published 38-48 s over medians of ~0.07 s (~400-700 x). Hand
    table: 12 P99s of longer runs at 1.5 x the prediction and 12 short-run P99s at 400 x, four
    sources each, one load regime. A P99 (a run of the clients' default 1,000 prompts) gets
    [1.5, 1.5] and says so; a short run's P99 gets [400, 400] and names its rows."""
    longer = rows(ratios=[1.5] * 12, regime="light", tag="p", statistic="p99")
    short = rows(ratios=[400.0] * 12, regime="light", tag="s", statistic="p99-short")
    table = ErrorTable(tuple(_sources(longer) + _sources(short)), {})
    p99 = interval_factors("ttft", "vllm", "hopper", table=table, statistic="p99", regime="light")
    assert (round(p99.low, 6), round(p99.high, 6)) == (1.5, 1.5)
    assert p99.basis.startswith("12 held-out P99 ttft rows")
    cold = interval_factors("ttft", "vllm", "hopper", table=table, statistic="p99-short",
                            regime="light")  # fmt: skip
    assert (round(cold.low, 6), round(cold.high, 6)) == (400.0, 400.0)
    assert cold.basis.startswith("12 held-out short-run P99 ttft rows")


def test_the_shipped_p99_rows_of_short_runs_are_marked_so():
    """Each published P90/P99 row of data/crossval_ranges.json is a short run's ("-short")
    exactly when its run's stated prompts make the quantile read at most two requests (the
    sgl-cookbook MI300X Llama-4-Scout run of 10 prompts, row A0678: yes; InferenceX's 160
    prompts at 16 clients, row N0046: no). Regenerate the file with
    python -m advisor crossval --ranges when this fails."""
    from advisor.perf.model.intervals import RANGES_PATH, load_table
    from advisor.perf.validation.percentiles import percentile_cases
    from advisor.perf.validation.run_length import slowest_requests_read

    cases = {pc.id: pc for pc in percentile_cases()[0]}
    tails = [r for r in load_table(RANGES_PATH).rows if r.statistic.startswith(("p90", "p99"))]
    assert len(tails) > 100
    for r in tails:
        pc = cases[r.id]
        n = pc.case.requests
        short = bool(n) and slowest_requests_read(int(n), pc.quantile) <= 2
        assert r.statistic.endswith("-short") == short, (r.id, n, r.statistic)
    by_id = {r.id: r.statistic for r in tails}
    assert (by_id["A0678"], by_id["N0046"]) == ("p99-short", "p99")


def test_an_itl_tail_is_ranged_by_itl_tails_and_a_mean_itl_as_a_tpot():
    """A P99 inter-token gap is a decode step stalled by another request's prefill, not a
    request's mean gap: TPOT's P99 errors ranged 66.7% of 63 published P99 ITLs at 80% (and
    74.6% by their own held-out tails, bench/percentiles.py, 2026-12-06). Hand-made table: 11
    held-out ITL P99 rows at RATIOS (from 3 sources) give LOW_HIGH_80; a mean ITL, which has no
    rows of its own, takes the TPOT rows (all at 1.0 here)."""
    from advisor.perf.model.intervals import range_factors

    srcs = ("s1", "s2", "s3")
    itl = [dataclasses.replace(r, statistic="p99", source=srcs[i % 3])
           for i, r in enumerate(rows(kind="itl", tag="i"))]  # fmt: skip
    tpot = [dataclasses.replace(r, source=srcs[i % 3])
            for i, r in enumerate(rows(kind="tpot", ratios=(1.0,) * 11, tag="t"))]  # fmt: skip
    t = ErrorTable(tuple(itl + tpot), {})
    iv = range_factors("itl", "vllm", "hopper", 0.8, table=t, statistic="p99")
    assert "P99 itl rows" in iv.basis
    assert (iv.low, iv.high) == pytest.approx(LOW_HIGH_80, abs=1e-4)
    mean = range_factors("itl", "vllm", "hopper", 0.8, table=t)
    assert mean.basis.startswith("as a TPOT") and (mean.low, mean.high) == (1.0, 1.0)


def test_estimate_and_the_search_name_each_percentile_range_alike():
    """One figure, one name: a deployment's P99 has a steady-service range (the SLA verdict's,
    shown by the app, the PDF and ``recommend``) and a benchmark-run range (held-out published
    P99s, start-up waves included, printed by ``estimate`` beside each percentile). Before, the
    same 491 ms P99 TTFT (DeepSeek-V3, 8 x H200, SGLang with attention DP, 1,024/256 tokens at
    2 req/s) read 430 ms-7.17 s in ``estimate`` and 316 ms-1.91 s on the Latency page, each
    called "80% range"."""
    from advisor.catalog import get_accelerator, get_model
    from advisor.cli.estimate_cmd import render
    from advisor.perf.model.estimate import EstimateInput, estimate
    from advisor.perf.model.sweeps import fmt_ms
    from advisor.scenario import Hardware, Options, Scenario, Workload
    from advisor.search.sla import percentile_intervals

    inp = EstimateInput(tp=8, weights="fp8", kv="fp16", isl=1024, osl=256, concurrency=None,
                        qps=2.0, engine="sglang", dp_attention=True)  # fmt: skip
    est = estimate(get_model("deepseek-v3"), get_accelerator("h200-sxm"), inp)
    sc = Scenario(model="deepseek-v3", hardware=Hardware(gpus=["h200-sxm"]),
                  workload=Workload(isl_tokens=1024, osl_tokens=256, arrival_rate_per_s=2.0),
                  options=Options(engine="sglang"))  # fmt: skip
    p99 = {k: est["percentiles"][k]["p99"] for k in ("ttft_ms", "tpot_ms", "e2e_ms")}
    iv = percentile_intervals(sc, "h200-sxm", p99["ttft_ms"], p99["tpot_ms"], p99["e2e_ms"],
                              utilisation=est["utilisation"], attention_dp=True)  # fmt: skip
    for k in p99:
        assert iv[k] == pytest.approx(est["steady_intervals"][k]["p99"], rel=1e-9)
        assert iv["benchmark"][k] == pytest.approx(est["percentile_intervals"][k]["p99"], rel=1e-9)
    # the CLI prints both, each under its own name
    text = render(est)
    lo, hi = est["steady_intervals"]["ttft_ms"]["p99"]
    assert "steady-service ranges" in text and f"P99 TTFT {fmt_ms(lo)}-{fmt_ms(hi)}" in text
    assert "benchmark ranges (held-out published percentiles" in text

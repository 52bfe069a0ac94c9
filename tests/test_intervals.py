"""Prediction intervals (advisor/perf/intervals.py) on hand-made tables of held-out errors.

Every expected value is derived by hand in the comment beside it: numpy's default quantile
(type 7) at p of n sorted values x_0..x_{n-1} is x_h interpolated at h = (n - 1) p.
"""

from __future__ import annotations

import math

import pytest

from advisor.perf.intervals import (
    ErrorRow,
    ErrorTable,
    coverage,
    estimate_intervals,
    interval_factors,
    rows_from_doc,
)

#: measured / predicted of 11 held-out TTFT rows (vLLM on Hopper), sorted.
RATIOS = (0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.4, 2.0)


def rows(kind="ttft", engine="vllm", family="hopper", ratios=RATIOS, calibrated=True, tag="r"):
    return [
        ErrorRow(f"{tag}{i}", kind, engine, family, calibrated, math.log(x))
        for i, x in enumerate(ratios)
    ]


def test_quantiles_of_a_hand_made_table_at_80_and_50_percent():
    t = ErrorTable(tuple(rows()), {})
    iv = interval_factors("ttft", "vllm", "hopper", 0.8, table=t)
    # c = 0.8: p = 0.1 -> h = 10 x 0.1 = 1 -> x_1 = 0.7; p = 0.9 -> h = 9 -> x_9 = 1.4
    assert (iv.low, iv.high) == pytest.approx((0.7, 1.4))
    assert iv.of(100.0) == pytest.approx([70.0, 140.0])
    assert iv.calibrated and iv.rows == 11 and "vllm on hopper" in iv.basis
    iv = interval_factors("ttft", "vllm", "hopper", 0.5, table=t)
    # c = 0.5: h = 2.5 -> halfway (in logs) between 0.8 and 0.9 = sqrt(0.72) = 0.8485;
    # h = 7.5 -> between 1.1 and 1.2 = sqrt(1.32) = 1.1489
    assert (iv.low, iv.high) == pytest.approx((0.8485, 1.1489), abs=1e-4)


def test_fallback_hierarchy_engine_family_then_family_then_engine_then_all():
    t = ErrorTable(
        tuple(
            rows()  # 11 vllm/hopper rows: ratios 0.5 .. 2.0
            + rows(engine="trtllm", ratios=(1.0,) * 3, tag="a")  # 3 trtllm/hopper
            + rows(engine="trtllm", family="ampere", ratios=(3.0,) * 4, tag="b")  # 4 trtllm/ampere
        ),
        {},
    )
    # trtllm on hopper: 3 rows < 10 -> hopper any engine: 14 rows; c = 0.8: h = 1.3 and 11.7.
    # sorted: 0.5, 0.7, 0.8, 0.9, 0.95, 1.0 x4, 1.05, 1.1, 1.2, 1.4, 2.0
    # x_1 = 0.7, x_2 = 0.8 -> exp(ln0.7 + 0.3 (ln0.8 - ln0.7)) = 0.7 (8/7)^0.3 = 0.7286
    # x_11 = 1.2, x_12 = 1.4 -> 1.2 (1.4/1.2)^0.7 = 1.3367
    iv = interval_factors("ttft", "trtllm", "hopper", 0.8, table=t)
    assert "hopper, any engine" in iv.basis and iv.rows == 14
    assert (iv.low, iv.high) == pytest.approx((0.7286, 1.3367), abs=1e-4)
    # vllm on ampere: no ampere vllm rows, ampere only 4 -> vllm any accelerator: the 11 rows
    iv = interval_factors("ttft", "vllm", "ampere", 0.8, table=t)
    assert "vllm, any accelerator" in iv.basis and (iv.low, iv.high) == pytest.approx((0.7, 1.4))
    # sglang on ampere: nothing at the first three levels -> all 18 rows; h = 1.7 and 15.3:
    # sorted ..., x_1 = 0.7, x_2 = 0.8 -> 0.7 (8/7)^0.7 = 0.7686; x_14..x_17 = 3.0 -> 3.0
    iv = interval_factors("ttft", "sglang", "ampere", 0.8, table=t)
    assert "all engines" in iv.basis and iv.rows == 18
    assert (iv.low, iv.high) == pytest.approx((0.7686, 3.0), abs=1e-4)


def test_uncalibrated_family_is_wider_by_the_leave_one_family_out_spread():
    t = ErrorTable(tuple(rows()), {("gpu", "TTFT"): 35.0, ("gpu", "TTFT/ITL under load"): 20.0})
    iv = interval_factors("ttft", "vllm", "cdna3", 0.8, table=t, family_calibrated=False)
    # base: the 11 vllm rows, [0.7, 1.4]; w = ln(1.35) x z(0.9) / z(0.95)
    #   = 0.30010 x 1.28155 / 1.64485 = 0.23382 (the larger P90 of the two TTFT families)
    # -> [0.7 e^-0.23382, 1.4 e^0.23382] = [0.5541, 1.7687]
    assert not iv.calibrated
    assert (iv.low, iv.high) == pytest.approx((0.5541, 1.7687), abs=1e-4)
    assert "uncalibrated cdna3 family" in iv.basis and "P90 35%" in iv.basis
    # family and engine both uncalibrated: w = sqrt(2) x 0.23382 with an engine P90 of 35% too
    t2 = ErrorTable(t.rows, {("gpu", "TTFT"): 35.0, ("engine", "TTFT"): 35.0})
    iv2 = interval_factors(
        "ttft", "vllm", "cdna3", 0.8, table=t2, family_calibrated=False, engine_calibrated=False
    )
    assert iv2.high == pytest.approx(1.4 * math.exp(math.sqrt(2) * 0.23382), abs=1e-4)


def test_uncalibrated_rows_of_their_own_extend_the_interval():
    # 11 calibrated rows [0.7, 1.4] + 11 rows predicted from priors, measured 2x-4x slower
    # than predicted (ratios 2.0 .. 4.0 step 0.2): their c = 0.8 quantiles are x_1 = 2.2, x_9 = 3.8
    slow = tuple(2.0 + 0.2 * i for i in range(11))
    t = ErrorTable(tuple(rows() + rows(ratios=slow, calibrated=False, tag="u")), {})
    iv = interval_factors("ttft", "vllm", "cdna3", 0.8, table=t, family_calibrated=False)
    assert (iv.low, iv.high) == pytest.approx((0.7, 3.8))  # no spread in the table: w = 0
    # a calibrated query ignores them
    iv = interval_factors("ttft", "vllm", "hopper", 0.8, table=t)
    assert (iv.low, iv.high) == pytest.approx((0.7, 1.4))


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
    # c = 0.8 -> h = 19 x 0.1 = 1.9 and 17.1. For 3 <= j <= 17 the bounds are 0.019 and 0.181,
    # j inside. j = 2: remaining 0, 0.01, 0.03 -> low 0.01 + 0.9 x 0.02 = 0.028 > 0.02: outside;
    # j = 0, 1 likewise below, j = 18..20 above by symmetry. Inside: 15 of 21 = 71.4%.
    t = ErrorTable(tuple(ErrorRow(f"r{j}", "tpot", "vllm", "hopper", True, j / 100)
                         for j in range(21)), {})  # fmt: skip
    cov = coverage(t, 0.8)
    assert cov["tpot"]["rows"] == 21
    assert cov["all"]["inside_pct"] == pytest.approx(100 * 15 / 21)


def test_estimate_intervals_combine_ttft_and_tpot_for_e2e():
    t = ErrorTable(tuple(rows() + rows(kind="tpot", ratios=(0.9,) * 5 + (1.1,) * 6, tag="p")), {})
    result = {"engine": "trtllm", "ttft_ms": 100.0, "tpot_ms": 10.0, "e2e_ms": 1090.0,
              "osl": 100, "throughput_tok_s": 500.0}  # fmt: skip
    iv = estimate_intervals(result, "hopper", 0.8, table=t)
    # TTFT [70, 140] (the 11 rows); TPOT: x_1 = 0.9, x_9 = 1.1 -> [9, 11];
    # E2E = TTFT + 99 TPOT at each end: [70 + 891, 140 + 1089] = [961, 1229]
    assert iv["ttft_ms"] == pytest.approx([70.0, 140.0])
    assert iv["tpot_ms"] == pytest.approx([9.0, 11.0])
    assert iv["e2e_ms"] == pytest.approx([961.0, 1229.0])
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
    import advisor.perf.intervals as intervals

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
    import advisor.perf.intervals as intervals

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
    assert "80% range P99 TPOT" in loose.explanation[0]
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

    with pytest.raises(ScenarioError, match=r"sla\.confidence: .*0\.99.*\(got 1\.5\)"):
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
    assert f"P99 TPOT {p99:,.1f} ms (80% range {lo:,.1f}-{hi:,.1f} ms) against ≤ 1000 ms" in text


def test_an_infinite_p90_gives_no_spread_and_the_others_still_do():
    from advisor.perf.intervals import table_from_doc

    doc = {"held_out": {"accelerator_family": {
        "TTFT/ITL under load": {"rows": 101, "p90_ape_pct": float("inf")},  # >10% failures
        "TTFT": {"rows": 15, "p90_ape_pct": 51.0},
    }}}  # fmt: skip
    t = table_from_doc(doc)
    assert t.p90_by_group == {("accelerator_family", "TTFT"): 51.0}
    iv = interval_factors("ttft", "vllm", "cdna3", 0.9, table=t, family_calibrated=False)
    # no rows: [1, 1] widened by ln(1.51) at c = 0.9 (z ratio 1): [1 / 1.51, 1.51]
    assert (iv.low, iv.high) == pytest.approx((1 / 1.51, 1.51))


def test_e2e_rows_of_other_engines_and_families_give_way_to_ttft_and_tpot():
    ttft_tpot = rows() + rows(kind="tpot", ratios=(0.9,) * 5 + (1.1,) * 6, tag="p")
    result = {"engine": "trtllm", "ttft_ms": 100.0, "tpot_ms": 10.0, "e2e_ms": 1090.0,
              "osl": 100, "throughput_tok_s": 500.0}  # fmt: skip
    # 10 E2E rows of vLLM on CDNA3 measured at exactly the prediction: only the all-rows level
    # for TensorRT-LLM on Hopper, so E2E = TTFT + 99 TPOT at each end: [961, 1229] (see above)
    other = rows(kind="e2e", family="cdna3", ratios=(1.0,) * 10, tag="e")
    iv = estimate_intervals(result, "hopper", 0.8, table=ErrorTable(tuple(ttft_tpot + other), {}))
    assert iv["e2e_ms"] == pytest.approx([961.0, 1229.0])
    # the same rows on Hopper (family level) are used: factor 1 -> [1090, 1090]
    own = rows(kind="e2e", ratios=(1.0,) * 10, tag="e")
    iv = estimate_intervals(result, "hopper", 0.8, table=ErrorTable(tuple(ttft_tpot + own), {}))
    assert iv["e2e_ms"] == pytest.approx([1090.0, 1090.0])


def test_attention_dp_ranges_come_from_rows_of_that_layout_first():
    import dataclasses

    # 11 held-out throughput rows of attention-DP deployments came in at 0.6-0.8 x the model
    # (it runs high for that layout), 11 of the same engine and family at RATIOS. An attention-DP
    # estimate takes its range from the first: c = 0.8 -> h = 1 and h = 9 of the 11 DP ratios.
    dp_ratios = (0.60, 0.62, 0.64, 0.66, 0.68, 0.70, 0.72, 0.74, 0.76, 0.78, 0.80)
    dp = [
        dataclasses.replace(r, attention_dp=True)
        for r in rows("throughput", "trtllm", "hopper", dp_ratios, tag="d")
    ]
    t = ErrorTable(tuple(rows("throughput", "trtllm", "hopper") + dp), {})
    iv = interval_factors("throughput", "trtllm", "hopper", 0.8, table=t, attention_dp=True)
    assert (iv.low, iv.high) == pytest.approx((0.62, 0.78))
    assert iv.basis.startswith("11 held-out throughput rows (attention-DP deployments: trtllm on")
    plain = interval_factors("throughput", "trtllm", "hopper", 0.8, table=t)
    assert plain.rows == 22  # every layout: the DP rows are rows of that engine and family too
    # Fewer than 10 DP rows: every layout, and the basis says so.
    few = ErrorTable(tuple(rows("throughput", "trtllm", "hopper") + dp[:5]), {})
    iv = interval_factors("throughput", "trtllm", "hopper", 0.8, table=few, attention_dp=True)
    assert iv.rows == 16 and "fewer than 10 held-out attention-DP rows" in iv.basis


def test_reader_keeps_the_attention_dp_flag():
    doc = {"loso_rows": [
        {"id": "a", "kind": "offline", "engine": "trtllm", "accelerator_family": "hopper",
         "calibrated": True, "measured": 1.0, "predicted": 1.2, "attention_dp": True},
        {"id": "b", "kind": "offline", "engine": "trtllm", "accelerator_family": "hopper",
         "calibrated": True, "measured": 1.0, "predicted": 1.2},
    ]}  # fmt: skip
    assert [r.attention_dp for r in rows_from_doc(doc)] == [True, False]

"""The three-level SLA verdict, the whole-server tie-break and one decode batch (issue 38).

The workshop of issue 38: a hospital, 400 clinicians thinking 60 s between requests, 6,000
input / 400 output tokens, P99 TTFT <= 3 s and P99 TPOT <= 60 ms. Issue 37 reported that with
ranges up to 7x their predictions Qwen3-235B-A22B got no deployment even on 32 MI300X, where a
tool judging point values (aiconfigurator) answers. The policy (docs/accuracy.md, "The SLA
verdict"): "meets" when the upper end of each 80% range is within its target; "at risk" when the
predictions are and a range is not; "misses" otherwise; the cheapest that meets is recommended,
else the cheapest at risk, flagged in every view.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from pypdf import PdfReader
from streamlit.testing.v1 import AppTest

from advisor.scenario import SLA, Hardware, Options, Scenario, Workload
from advisor.search.recommend import recommend

APP = str(Path(__file__).resolve().parent.parent / "app.py")
ROOT = Path(__file__).resolve().parent.parent
# data/prices.yaml, read here with yaml: 8 GPUs per server, a B200 at $55,000, the host $32,010
PRICES = yaml.safe_load((ROOT / "data/prices.yaml").read_text())
TTFT_MS, TPOT_MS = 3000.0, 60.0  # the hospital's SLA (issue 38)


def hospital(model: str, gpu: str, nodes: int = 1, **options) -> Scenario:
    return Scenario(
        name=f"Hospital {model} on {gpu}", model=model,
        hardware=Hardware(gpus=[gpu], nodes=nodes),
        workload=Workload(isl_tokens=6000, osl_tokens=400, arrival_rate_per_s=None,
                          concurrent_users=400, think_time_s=60.0),
        sla=SLA(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS), options=Options(**options),
    )  # fmt: skip


QWEN_32_MI300X = hospital("qwen3-235b-a22b", "mi300x", nodes=4)


#: Issue 37's width: ranges reaching 7x their predictions (MI300X "P99 TTFT 1.66 s ... the range
#: reaches 11.7 s"). Every range here is [p / 7, 7 p], whatever data/crossval.yaml holds at the
#: time, so a deployment is at risk exactly when its prediction p meets a target T and 7 p > T.
WIDTH = 7.0


@pytest.fixture
def seven_x(monkeypatch):
    from tests.conftest import _clear_app_caches

    _width(monkeypatch, WIDTH)
    yield
    _clear_app_caches()


@pytest.fixture
def at_risk(seven_x):
    """The recommendation for Qwen3-235B-A22B on 4 x 8 MI300X with 7x ranges."""
    return recommend(QWEN_32_MI300X)


def test_qwen3_on_32_mi300x_gets_an_answer_with_the_shipped_ranges():
    # The acceptance case with data/crossval.yaml's own ranges: before, "no deployment meets";
    # now an answer, flagged when a range reaches past a target.
    rec = recommend(QWEN_32_MI300X)
    b = rec.best
    assert b is not None, rec.no_best_reason
    assert b.sla_verdict in ("meets", "at risk")
    if b.sla_verdict == "at risk":
        assert rec.at_risk and all(x.split(" meets ")[0] in rec.at_risk for x in b.at_risk[:-1])


def _targets_at_risk(d) -> list[str]:
    """The targets whose prediction meets the SLA and whose range's upper end does not, read
    from the deployment's own percentiles and ranges against the hospital's targets."""
    out = []
    for name, target in (("TTFT", TTFT_MS), ("TPOT", TPOT_MS)):
        point = getattr(d, f"{name.lower()}_ms").p99
        lo, hi = d.intervals[f"{name.lower()}_ms"]
        assert point <= target, f"P99 {name} {point} ms misses {target} ms on the prediction"
        if hi > target:
            out.append(f"P99 {name}")
    return out


def test_qwen3_235b_on_32_mi300x_is_recommended_at_risk_naming_the_target(at_risk):
    rec = at_risk
    b = rec.best
    assert b is not None, rec.no_best_reason  # before: "no deployment meets ..."
    assert b.sla_verdict == "at risk" and not b.meets_sla and rec.no_best_reason is None
    named = _targets_at_risk(b)
    assert named, "an at-risk deployment has a range reaching past a target"
    for what in named:
        line = next(x for x in b.at_risk if x.startswith(what))
        point = getattr(b, f"{what.split()[1].lower()}_ms").p99
        # the range is [p / 7, 7 p] (the fixture), printed as the deployment's own
        assert f"range {point / WIDTH:,.1f}-{point * WIDTH:,.1f} ms reaches past it" in line
        assert what in rec.at_risk
    # the measurement that would narrow the range: the client's serving run, on Calibrate
    assert "serving benchmark" in b.at_risk[-1] and "Calibrate page" in b.at_risk[-1]
    assert rec.at_risk.startswith("At risk: no deployment meets P99 TTFT ≤ 3,000 ms")
    assert rec.feasible == 0 and rec.at_risk_count >= 1
    # never silently: the explanation ends on the risk, the capacity table says its basis
    assert rec.explanation[-1].startswith("At risk: ")
    assert any("meet it on their predictions (at risk)" in x for x in rec.explanation)
    assert rec.capacity.at_risk and rec.capacity.rows
    assert all(m.deployment.description != b.description for m in rec.near_misses)


def _width(monkeypatch, width: float) -> None:
    """Every range [p / width, width x p] from here on (``seven_x`` at another width)."""
    from advisor.perf.model.intervals import Interval
    from tests.conftest import _clear_app_caches

    iv = Interval(low=1 / width, high=width, basis=f"test: {width:g}x", rows=0, calibrated=True)
    monkeypatch.setattr("advisor.search.sla.factors_for", lambda *a, **k: iv)
    _clear_app_caches()


def test_the_at_risk_answer_is_what_point_values_answer(at_risk, monkeypatch):
    # A tool judging point predictions (aiconfigurator) recommends the cheapest deployment
    # whose predictions meet the SLA: the same deployment, which then simply "meets".
    _width(monkeypatch, 1.0)
    point = recommend(QWEN_32_MI300X)
    assert point.best is not None and point.best.sla_verdict == "meets"
    assert point.best.spec == at_risk.best.spec and point.at_risk is None


def test_one_server_of_mi300x_still_gets_no_deployment():
    # On 8 MI300X (one server) even the predictions miss: P99 TPOT above 60 ms for every shape
    # (the closest: TP=8, about 158 ms), so nothing is recommended, at risk or otherwise.
    rec = recommend(hospital("qwen3-235b-a22b", "mi300x"))
    assert rec.best is None and rec.at_risk is None
    assert rec.no_best_reason.startswith("no deployment meets")


def test_a_confident_answer_is_not_displaced_by_one_ranked_ahead_at_risk(monkeypatch):
    # Qwen3-235B-A22B on 8 B200 with ranges 2x either way: the point values' answer (ranges of
    # width 1) is at risk at 2x, and ranks ahead of the one that meets (no dearer per hour, on
    # fewer GPUs); the recommendation is still the one that meets, unflagged.
    from advisor.search.focus import evaluate_spec

    s = hospital("qwen3-235b-a22b", "b200")
    _width(monkeypatch, 1.0)
    point = recommend(s).best
    _width(monkeypatch, 2.0)
    rec = recommend(s)
    b = rec.best
    assert b is not None and b.sla_verdict == "meets" and b.meets_sla and b.at_risk == []
    assert rec.at_risk is None and not rec.capacity.at_risk
    ahead = evaluate_spec(s, point.spec).deployment
    assert ahead.sla_verdict == "at risk" and ahead.spec != b.spec
    assert (ahead.usd_per_hour, ahead.gpus) <= (b.usd_per_hour, b.gpus)
    assert rec.explanation[-1].startswith("Meets the SLA at 80% confidence")


def test_every_view_flags_the_at_risk_recommendation(at_risk, run_cli):
    from advisor.charts.recommend_charts import pareto_figure
    from advisor.report.pdf import build_report
    from advisor.search import comparison as cmp

    rec, b = at_risk, at_risk.best
    # Pareto chart: the star's legend entry and its group
    fig = pareto_figure(rec.pareto, rec.pareto_cost, latency_metric=rec.latency_metric,
                        best=b.description)  # fmt: skip
    names = {t.name for t in fig.data if t.name}
    assert "recommended, at risk" in names and "recommended" not in names
    assert "at risk: predictions meet it, ranges reach past it" in names
    # PDF: the headline, the risk sentence, the per-target verdict
    pdf = build_report(QWEN_32_MI300X, recommendation=rec, sensitivities=False, charts=False)
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())
    assert "Recommended deployment, at risk:" in text and "At risk: no deployment meets" in text
    assert re.search(
        r"P99 TPOT [\d,.]+ ms \(80% steady range [^)]*\) against ≤ 60 ms: (AT RISK|met)", text
    )
    assert "AT RISK" in text
    # Compare: the verdict row, the ranking sentence and the reason
    row = cmp.compared("Qwen3 on 32 MI300X", QWEN_32_MI300X, rec)
    assert row.at_risk and row.sla_word == "at risk"
    table = cmp.table_rows(row)
    assert table["Verdict"].startswith("at risk against P99 TTFT ≤ 3,000 ms")
    assert table["Why it is at risk"].startswith("at risk: P99 T")
    assert "cheapest whose predictions meet it is Qwen3 on 32 MI300X" in cmp.verdict([row])
    # CLI
    code, out, err = run_cli(["recommend", "--model", "qwen3-235b-a22b", "--gpu", "mi300x",
                              "--nodes", "4", "--users", "400", "--think-time-s", "60", "--isl",
                              "6000", "--osl", "400", "--ttft-p99-ms", "3000", "--tpot-p99-ms",
                              "60"])  # fmt: skip
    assert code == 0, err
    assert f"best (AT RISK): {b.description}" in out and "At risk: no deployment meets" in out
    assert "at risk, " in out.splitlines()[0]
    # The measurement that narrows the ranges is said once, in the headline: before, the
    # explanation and the WIDE RANGE line repeated it (three copies of a 400-character sentence).
    assert out.count("Measure it:") == 1, out


def test_recommendation_page_flags_the_at_risk_deployment(at_risk):
    from ui.format import md_escape
    from ui.url import View, scenario_to_params

    at = AppTest.from_file(APP, default_timeout=200)
    for k, v in scenario_to_params(QWEN_32_MI300X, View()).items():
        at.query_params[k] = v
    at = at.run()
    assert not at.exception and not at.error
    warn = next(w.value for w in at.warning if "Recommended, at risk" in w.value)
    assert md_escape(at_risk.best.description) in warn
    assert "reaches past it" in warn and not any("**Recommended:**" in s.value for s in at.success)
    # the focus banner on top of every page says it too
    assert any(w.value.startswith("**In focus:**") and md_escape("at risk: P99") in w.value
               for w in at.warning)  # fmt: skip


# ---------------------------------------------------------------- whole-server tie-break


def test_gpt_oss_on_b200_uses_one_gpu_of_the_server_not_all_eight(point_predictions):
    # Before: 4 x (TP=1, PP=2) on all 8 GPUs (with N+1: 7 x TP1 + a spare, 18x headroom), at
    # the price of the same one server. gpt-oss-120b's MXFP4 checkpoint (60.8 GiB, model card)
    # fits one 180 GB B200; 400 users thinking 60 s offer 400 / (60 s + E2E) requests/s, with
    # E2E at most 3 s + 399 x 60 ms = 26.9 s under the SLA: 4.6 to 6.7 requests/s, within one
    # replica's rate at the SLA. Equal price, so the fewest GPUs win: 1, with 7 spare.
    from advisor.search.budget import budget, spare_text
    from advisor.search.deployment_spec import parse_spec
    from advisor.search.focus import evaluate_spec

    s = hospital("gpt-oss-120b", "b200", disaggregated=False)
    rec = recommend(s)
    b = rec.best
    assert (b.gpus, b.tp, b.pp, b.dp, b.nodes, b.spare_gpus) == (1, 1, 1, 1, 1, 0)
    rate = b.throughput_tok_s / 400
    assert 400 / (60 + 26.9) <= rate <= 400 / 60
    assert rec.capacity.max_rate_per_replica_at_sla_req_s > rate
    assert b.headroom >= 1 / s.options.max_utilisation
    one_server = 8 * PRICES["prices"]["b200"]["purchase_usd"] + PRICES["server"]["non_gpu_usd"]
    assert b.capex_usd == pytest.approx(one_server)
    assert spare_text(budget(s, b)) == "uses 1 of 8 GPUs; 7 spare"
    # the old winner fills the box at the same price per hour
    old = evaluate_spec(s, parse_spec("b200.tp1.pp2.dp4.mxfp4.fp8")).deployment
    assert old.meets_sla and old.gpus == 8
    assert old.usd_per_hour == pytest.approx(b.usd_per_hour, rel=1e-12)
    tie = next(x for x in rec.explanation if "cost the same per hour" in x)
    assert "the same 8 GPUs bought" in tie and "fewest GPUs (1; 7 spare for other work)" in tie
    # the Recommendation page says the spare GPUs beside the answer
    from ui.url import View, scenario_to_params

    at = AppTest.from_file(APP, default_timeout=200)
    for k, v in scenario_to_params(s, View()).items():
        at.query_params[k] = v
    at = at.run()
    assert not at.exception
    assert any("7 of the server's 8 GPUs spare for other work" in c.value for c in at.caption)


def test_n_plus_one_keeps_its_spare_under_the_tie_break(point_predictions):
    s = hospital("gpt-oss-120b", "b200", disaggregated=False, redundancy="n+1")
    b = recommend(s).best
    # one serving replica of one GPU, plus the N+1 spare replica: 2 GPUs of the server
    assert (b.gpus, b.dp, b.spare_gpus, b.tp * b.pp) == (2, 1, 1, 1)
    assert "spare replica (N+1)" in b.description


# ---------------------------------------------------------------- one decode batch


def test_decode_batch_and_all_reduce_are_one_figure_in_every_view(point_predictions):
    # Issue 38: decode batch 77 / 76 / 75.8 and the B200 all-reduce per decode step 3.46 ms
    # (Recommendation) vs 3.44 ms (PDF). The batch is the step's tagged batch, 1 + the mean
    # running batch (search/results.decode_batch); the all-reduce is the part of the step the
    # search priced (interpolated on its batch grid), not a second, exact evaluation.
    from advisor.perf.model.step import decode_step
    from advisor.report.figures import latency_rows
    from advisor.report.pdf import build_report
    from advisor.search.evaluate import build_shapes
    from ui.format import md_escape
    from ui.url import View, scenario_to_params

    s = hospital("qwen3-235b-a22b", "b200")
    rec = recommend(s)
    b = rec.best
    assert b.tp > 1  # the case this test is about: a collective in the decode step
    what = "collectives" if b.ep > 1 or b.attention_dp > 1 else "all-reduce"
    n = round(b.running_batch + 1)
    assert b.step_breakdown_ms["batch"] == pytest.approx(b.running_batch + 1)
    comm = f"{b.step_breakdown_ms['communication']:.2f} ms"
    line = next(x for x in rec.explanation if what in x and "% of the" in x)
    assert f"{what} {comm}," in line and f"at batch {n}." in line
    # the exact step at that batch differs in the second decimal: what the old text printed
    st, _ = build_shapes(s)
    k = next(i for i, sh in enumerate(st.shapes) if (sh.gpu, sh.tp, sh.pp, sh.weights, sh.kv,
             sh.spec, sh.ep, sh.dpa) == (b.gpu, b.tp, b.pp, b.weights, b.kv, b.speculative,
             b.ep > 1, b.attention_dp > 1))  # fmt: skip
    exact = decode_step(
        st.r.take(np.array([k])), b.running_batch + 1, st.context_tokens
    ).communication[0]
    assert f"{exact * 1e3:.2f} ms" != comm
    # the PDF: the same explanation line, the batch in the summary and the chart's row
    pdf = build_report(s, recommendation=rec, sensitivities=False, charts=False)
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())
    assert f"{what} {comm}," in text and f"decode batch {n} per replica" in text
    assert any(f"at batch {n}" in k for k in latency_rows(b, s))
    assert re.search(
        rf"per GPU\), decode batch {n} per replica", text
    )  # was "76 sequences running"
    # the app: Recommendation's caption, then Latency's
    at = AppTest.from_file(APP, default_timeout=200)
    for key, v in scenario_to_params(s, View()).items():
        at.query_params[key] = v
    at = at.run()
    assert not at.exception
    caps = " ".join(c.value for c in at.caption)
    assert f"decode batch {n} per replica" in caps and "sequences decoding per replica" not in caps
    assert any(md_escape(f"{what} {comm},") in m.value for m in at.markdown)
    at = at.switch_page("ui/pages/latency.py").run()
    assert not at.exception
    caps = " ".join(c.value for c in at.caption)
    assert f"decode batch {n} per replica" in caps and "on average" not in caps
    # One step, one figure (issue 38: all-reduce 2.70 ms on Recommendation and in the PDF,
    # 2.76 ms on Latency, 2.77 ms on Interconnect). The search prices the step on its batch
    # grid of powers of two, linear between them (with the shipped ranges the winner decodes
    # at batch 22.9, between 16 and 32, where the exact step is 2.6% longer: 25.44 vs 24.76 ms);
    # the exact all-reduce differs in the second decimal (asserted above). Latency
    # re-evaluated the step exactly at the mean running batch (decode batch - 1), Interconnect
    # at the rounded batch; both now quote the priced step: the same all-reduce, the same total.
    step = f"{sum(v for k, v in b.step_breakdown_ms.items() if k != 'batch'):.2f} ms"
    assert f"{step} decode step at batch {n}" in line and f"{step} decode step" in text
    assert f"decode batch {n}: {step}, {what} {comm}" in caps
    bars = [t for t in at.get("plotly_chart") if "Where the time goes" in t.proto.spec]
    assert bars and f"at batch {n}" in bars[0].proto.spec  # the PDF's rows (latency_rows)
    at = at.switch_page("ui/pages/interconnect.py").run()
    assert not at.exception
    focus = next(m.value for m in at.markdown if m.value.startswith("**In focus: TP="))
    assert f"{what} {comm} per decode step" in focus
    assert f"the {step} decode step at decode batch {n}" in focus


def test_cli_json_carries_the_verdict(run_cli, point_predictions):
    code, out, err = run_cli(["recommend", "--model", "gpt-oss-120b", "--gpu", "b200",
                              "--users", "400", "--think-time-s", "60", "--isl", "6000",
                              "--osl", "400", "--ttft-p99-ms", "3000", "--tpot-p99-ms", "60",
                              "--no-disaggregated", "--json"])  # fmt: skip
    assert code == 0, err
    r = json.loads(out)
    assert r["best"]["sla_verdict"] == "meets" and r["at_risk"] is None
    assert r["best"]["gpus"] == 1

"""Whole servers, N+1 redundancy, a budget cap and on-prem pricing (issue 38).

Expected values are computed by hand from data/prices.yaml (read here with yaml, not through
the code under test): a B200 at $55,000 and an H200 at $42,000 per GPU (assumptions stated
there), the host server without GPUs at $32,010 (SemiAnalysis' DGX H100 bill of materials,
non-GPU items), 8 GPUs per server (HGX B200 / HGX H200 / MI300X platforms are 8-GPU boards);
TDPs from the datasheets (B200 1,000 W: NVIDIA DGX B200 datasheet).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from advisor.scenario import SLA, Cost, Hardware, Options, Scenario, Workload
from advisor.search.budget import budget, spare_text
from advisor.search.deployment_spec import parse_spec
from advisor.search.focus import evaluate_spec
from advisor.search.recommend import recommend

ROOT = Path(__file__).resolve().parent.parent
PRICES = yaml.safe_load((ROOT / "data/prices.yaml").read_text())
B200 = PRICES["prices"]["b200"]["purchase_usd"]  # $55,000
SERVER = PRICES["server"]["non_gpu_usd"]  # $32,010


def _hospital(gpu: str = "b200", **cost) -> Scenario:
    """The issue's workshop: gpt-oss-120b for 400 clinicians, 60 s think time, 6,000/400
    tokens, P99 TTFT 3 s / TPOT 60 ms."""
    return Scenario(
        model="gpt-oss-120b",
        hardware=Hardware(gpus=[gpu]),
        workload=Workload(isl_tokens=6000, osl_tokens=400, arrival_rate_per_s=None,
                          concurrent_users=400, think_time_s=60.0),
        sla=SLA(ttft_ms=3000.0, tpot_ms=60.0),
        options=Options(disaggregated=False),
        cost=Cost(**cost),
    )  # fmt: skip


def test_half_a_server_is_bought_whole(point_predictions):
    # the issue: "Purchase $220,000 (4 x $55,000)", half of an 8-GPU box
    s = _hospital()
    d = evaluate_spec(s, parse_spec("b200.tp4.pp1.dp1.mxfp4.fp8")).deployment
    b = budget(s, d)
    assert d.gpus == 4 and b.servers == 1 and b.billed_gpus == 8
    assert b.purchase_usd == pytest.approx(8 * B200 + SERVER)  # $472,010, not $220,000
    assert spare_text(b) == "uses 4 of 8 GPUs; 4 spare"
    # power and hosting of all 8 GPUs: 8 kW x PUE 1.3 x 730 h x $0.12/kWh
    assert {x.item: x.usd_per_month for x in b.lines}["power"] == pytest.approx(
        8 * 1.3 * 730 * 0.12
    )
    # one convention everywhere: the search's cost per token is the budget's
    assert d.usd_per_million_tokens == pytest.approx(b.usd_per_million_tokens)
    assert d.capex_usd == pytest.approx(b.purchase_usd)
    assert any("whole servers" in x for x in b.assumptions)


def test_rented_gpus_are_per_gpu(point_predictions):
    s = _hospital(mode="hourly")
    d = evaluate_spec(s, parse_spec("b200.tp4.pp1.dp1.mxfp4.fp8")).deployment
    b = budget(s, d)
    rate = PRICES["prices"]["b200"]["hour_usd"]
    assert b.monthly_usd == pytest.approx(4 * rate * 730) and spare_text(b) == ""
    assert d.usd_per_million_tokens == pytest.approx(b.usd_per_million_tokens)


def test_n_plus_one_adds_a_spare_replica(point_predictions):
    s = _hospital()
    s = s.model_copy(update={"options": s.options.model_copy(update={"redundancy": "n+1"})})
    d = recommend(s).best
    assert d is not None and d.kind == "aggregated"
    # the spare is one more replica of the same shape, bought and counted in the GPUs
    assert d.spare_gpus == d.tp * d.pp and d.gpus == (d.dp + 1) * d.tp * d.pp
    assert "spare replica (N+1)" in d.description
    b = budget(s, d)
    assert b.spare_replica_gpus == d.spare_gpus and "N+1" in spare_text(b)
    assert any("N+1 redundancy" in a for a in b.assumptions)
    # a replica of 1 GPU on a single B200 with no spare is what the issue calls a single point
    # of failure: with N+1 there are at least two replicas
    assert d.dp + 1 >= 2


def test_budget_cap_is_a_result_with_reasons(point_predictions):
    # a B200 server is 8 x $55,000 + $32,010 = $472,010: over a $300,000 budget
    rec = recommend(_hospital(max_capex_usd=300_000.0))
    assert rec.best is None
    assert "fits the $300,000 budget" in rec.no_best_reason
    assert "capex $472,010 exceeds the $300,000 budget" in rec.no_best_reason
    assert rec.near_misses and all(
        "capex $472,010 exceeds the $300,000 budget" in m.fails for m in rec.near_misses
    )
    assert any("none within the $300,000 budget" in x for x in rec.explanation)
    assert any(p.over_budget for p in rec.pareto_cost)
    # a cap above one server's price lets the search recommend again
    ok = recommend(_hospital(max_capex_usd=500_000.0))
    assert ok.best is not None and ok.best.capex_usd <= 500_000.0


def test_pareto_chart_marks_over_budget_points(point_predictions):
    from advisor.charts.recommend_charts import pareto_figure

    rec = recommend(_hospital(max_capex_usd=300_000.0))
    fig = pareto_figure(rec.pareto, rec.pareto_cost, latency_metric=rec.latency_metric)
    names = {t.name for t in fig.data if t.name}
    assert "meets the SLA, over the budget" in names


def test_on_prem_hides_renting():
    s = _hospital(on_prem=True)
    d = evaluate_spec(s, parse_spec("b200.tp8.pp1.dp1.mxfp4.fp8")).deployment
    b = budget(s, d)
    assert b.other_mode is None and b.other_mode_monthly_usd is None
    assert [x.item for x in b.lines] == ["amortisation", "power", "hosting"]
    assert budget(_hospital(), d).other_mode == "hourly"  # without the switch, renting is shown
    with pytest.raises(ValueError, match="on_prem is true but mode is 'hourly'"):
        Cost(on_prem=True, mode="hourly")


def test_url_round_trips_the_new_fields():
    from ui.url import View, scenario_from_params, scenario_to_params

    s = _hospital(on_prem=True, max_capex_usd=900_000.0, server_usd=40_000.0)
    s = s.model_copy(update={"options": s.options.model_copy(update={"redundancy": "n+1"})})
    params = scenario_to_params(s, View())
    assert params["prem"] == "1" and params["capex"] == "900000" and params["red"] == "n+1"
    back, _, warnings = scenario_from_params(params)
    assert not warnings and back.cost == s.cost and back.options.redundancy == "n+1"
    _, _, warnings = scenario_from_params({**params, "red": "n+2"})
    assert warnings and "red" in warnings[0]


def test_scenario_file_round_trips(tmp_path):
    from advisor.scenario import dump_scenario, load_scenario

    s = _hospital(on_prem=True, max_capex_usd=300_000.0)
    assert load_scenario(dump_scenario(s)) == s


def test_cli_flags(run_cli, point_predictions):
    base = ["recommend", "--model", "gpt-oss-120b", "--gpu", "b200", "--users", "400",
            "--think-time-s", "60", "--isl", "6000", "--osl", "400", "--ttft-p99-ms", "3000",
            "--tpot-p99-ms", "60", "--no-disaggregated"]  # fmt: skip
    code, out, err = run_cli([*base, "--on-prem", "--max-capex-usd", "300000", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["best"] is None and "capex $472,010 exceeds the $300,000 budget" in r["no_best_reason"]
    code, out, err = run_cli([*base, "--on-prem", "--redundancy", "n+1"])
    assert code == 0, err
    assert "spare replica (N+1)" in out and "rent" not in out.lower()
    assert f"1 server x (8 x $55,000 + ${SERVER:,.0f} host)" in out
    for bad, words in ((["--max-capex-usd", "-1"], "--max-capex-usd"),
                       (["--redundancy", "n+2"], "--redundancy")):  # fmt: skip
        code, _, err = run_cli([*base, *bad])
        assert code == 2 and words in err


def test_sidebar_on_prem_hides_rental(point_predictions):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["prem"] = "1"
    at.query_params["m"] = "gpt-oss-120b"
    at.query_params["g"] = "b200"
    at.query_params["dep"] = "b200.tp4.pp1.dp1.mxfp4.fp8"
    at = at.run().switch_page("ui/pages/recommendation.py").run()
    assert not at.exception, at.exception
    assert not [r for r in at.sidebar.radio if r.label == "GPU cost"]
    assert any(c.label == "Data must stay on-prem" and c.value for c in at.sidebar.checkbox)
    captions = " ".join(c.value for c in at.caption)
    assert "Renting" not in captions
    assert f"Purchase: 1 server × (8 × $55,000 + ${SERVER:,.0f} host) = $472,010" in captions
    assert "uses 4 of 8 GPUs; 4 spare" in captions


def test_page_says_the_budget_not_the_sla(point_predictions):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    q = {"m": "gpt-oss-120b", "g": "b200", "users": "400", "rate": "none", "think": "60",
         "in": "6000", "out": "400", "ttft": "3000", "tpot": "60", "capex": "300000"}  # fmt: skip
    for k, v in q.items():
        at.query_params[k] = v
    at = at.run().switch_page("ui/pages/recommendation.py").run()
    assert not at.exception, at.exception
    errors = re.sub(r"\\(.)", r"\1", " ".join(e.value for e in at.error))  # md_escape's \$
    # the first in the ranking (price per hour, then the fewest GPUs), as the explanation's
    # "the cheapest to buy" (issue 38: this said 4 x TP=2 and the explanation 1 x TP=1)
    assert "fits the $300,000 budget.** The cheapest: 1 x (TP=1" in errors
    assert "capex $472,010 exceeds the $300,000 budget" in errors
    warnings = " ".join(w.value for w in at.warning)
    assert (
        "the cheapest deployment meeting the SLA (none fits the budget): over the budget"
        in warnings
    )
    assert any("Why none is recommended" in m.value for m in at.markdown)
    frames = [df.value for df in at.dataframe]
    assert any("misses by" in f.columns and f["misses by"].str.contains("capex").any()
               for f in frames)  # fmt: skip


def test_pdf_says_servers_spare_and_no_rental(point_predictions):
    import io

    from pypdf import PdfReader

    from advisor.report.pdf import build_report

    s = _hospital(on_prem=True)
    s = s.model_copy(update={"options": s.options.model_copy(update={"redundancy": "n+1"})})
    rec = recommend(s)
    pdf = build_report(s, recommendation=rec, charts=False, sensitivities=False)
    flat = " ".join(" ".join((p.extract_text() or "") for p in PdfReader(io.BytesIO(pdf)).pages).split())  # fmt: skip
    assert f"1 server × (8 × $55,000 + ${SERVER:,.0f} host) = $472,010" in flat
    assert "an N+1 spare replica" in flat and "the N+1 spare replica" in flat
    assert "purchase (data stays on-prem)" in flat
    assert "Renting" not in flat and "GPU-hour" not in flat
    # without the switch the same PDF compares with renting (data/prices.yaml hour_usd)
    s2 = _hospital()
    flat2 = " ".join(" ".join((p.extract_text() or "") for p in PdfReader(io.BytesIO(
        build_report(s2, recommendation=recommend(s2), charts=False, sensitivities=False))).pages).split())  # fmt: skip
    assert "Renting the same" in flat2


def test_deploy_files_launch_the_spare_replica():
    from advisor.deploy.settings import plan

    s = _hospital()
    spec = parse_spec("b200.tp1.pp1.dp7.mxfp4.fp8")
    assert plan(s, spec).pools[0].replicas == 7
    n1 = s.model_copy(update={"options": s.options.model_copy(update={"redundancy": "n+1"})})
    p = plan(n1, spec)
    assert not p.reasons and p.pools[0].replicas == 8  # 7 counted + the spare, all 8 GPUs

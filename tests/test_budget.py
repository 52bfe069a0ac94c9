"""The budget of a deployment (advisor/search/budget.py): every number recomputed by hand from
data/prices.yaml (read here with yaml, not through the code under test) and the H100 SXM TDP
(700 W, NVIDIA H100 datasheet). Bought GPUs come in whole 8-GPU servers, each with the host
server's non-GPU price (data/prices.yaml ``server``: SemiAnalysis' DGX H100 bill of materials)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from advisor.scenario import SLA, Cost, Hardware, Options, Scenario, Workload
from advisor.search.budget import budget
from advisor.search.recommend import recommend

PRICES = yaml.safe_load((Path(__file__).resolve().parent.parent / "data/prices.yaml").read_text())
H100 = PRICES["prices"]["h100-sxm"]
HOST = PRICES["hosting"]["usd_per_kw_month"]
SERVER = PRICES["server"]["non_gpu_usd"]  # $32,010 (SemiAnalysis DGX H100 BOM, non-GPU items)


def _scenario(**cost) -> Scenario:
    return Scenario(
        hardware=Hardware(gpus=["h100-sxm"], gpus_per_node=8, nodes=2),
        workload=Workload(concurrent_users=200, arrival_rate_per_s=None, think_time_s=15.0),
        sla=SLA(ttft_ms=1000.0, tpot_ms=50.0),
        options=Options(weight_dtypes=["fp8"], kv_dtypes=["fp8"], disaggregated=False),
        cost=Cost(**cost),
    )


@pytest.fixture(scope="module")
def rec(point_predictions_module):
    return recommend(_scenario())


def test_purchase_budget_by_hand(rec):
    s, d = _scenario(), rec.best
    b = budget(s, d)
    servers = -(-d.gpus // 8)  # ceil(GPUs / 8 per server)
    assert b.servers == servers
    n = servers * 8  # whole servers bought
    purchase = servers * (8 * H100["purchase_usd"] + SERVER)  # 8 x $37,000 + $32,010 each
    assert b.purchase_usd == pytest.approx(purchase)
    assert b.billed_gpus == n
    kw = n * 0.700
    parts = {x.item: x.usd_per_month for x in b.lines}
    assert parts["amortisation"] == pytest.approx(purchase / 48)  # 4 years x 12 months
    assert parts["power"] == pytest.approx(kw * 1.3 * 730 * 0.12)  # PUE 1.3, $0.12/kWh
    assert parts["hosting"] == pytest.approx(kw * HOST)  # CBRE $/kW-month
    monthly = purchase / 48 + kw * 1.3 * 730 * 0.12 + kw * HOST
    assert b.monthly_usd == pytest.approx(monthly)
    assert b.usd_per_user_month == pytest.approx(monthly / 200)
    tokens = d.throughput_tok_s * 3600 * 730 * 0.7  # useful 70% of the hours
    assert b.usd_per_million_tokens == pytest.approx(monthly / tokens * 1e6)
    # the same cost per million tokens as the search ranks by (hosting included there too)
    assert b.usd_per_million_tokens == pytest.approx(d.usd_per_million_tokens)
    assert any("CBRE" in x for x in b.sources) and any("2026-05" in x for x in b.sources)
    # the comparison: renting the same GPUs at the catalog's $/GPU-hour, every hour
    assert b.other_mode == "hourly"
    assert b.other_mode_monthly_usd == pytest.approx(d.gpus * H100["hour_usd"] * 730)


def test_rental_budget_by_hand(rec):
    s = _scenario(mode="hourly")
    b = budget(s, rec.best)
    n = rec.best.gpus
    assert b.purchase_usd is None
    assert b.monthly_usd == pytest.approx(n * H100["hour_usd"] * 730)  # $2.95/GPU-h
    assert [x.item for x in b.lines] == ["rental"]
    assert b.other_mode == "purchase"
    servers = -(-n // 8)
    kw = servers * 8 * 0.7
    assert b.other_mode_monthly_usd == pytest.approx(
        servers * (8 * H100["purchase_usd"] + SERVER) / 48 + kw * 1.3 * 730 * 0.12 + kw * HOST
    )


def test_every_assumption_is_editable(rec):
    s = _scenario(gpu_price_usd=20_000.0, amortisation_years=3.0, pue=1.1, usd_per_kwh=0.2,
                  hosting_usd_per_kw_month=100.0, server_usd=50_000.0)  # fmt: skip
    b = budget(s, rec.best)
    servers = -(-rec.best.gpus // 8)
    kw = servers * 8 * 0.7
    assert b.monthly_usd == pytest.approx(
        servers * (8 * 20_000 + 50_000) / 36 + kw * 1.1 * 730 * 0.2 + kw * 100
    )
    assert all(x.endswith("your input") for x in b.sources[1:4])


def test_rate_load_has_no_cost_per_user():
    s = _scenario().model_copy(
        update={"workload": Workload(arrival_rate_per_s=5.0, concurrent_users=None)}
    )
    b = budget(s, recommend(s).best)
    assert b.usd_per_user_month is None and b.users is None
    assert b.usd_per_thousand_requests == pytest.approx(
        b.monthly_usd / (5.0 * 3600 * 730 * 0.7) * 1e3
    )


def test_cli_json_has_the_budget(capsys, point_predictions):
    import json

    from advisor.cli import main

    assert main(["recommend", "--users", "200", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50",
                 "--no-disaggregated", "--json"]) == 0  # fmt: skip
    r = json.loads(capsys.readouterr().out)
    bg = r["budget"]
    assert bg["gpus"] == r["best"]["gpus"]
    assert bg["monthly_usd"] == pytest.approx(sum(x["usd_per_month"] for x in bg["lines"]))
    assert bg["usd_per_user_month"] == pytest.approx(bg["monthly_usd"] / 200)


def test_pdf_has_the_budget_section(rec):
    import io

    from pypdf import PdfReader

    from advisor.report.pdf import build_report
    from advisor.search.budget import usd

    s = _scenario()
    pdf = build_report(s, recommendation=rec, charts=False, sensitivities=False)
    text = " ".join((p.extract_text() or "") for p in PdfReader(io.BytesIO(pdf)).pages)
    flat = " ".join(text.split())
    b = budget(s, rec.best)
    assert "Budget" in flat and f"Of the recommended deployment: {rec.best.description}" in flat
    assert f"Total per month {usd(b.monthly_usd)}" in flat
    assert f"Per user per month {usd(b.usd_per_user_month)}" in flat
    assert "CBRE" in flat


def test_recommendation_page_shows_the_budget(point_predictions):
    from streamlit.testing.v1 import AppTest

    from advisor.search.budget import usd

    app = str(Path(__file__).resolve().parent.parent / "app.py")
    at = AppTest.from_file(app, default_timeout=180)
    params = {"users": "200", "rate": "none", "think": "15", "ttft": "1000", "tpot": "50"}
    for k, v in params.items():
        at.query_params[k] = v
    at = at.run().switch_page("ui/pages/recommendation.py").run()
    assert not at.exception, at.exception
    s = Scenario(workload=Workload(concurrent_users=200, arrival_rate_per_s=None),
                 sla=SLA(ttft_ms=1000.0, tpot_ms=50.0))  # fmt: skip
    b = budget(s, recommend(s).best)
    m = {x.label: x.value for x in at.metric}
    assert m["Per month"] == usd(b.monthly_usd)
    assert m["Per user per month"] == usd(b.monthly_usd / 200)
    assert m["Servers"] == f"{b.servers:,}" and m["GPUs"] == f"{b.gpus:,}"


def test_pdf_budget_is_of_the_deployment_in_focus(rec):
    import io

    from pypdf import PdfReader

    from advisor.report.pdf import build_report
    from advisor.search.budget import usd
    from advisor.search.deployment_spec import parse_spec
    from advisor.search.focus import evaluate_spec

    s = _scenario()
    f = evaluate_spec(s, parse_spec("h100-sxm.tp4.pp1.dp2.fp8.fp8"))  # 8 GPUs, by hand
    pdf = build_report(s, recommendation=rec, focus=f.deployment, focus_note="by hand",
                       charts=False, sensitivities=False)  # fmt: skip
    flat = " ".join(" ".join((p.extract_text() or "") for p in PdfReader(io.BytesIO(pdf)).pages).split())  # fmt: skip
    b = budget(s, f.deployment)
    assert b.gpus == 8 and "Of the in-focus deployment" in flat
    assert f"Total per month {usd(b.monthly_usd)}" in flat

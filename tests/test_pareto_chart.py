"""The Pareto chart (advisor/charts/recommend_charts.py) with a TTFT target set: points coloured
by meeting every target, the recommended point marked, hover naming the deployment (escaped),
customdata[0] identifying it. Scenario: the bank workshop of issue 11 on one node of 8 H100
(Llama 3.1 70B, 2,000 / 300 tokens, P99 TTFT <= 2 s and P99 TPOT <= 50 ms) at 5 requests/s,
where the search finds many deployments meeting the SLA (H100 is calibrated, so its intervals
are narrow)."""

from __future__ import annotations

import pytest

from advisor.charts.recommend_charts import pareto_figure
from advisor.scenario import SLA, Hardware, Scenario, Workload
from advisor.search.recommend import recommend
from advisor.search.results import ParetoPoint

S = Scenario(
    name="Bank h100", model="llama-3.1-70b",
    hardware=Hardware(gpus=["h100-sxm"], gpus_per_node=8, nodes=1),
    workload=Workload(isl_tokens=2000, osl_tokens=300, arrival_rate_per_s=5.0),
    sla=SLA(ttft_ms=2000, tpot_ms=50),
)  # fmt: skip


@pytest.fixture(scope="module")
def rec():
    return recommend(S)


def test_points_meet_exactly_when_every_target_is_met(rec):
    assert rec.feasible > 1 and rec.best is not None
    pts = rec.pareto + rec.pareto_cost
    assert sum(p.meets_sla for p in pts) >= 2  # the frontier shows the ones that meet too
    for p in pts:
        # 2,000 ms TTFT and 50 ms TPOT at P99 (no E2E target); the headroom cap comes on top
        within = p.ttft_ms <= 2000 and p.tpot_ms <= 50
        assert p.meets_sla <= within, p.description  # meets => every target met
    # a point that misses only on TTFT is coloured as missing
    assert all(not p.meets_sla for p in pts if p.ttft_ms > 2000)


def test_recommended_point_is_a_star_with_its_legend_entry(rec):
    fig = pareto_figure(rec.pareto, rec.pareto_cost, latency_metric=rec.latency_metric,
                        sla_ms=50.0, best=rec.best.description)  # fmt: skip
    star = [t for t in fig.data if t.name == "recommended"]
    assert len(star) == 2 and star[0].showlegend and not star[1].showlegend
    assert star[0].marker.symbol == "star"
    # drawn at the recommendation's P99 TPOT and cost
    assert star[1].x[0] == pytest.approx(rec.best.tpot_ms.p99)
    assert star[1].y[0] == pytest.approx(rec.best.usd_per_million_tokens)
    meets = [t for t in fig.data if t.name == "meets the SLA"]
    ids = {row[0] for t in meets for row in t.customdata}
    # customdata[0] is the deployment's spec text (deployment_spec.py), as the search gives it
    assert str(rec.best.spec) in ids
    assert ids == {str(p.spec) for p in rec.pareto + rec.pareto_cost if p.meets_sla}
    shown = {row[4] for t in meets for row in t.customdata}
    assert rec.best.description in shown  # the hover names it (nothing to escape here)


def test_hover_escapes_the_description():
    p = ParetoPoint(description="TP=2 <b>x</b> & y", gpus=2, throughput_per_gpu_tok_s=10.0,
                    usd_per_million_tokens=1.0, latency_ms=20.0, meets_sla=True)  # fmt: skip
    fig = pareto_figure([p], [p], latency_metric="P99 <TPOT>", best=p.description)
    tr = next(t for t in fig.data if t.name == "meets the SLA")
    assert tr.customdata[0][0] == "TP=2 <b>x</b> & y"  # no spec: the description identifies it
    assert tr.customdata[0][4] == "TP=2 &lt;b&gt;x&lt;/b&gt; &amp; y"  # what the hover shows
    assert "%{customdata[4]}" in tr.hovertemplate and "P99 &lt;TPOT&gt;" in tr.hovertemplate

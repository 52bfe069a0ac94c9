"""One definition per number (issue 11): the recommendation PDF's summary, its latency chart and
the Recommendation page (AppTest) say the same P99 TPOT, throughput and cost for the same
scenario, and the chart's mean TPOT is the search's mean for the same deployment and load.

Scenarios: the bank workshop of issue 11 (Llama 3.1 70B, 200 concurrent users, 2,000 / 300
tokens, P99 TTFT <= 2 s, P99 TPOT <= 50 ms, two nodes of 8). Point predictions (no error
table): the test is about one number everywhere, not about which deployment wins at 80%. On MI300X the search recommends
disaggregated serving (the case where the PDF's chart used to add 48.7 ms of prefill
interruptions to a decode pool that never prefills); on one node of H100 at 5 requests/s an
aggregated deployment (whose prompts do stall decode)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from pypdf import PdfReader
from streamlit.testing.v1 import AppTest

from advisor.report.figures import latency_figure
from advisor.report.pdf import build_report
from advisor.scenario import SLA, Hardware, Scenario, Workload
from advisor.search.recommend import recommend
from ui.format import latency, sig3, usd
from ui.url import View, scenario_to_params

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def bank(gpu: str, rate: float | None = None, nodes: int = 2) -> Scenario:
    """The workshop with 200 users, or at an arrival ``rate`` (requests/s) instead."""
    load = {"arrival_rate_per_s": rate} if rate else {"arrival_rate_per_s": None,
                                                      "concurrent_users": 200}  # fmt: skip
    return Scenario(
        name=f"Bank {gpu}", model="llama-3.1-70b",
        hardware=Hardware(gpus=[gpu], gpus_per_node=8, nodes=nodes),
        workload=Workload(isl_tokens=2000, osl_tokens=300, **load),
        sla=SLA(ttft_ms=2000, tpot_ms=50),
    )  # fmt: skip


def _pdf_text(s: Scenario, rec) -> str:
    pdf = build_report(s, recommendation=rec, sensitivities=False, charts=False)
    return " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())


def _page_metrics(s: Scenario) -> dict[str, str]:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in scenario_to_params(s, View()).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Recommendation"
    return {m.label: m.value for m in at.metric}


def _chart_bars(fig) -> dict[str, dict[str, float]]:
    """{subplot title: {component: ms}} of ``breakdown_figure``."""
    titles = [a.text for a in fig.layout.annotations]
    out: dict[str, dict[str, float]] = {t: {} for t in titles}
    for tr in fig.data:
        i = int((tr.xaxis or "x")[1:] or 1) - 1
        out[titles[i]][tr.name] = float(tr.x[0])
    return out


@pytest.mark.parametrize(
    "gpu, rate, nodes, kind",
    [("mi300x", None, 2, "disaggregated"), ("h100-sxm", 2.0, 1, "aggregated")],
)
def test_pdf_summary_chart_and_page_agree(gpu, rate, nodes, kind, point_predictions):
    s = bank(gpu, rate, nodes)
    rec = recommend(s)
    b = rec.best
    assert b is not None and b.kind == kind  # the case this test is about
    flat = _pdf_text(s, rec)
    metrics = _page_metrics(s)

    # P99 TPOT: page metric, PDF summary line and chart title are the search's P99
    tpot = f"{b.tpot_ms.p99:,.1f} ms"
    # the page rounds for people (ui/format.py, 3 significant figures): the same number
    assert metrics["P99 TPOT"] == latency(b.tpot_ms.p99)
    # (an interval may follow the number: "P99 TPOT 35.9 ms (80% range 26.5-48.6 ms) against")
    assert re.search(rf"P99 TPOT {re.escape(tpot)} (\([^)]*\) )?against ≤ 50 ms: met", flat)
    fig = latency_figure(rec, s)
    assert f"P99 TPOT {tpot}" in fig.layout.title.text
    # cost and throughput per GPU: the same number on the page and in the PDF summary
    assert metrics["USD per M tokens"] == usd(b.usd_per_million_tokens)
    assert f"Cost {b.usd_per_million_tokens:,.3f} USD per million output tokens" in flat
    per_gpu = f"{b.throughput_per_gpu_tok_s:,.0f}"
    assert metrics["Tokens/s per GPU"] == sig3(b.throughput_per_gpu_tok_s)
    assert (
        f"Throughput {b.throughput_tok_s:,.0f} output tokens/s on {b.gpus} GPUs ({per_gpu} per GPU)"
        in flat
    )

    # the chart is labelled as means and drawn for the same deployment and load: its TPOT bar
    # adds up to the search's mean TPOT, which lies between the P50 and the P99
    assert fig.layout.title.text.startswith("Where the time goes, means")
    bars = _chart_bars(fig)
    (tpot_title,) = [t for t in bars if t.startswith("Mean TPOT")]
    assert f"batch {b.step_breakdown_ms['batch']:.0f}" in tpot_title
    mean = sum(bars[tpot_title].values())
    assert mean == pytest.approx(b.tpot_mean_ms, rel=1e-6)
    assert b.tpot_ms.p50 * 0.9 <= mean <= b.tpot_ms.p99
    stalls = bars[tpot_title].get("prefill interruptions", 0.0)
    if kind == "disaggregated":
        # the decode pool never prefills: no stalls in the chart, as the summary says
        assert stalls == 0.0
        assert "never stall for prompts" in flat
    else:
        # aggregated: prompts arriving stall decode; the stalls are the mean TPOT beyond the step
        step = sum(v for k, v in b.step_breakdown_ms.items() if k != "batch")
        assert stalls == pytest.approx(b.tpot_mean_ms - step, rel=1e-6) and stalls > 0


def test_latency_page_estimate_of_a_decode_pool_has_no_prefill_stalls(point_predictions):
    """The search's decode pool never prefills; the performance model of one decode-pool replica
    (what the Latency page shows for a disaggregated deployment) says the same: TPOT is the
    decode step at that batch, with no prefill interruptions, and it equals the search's mean
    TPOT within the step-table interpolation (the search tabulates the step over batch sizes)."""
    from advisor.catalog import accelerators
    from advisor.perf.model.estimate import estimate
    from advisor.search.focus import estimate_input

    s = bank("mi300x")
    b = recommend(s).best
    assert b.kind == "disaggregated"
    inp = estimate_input(s, b.spec, b.running_batch)
    assert inp.prefill_elsewhere
    est = estimate(s.model_spec(), accelerators()[b.gpu], inp)
    assert "prefill_interruptions_ms_per_token" not in est["breakdown"]
    step = sum(est["breakdown"]["decode_step"].values())
    assert est["tpot_ms"] == pytest.approx(step)
    assert est["tpot_ms"] == pytest.approx(b.tpot_mean_ms, rel=0.05)
    # the same replica with prompts prefilled in place would stall (the aggregated model)
    agg = estimate(s.model_spec(), accelerators()[b.gpu],
                   inp.model_copy(update={"prefill_elsewhere": False}))  # fmt: skip
    assert agg["breakdown"]["prefill_interruptions_ms_per_token"] > 0


def test_speculative_page_of_a_decode_pool_charges_no_target_prefill():
    """Reported on the Speculative page for the default scenario's disaggregated deployment:
    "Speedup per token 1.82x" beside "TPOT, speculative 17.8 ms" and "Plain decode step 18.0 ms".
    The decode pool never prefills its prompts (the other pool does), but the speculative path
    charged every new prompt's target prefill as a stall anyway. Only the draft's pass over the
    prompt (it builds the draft's KV on the decode GPUs) may stall it now, so the speculative
    TPOT is the plain step / speedup plus that small stall; aggregated, the target's stall stays."""
    from advisor.catalog import accelerators, get_model
    from advisor.perf.model.estimate import estimate
    from advisor.scenario import Scenario
    from advisor.search.deployment_spec import parse_spec
    from advisor.search.focus import estimate_input, evaluate_spec

    # the default scenario's disaggregated pair (its winner until the tie-break on headroom)
    s = Scenario()
    b = evaluate_spec(s, parse_spec("h100-sxm.tp1.pp1.dp1.ptp1.pdp1.int4.fp8")).deployment
    assert b.kind == "disaggregated"
    inp = estimate_input(s, b.spec, concurrency=10).model_copy(update={
        "spec_draft": get_model("llama-3.2-1b"), "spec_tokens": 4, "spec_acceptance": 0.7})  # fmt: skip
    assert inp.prefill_elsewhere
    est = estimate(s.model_spec(), accelerators()[b.gpu], inp)
    sp = est["speculative"]
    no_stall = sp["plain_step_ms"] / sp["speedup"]
    draft_stall = est["breakdown"]["prefill_interruptions_ms_per_token"]
    assert est["tpot_ms"] == pytest.approx(no_stall + draft_stall)
    # a 1B draft's pass over a 1,024-token prompt, spread over 255 tokens: a few % of the TPOT
    assert draft_stall < 0.05 * est["tpot_ms"]
    agg = estimate(s.model_spec(), accelerators()[b.gpu],
                   inp.model_copy(update={"prefill_elsewhere": False}))  # fmt: skip
    assert agg["breakdown"]["prefill_interruptions_ms_per_token"] > 10 * draft_stall


def test_prefill_elsewhere_needs_a_fixed_concurrency():
    from advisor.perf.model.estimate import EstimateInput

    with pytest.raises(ValueError, match="prefill_elsewhere .* needs a fixed concurrency"):
        EstimateInput(prefill_elsewhere=True, qps=2.0, concurrency=None)

"""Latency, Speculative decoding, Trust and Article check pages under AppTest.

Expected numbers come from the advisor functions the pages call (estimate, validation_report,
article_check.claims) with the same inputs; the default scenario is advisor.scenario.Scenario().
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.article_check import claims
from advisor.catalog import get_accelerator, get_model
from advisor.perf.model.estimate import estimate
from advisor.perf.model.sweeps import fmt_ms
from advisor.perf.validation.validate import validation_report
from advisor.scenario import Scenario
from advisor.search.deployment_spec import parse_spec
from advisor.search.focus import estimate_input, evaluate_spec

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = ["ui/pages/latency.py", "ui/pages/speculative.py", "ui/pages/trust.py",
         "ui/pages/article.py"]  # fmt: skip


def _page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    return at.switch_page(page).run()


def _latency_in_focus(dep: str) -> AppTest:
    """The Latency page opened by a link that puts deployment ``dep`` in focus."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["dep"] = dep
    at.run()
    at.switch_page("ui/pages/latency.py").run()
    assert not at.exception
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_with_the_default_scenario(page):
    at = _page(page)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_latency_numbers_follow_the_deployment_in_focus():
    # A link naming a deployment (TP=8, fp16) puts it in focus; the page shows the search's
    # percentiles for it (evaluate_spec) and one replica's means (estimate, same inputs).
    dep = "h100-sxm.tp8.pp1.dp1.fp16.fp16"
    at = _latency_in_focus(dep)
    s, spec = Scenario(), parse_spec(dep)
    d = evaluate_spec(s, spec).deployment
    e = estimate(get_model(s.model), get_accelerator("h100-sxm"), estimate_input(s, spec))
    m = _metrics(at)
    assert m["P99 TPOT"] == fmt_ms(d.tpot_ms.p99)
    assert m["P99 TTFT"] == fmt_ms(d.ttft_ms.p99)
    assert m["Mean TTFT"] == fmt_ms(e["ttft_ms"])
    assert m["Mean TPOT"] == fmt_ms(e["tpot_ms"])
    assert m["Output tok/s"] == f"{e['throughput_tok_s']:,.0f}"
    assert "TP=8" in at.caption[0].value
    assert any(dep in i.value or "(TP=8) h100-sxm" in i.value for i in at.info)


def test_latency_engine_line_states_the_fitted_collective_efficiency():
    # The all-reduce share of a step depends on the in-engine collective efficiency fitted for
    # the deployment's fabric (data/calibration.yaml fabrics.nvlink for the default H100 SXM
    # deployment); the page says which value it used and on how many rows it was fitted.
    import yaml

    doc = yaml.safe_load((ROOT / "data" / "calibration.yaml").read_text(encoding="utf-8"))
    nvl = doc["fabrics"]["nvlink"]
    at = _page("ui/pages/latency.py")
    line = next(i.value for i in at.info if "Engine profile" in i.value)
    assert (
        f"All-reduces over NVLink move their data at {nvl['collective_efficiency']:.0%} of its"
        in line
    )
    assert f"fitted on {nvl['rows']} multi-GPU rows over NVLink" in line
    assert "uncalibrated" not in line


def test_interconnect_caption_states_each_links_collective_efficiency():
    # The Interconnect chart moves each link's bytes at its fabric's in-engine
    # collective efficiency (data/calibration.yaml fabrics; 1 over PCIe and the networks); the
    # caption under it says which value each link drawn uses.
    import yaml

    doc = yaml.safe_load((ROOT / "data" / "calibration.yaml").read_text(encoding="utf-8"))
    nvl = doc["fabrics"]["nvlink"]
    at = _page("ui/pages/interconnect.py")
    cap = next(c.value for c in at.caption if "collective efficiency" in c.value)
    cap = cap.replace("\\", "")  # the markdown escapes of the link names (ui.format.md_escape)
    assert (
        f"{nvl['collective_efficiency']:.2f} (fitted on {nvl['rows']} multi-GPU rows over NVLink)"
        in cap
    )
    assert "1.00 (the link, not the GPUs' copy kernels, sets the rate)" in cap


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_latency_engine_line_states_the_prefill_dispatch_floor_only_where_fitted(engine):
    # data/calibration.yaml fits a host-dispatch time per kernel only for the engines that run a
    # prefill eagerly (calibrate.EAGER_PREFILL: SGLang, not vLLM); an engine without one must not
    # read "at least 0.0 us per kernel".
    import yaml

    doc = yaml.safe_load((ROOT / "data" / "calibration.yaml").read_text(encoding="utf-8"))
    fitted = doc["engines"][engine].get("kernel_dispatch_s")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["eng"] = engine
    at.run()
    at.switch_page("ui/pages/latency.py").run()
    line = next(i.value for i in at.info if "Engine profile" in i.value)
    assert f"Engine profile **{engine}**" in line
    assert "0.0 µs per kernel" not in line
    if fitted:
        assert f"a prefill at least {fitted * 1e6:.1f} µs per kernel" in line
    else:
        assert "no host-dispatch floor under a prefill" in line


@pytest.mark.parametrize(("dep", "lowp"), [("h100-sxm.tp2.pp1.dp1.fp8.fp8", True),
                                           ("h100-sxm.tp2.pp1.dp1.fp16.fp16", False)])  # fmt: skip
def test_latency_engine_line_states_the_routed_experts_efficiency(dep, lowp):
    # Mixtral-8x7B in fp8 runs fp8 expert GEMMs, in fp16 16-bit ones: data/calibration.yaml fits
    # the two efficiencies apart (hopper's own fp8/fp4 value where the family has one).
    import yaml

    doc = yaml.safe_load((ROOT / "data" / "calibration.yaml").read_text(encoding="utf-8"))
    g, fam = doc["global"], doc["families"]["hopper"]
    want = fam.get("moe_efficiency_lowp", g["moe_efficiency"]) if lowp else g["moe_efficiency"]
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["m"] = "mixtral-8x7b"
    at.query_params["dep"] = dep
    at.run()
    at.switch_page("ui/pages/latency.py").run()
    line = next(i.value for i in at.info if "Engine profile" in i.value)
    kind = "fp8/fp4" if lowp else "16-bit"
    assert f"Routed-expert (MoE) kernels at {want:.0%} of that efficiency ({kind} experts" in line


def test_speculative_speedup_follows_the_sliders():
    at = _page("ui/pages/speculative.py")
    speedup = lambda: next(v for k, v in _metrics(at).items() if k.startswith("Speedup per token"))  # noqa: E731
    before = speedup()
    at.slider(key="spec.acceptance").set_value(0.2).run()
    after = speedup()
    # Lower acceptance: fewer tokens per target step (1.25 at a = 0.2, k = 4 vs 2.77 at 0.7).
    assert _metrics(at)["Tokens per target step"] == "1.25"
    assert float(after.rstrip("×")) < float(before.rstrip("×"))


def test_trust_filter_by_gpu_narrows_the_rows():
    at = _page("ui/pages/trust.py")
    # Issue 12: the page leads with the out-of-sample table, in-sample second.
    heads = [h.value for h in at.subheader]
    assert heads[0].startswith("Out of sample")
    assert [h.split(":")[0] for h in heads[1:5]] == ["Do the ranges hold?", "Percentiles",
                                                      "How repeatable are the measurements?",
                                                      "In sample"]  # fmt: skip
    total = len(validation_report()["rows"])
    assert f"{total} measurements" in at.get("plotly_chart")[0].proto.spec
    at.multiselect(key="trust.gpu").set_value(["h100-sxm"]).run()
    n = sum(r["gpu"] == "h100-sxm" for r in validation_report()["rows"])
    assert f"Predicted vs measured: {n} measurements" in at.get("plotly_chart")[0].proto.spec
    assert 0 < n < total


def test_article_page_filters_by_verdict():
    at = _page("ui/pages/article.py")
    # each claim's value under "The article says" (ui/pages/article.py ARTICLE_SAYS)
    shown = lambda: len([m for m in at.markdown if m.value.startswith("The article says")])  # noqa: E731
    assert shown() == len(claims())
    at.segmented_control(key="article.show").set_value("wrong").run()
    wrong = sum(c.verdict == "wrong" for c in claims())
    assert shown() == wrong


def test_trust_shows_how_often_the_ranges_hold():
    """Issue 12's target for the intervals: 70-90% of held-out measurements inside their own 80%
    range (data/crossval.yaml, scored by advisor.perf.model.intervals.coverage); the page shows it."""
    from advisor.perf.model.intervals import coverage, load_table

    at = _page("ui/pages/trust.py")
    table = next(df.value for df in at.dataframe if "inside the 80% range" in df.value.columns)
    row = table[table["predictions"] == "all"].iloc[0]
    expected = coverage(load_table(), 0.8)["all"]
    assert row["inside the 80% range"] == f"{expected['inside_pct']:.1f}%"
    assert 70.0 <= expected["inside_pct"] <= 90.0
    # the columns are for people, not the code's keys
    assert not any("ape_pct" in c for df in at.dataframe for c in df.value.columns)


def test_trust_warns_where_the_p99_ttft_runs_low():
    """The published TTFT tails (bench/percentiles.py: P99 TTFT at low load) sit far above the
    model's P99; the SLA is stated in P99 TTFT, so the page says so with the measured figure."""
    from advisor.perf.validation.percentiles import percentile_report

    low = percentile_report()["by_percentile"]["by_metric"]["TTFT P99 low"]
    at = _page("ui/pages/trust.py")
    texts = [w.value for w in at.warning]
    if low["bias_pct"] < -20:
        assert any(f"{-low['bias_pct']:.0f}% below the published P99" in t for t in texts)
    else:
        assert not any("published P99" in t for t in texts)


def test_latency_page_forecasts_the_clients_benchmark_run_as_the_cli_does():
    # The Latency page's benchmark run is bench_forecast.forecast_for on the deployment in focus
    # (the CLI's `estimate --num-prompts`): the same P99 TTFT, the command to run it, and a
    # prompt count out of range refused next to the field, not a traceback.
    from advisor.perf.validation.bench_forecast import forecast_for

    dep = "h100-sxm.tp8.pp1.dp1.fp16.fp16"
    at = _latency_in_focus(dep)
    s, spec = Scenario(), parse_spec(dep)
    inp = estimate_input(s, spec)
    e = estimate(get_model(s.model), get_accelerator("h100-sxm"), inp)
    prompts = at.number_input(key="bench_prompts")
    prompts.set_value(200).run()
    assert not at.exception
    run = forecast_for(get_model(s.model), get_accelerator("h100-sxm"), inp, prompts=200,
                       client="vllm", regime=e.get("load_regime"))  # fmt: skip
    assert any(run.command == c.value for c in at.code)
    table = next(d.value for d in at.dataframe if "P99" in d.value.columns and "metric" in d.value.columns
                 and "ITL" in set(d.value["metric"]))  # fmt: skip
    ttft = table.set_index("metric").loc["TTFT", "P99"]
    assert ttft.startswith(fmt_ms(run.ms["ttft"]["p99"]) + " (")
    # 200 prompts: the P99 reads 3 requests, no note; 10 prompts: one request sets it, and the
    # page says so as the CLI does (short_runs.short_run_note)
    assert not any("slowest requests" in str(c.value) for c in at.caption)
    prompts.set_value(10).run()
    assert not at.exception
    short = forecast_for(get_model(s.model), get_accelerator("h100-sxm"), inp, prompts=10,
                         client="vllm", regime=e.get("load_regime"))  # fmt: skip
    note = next(n for n in short.notes if "slowest requests" in n)
    assert any(note == c.value for c in at.caption)


def test_trust_shows_how_far_repeated_runs_differ():
    """The published repeats (advisor.perf.validation.repeats): the page lists each statistic's
    floor, the P99 TTFT's first, as repeat_summary computes it."""
    from advisor.perf.validation.repeats import repeat_summary

    at = _page("ui/pages/trust.py")
    assert "How repeatable are the measurements?" in [s.value for s in at.subheader]
    table = next(df.value for df in at.dataframe if "median floor %" in df.value.columns)
    first = repeat_summary()[0]
    assert table.iloc[0]["statistic"] == first["statistic"] == "TTFT P99"
    assert table.iloc[0]["median floor %"] == round(first["median_floor_pct"], 1)

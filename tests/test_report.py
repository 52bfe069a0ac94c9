"""PDF report: content (pypdf), Unicode, hostile free text, missing charts, CLI exit codes.

Expected values come from the recommendation for the same scenario (advisor.search.recommend)
and from the inputs themselves (client name, SLA target).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pypdf import PdfReader

from advisor.report import images
from advisor.report.pdf import build_report, last_build_info
from advisor.report.text import NAME_LIMIT, clean
from advisor.scenario import Scenario
from advisor.search.recommend import recommend

ROOT = Path(__file__).resolve().parent.parent
CHARTS = images.charts_status()[0]


def _text(pdf: bytes) -> tuple[PdfReader, str]:
    r = PdfReader(io.BytesIO(pdf))
    return r, "\n".join(p.extract_text() for p in r.pages)


def _flat(s: str) -> str:
    return " ".join(s.split())


def _image_count(r: PdfReader) -> int:
    return sum(len(p.images) for p in r.pages)


@pytest.fixture(scope="module")
def default_report():
    s = Scenario()
    rec = recommend(s)
    pdf = build_report(s, client="Société Générale, Zürich", consultant="Ana ≤ 5 × 3 μs",
                       recommendation=rec)  # fmt: skip
    return s, rec, pdf, last_build_info()


def test_default_report_content(default_report):
    s, rec, pdf, info = default_report
    r, text = _text(pdf)
    flat = _flat(text)
    assert pdf.startswith(b"%PDF")
    # Summary, quality, scenario, charts, assumptions, validation, article, sources, launch
    # appendix: 9 pages today; 12 leaves room for a longer explanation, not for a blank page.
    assert 3 <= len(r.pages) <= 12 and len(r.pages) == info["pages"]
    assert "Société Générale, Zürich" in flat and "≤" in flat and "μs" in flat
    assert rec.best is not None
    assert f"Recommended deployment: {rec.best.description}" in flat  # as the app shows it
    assert f"weights {rec.best.weights}" in flat and f"KV cache {rec.best.kv}" in flat
    assert f"{rec.best.gpus} × NVIDIA H100" in flat
    # SLA: P99 TPOT target 50 ms (Scenario default) and the predicted P99 TPOT, one decimal
    assert "≤ 50 ms" in flat
    assert f"P99 TPOT {rec.best.tpot_ms.p99:,.1f} ms" in flat
    assert f"{rec.best.usd_per_million_tokens:,.3f} USD per million output tokens" in flat
    assert "Page 1 of" in flat and "Appendix C: sources" in flat and "the fit never saw" in flat
    # the search's order (search/ranking.py rank_order), as the app and `recommend --help` say it
    assert ("Ranked by price per hour (whole servers when bought), then fewest GPUs in use, then "
            "most headroom, then lowest latency") in flat  # fmt: skip


@pytest.mark.skipif(not CHARTS, reason="no Chrome/Chromium for kaleido")
def test_images_embedded(default_report):
    _, _, pdf, info = default_report
    r, _ = _text(pdf)
    # memory, latency breakdown, Pareto: three figures when every builder is present
    assert _image_count(r) == info["images"] == 3 - len(info["missing_charts"])
    assert info["images"] >= 2


def test_missing_browser_listed(monkeypatch):
    monkeypatch.setattr(images, "browser_path", lambda: None)
    pdf = build_report(Scenario(), client="X", sensitivities=False)
    r, text = _text(pdf)
    assert _image_count(r) == 0
    flat = _flat(text)
    assert (
        "Missing charts" in flat and "apt-get install chromium" in flat and "BROWSER_PATH" in flat
    )
    assert "Memory and KV budget per GPU" in flat


def test_hostile_text_sanitised():
    hostile = (
        "<script>alert(1)</script>"
        + "".join(map(chr, range(32)))
        + "\u202eRTL\u200f"
        + "A" * 10_000
    )
    pdf = build_report(Scenario(), client=hostile, consultant=hostile, notes=hostile * 2,
                       sensitivities=False, charts=False)  # fmt: skip
    r, text = _text(pdf)
    flat = _flat(text)
    assert "<script>alert(1)</script>" in flat  # printed literally, never interpreted
    assert "\u202e" not in text and "\x00" not in text and "\x07" not in text
    # client + consultant truncated to 200 characters each, notes to 2,000 (text.py limits)
    # (the page header repeats the client, cut to 60 characters)
    base = _text(build_report(Scenario(), sensitivities=False, charts=False))[1].count("A")
    assert text.count("A") - base <= 2 * 200 + 2000 + 60 * len(r.pages)
    assert max(len(w) for w in text.split()) <= 80  # long runs are broken so cells can wrap
    assert len(r.pages) <= 8


def test_clean_limits():
    assert len(clean("x" * 10_000)) == NAME_LIMIT and clean("x" * 10_000).endswith("…")
    assert clean("a\x00b\x1fc\u202ed") == "abcd"
    assert clean("Zürich\tSociété") == "Zürich Société"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "report", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_cli_writes_pdf(tmp_path):
    out = tmp_path / "r.pdf"
    p = _cli("--out", str(out), "--client", "ACME Zürich", "--no-sensitivities", "--json")
    assert p.returncode == 0, p.stderr
    assert "ACME Zürich" in _flat(_text(out.read_bytes())[1])


@pytest.mark.parametrize(
    "args, needle",
    [
        ((), "--out is required"),
        (("--out", "/nonexistent-dir/r.pdf"), "does not exist"),
        (("--out", "{tmp}"), "is a directory"),
        (("--out", "{tmp}/r.pdf", "--scenario", "{tmp}/bad.json"), "unknown model"),
        (("--out", "{tmp}/r.pdf", "--qps", "-1"), "--qps"),
    ],
)
def test_cli_bad_input_exit_2(tmp_path, args, needle):
    (tmp_path / "bad.json").write_text('{"schema_version": 1, "model": "nope"}')
    p = _cli(*(a.format(tmp=tmp_path) for a in args))
    assert p.returncode == 2
    assert needle in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "Traceback" not in p.stderr


# --------------------------------------------------------------------------- comparison PDF


def _two_examples():
    from advisor.examples import EXAMPLES

    a, b = EXAMPLES["70b-4xh100-tpot50"], EXAMPLES["8b-1xl40s"]
    return a, b


@pytest.fixture(scope="module")
def compare_report():
    a, b = _two_examples()
    items = [(a.title, a.scenario), (b.title, b.scenario)]
    pdf = build_report(a.scenario, client="Société Générale – Zürich", compare=items,
                       sensitivities=False)  # fmt: skip
    return a, b, pdf, last_build_info()


def test_compare_report_opens_with_the_ranking(compare_report):
    a, b, pdf, info = compare_report
    r, _ = _text(pdf)
    flat = _flat(r.pages[0].extract_text())
    assert len(r.pages) == info["pages"] >= 3
    assert "2 scenarios ranked" in flat and "Société Générale – Zürich" in flat
    # both meet P99 TPOT <= 50 ms (examples.py); the cheaper per million output tokens comes first
    ra, rb = recommend(a.scenario).best, recommend(b.scenario).best
    assert ra.meets_sla and rb.meets_sla
    cheap, dear = (a, b) if ra.usd_per_million_tokens < rb.usd_per_million_tokens else (b, a)
    cheap_best = ra if cheap is a else rb
    assert f"Cheapest deployment that meets its SLA: {cheap.title}" in flat
    assert f"{cheap_best.usd_per_million_tokens:,.3f}" in flat
    assert flat.index(f"1 {cheap.title}") < flat.index(f"2 {dear.title}")
    # the detailed part is the top-ranked scenario's recommendation
    assert f"The top-ranked scenario in detail: {cheap.title}" in _flat(_text(pdf)[1])


def test_compare_report_content(compare_report):
    a, b, pdf, info = compare_report
    flat = _flat(_text(pdf)[1])
    # each scenario's SLA (examples.py: both P99 TPOT <= 50 ms) and its recommended deployment's
    # P99 TPOT and cost, as the search gives them
    assert flat.count("P99 TPOT ≤ 50 ms") >= 2
    for ex in (a, b):
        best = recommend(ex.scenario).best
        assert f"{best.tpot_ms.p99:,.1f} ms" in flat
        assert f"${best.usd_per_million_tokens:,.3f}" in flat
    # sources of both accelerators are listed (H100 and L40S)
    assert "NVIDIA H100" in flat and "L40S" in flat


@pytest.mark.skipif(not CHARTS, reason="no Chrome/Chromium for kaleido")
def test_compare_report_embeds_overlaid_charts(compare_report):
    *_, pdf, info = compare_report
    r, _ = _text(pdf)
    # memory, latency, Pareto of the top-ranked scenario + the two compare charts
    assert info["missing_charts"] == []
    assert _image_count(r) == info["images"] == 5


def test_compare_ranks_a_scenario_without_deployment_last_and_says_why():
    from advisor.scenario import Hardware

    a, _ = _two_examples()
    # Llama 3.1 405B fp16 on one L40S (48 GB): the weights (~810 GB) fit nowhere
    big = a.scenario.model_copy(update={"model": "llama-3.1-405b",
                                        "hardware": Hardware(gpus=["l40s"], gpus_per_node=1)})  # fmt: skip
    pdf = build_report(a.scenario, compare=[("A", big), ("A", a.scenario)], sensitivities=False,
                       charts=False)  # fmt: skip
    flat = _flat(_text(pdf)[1])
    assert "A (2)" in flat  # duplicate labels made unique (the charts key on them)
    assert "Cheapest deployment that meets its SLA: A (2)" in flat
    assert flat.index("1 A (2)") < flat.index("2 A no deployment fits")
    assert "no deployment fits in memory" in flat


def test_compare_hostile_labels_and_names():
    a, b = _two_examples()
    hostile = "<b>x</b>\x00\x1b[31m\u202e" + "Ü" * 10_000
    pdf = build_report(a.scenario, client=hostile, consultant=hostile,
                       compare=[(hostile, a.scenario), (hostile + "2", b.scenario)],
                       sensitivities=False)  # fmt: skip
    r, text = _text(pdf)
    assert "<b>x</b>" in _flat(text) and "\x00" not in text and "\x1b" not in text
    assert "\u202e" not in text
    assert max(len(w) for w in text.split()) <= 80
    assert len(r.pages) <= 10


def test_report_leads_with_the_out_of_sample_errors(default_report):
    # Issue 12: the PDF quotes the error on measurements the fit never saw (data/crossval.yaml,
    # leave one source out, then one accelerator family) before the in-sample fit.
    import yaml

    from advisor.catalog.loader import DATA_DIR

    _, _, pdf, _ = default_report
    flat = _flat(_text(pdf)[1])
    held = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))["held_out"]
    oos = flat.index("error on measurements the fit never saw")
    assert oos < flat.index("In sample: the fitted rows themselves")
    b1 = held["source"]["batch-1 decode"]
    assert f"one source batch-1 decode {b1['rows']} {b1['median_ape_pct']:.1f}" in flat[oos:]
    fam = held["accelerator_family"]["AMD rows"]
    assert (
        f"one accelerator family AMD rows {fam['rows']} {fam['median_ape_pct']:.1f}" in flat[oos:]
    )


def test_report_lists_each_familys_fp8_fp4_expert_efficiency(default_report):
    # data/calibration.yaml fits the fp8/fp4 routed experts' kernel efficiency per accelerator
    # family (CDNA3 has one; CDNA4 too since the MXFP4 Qwen3-Coder rows K0188-K0190 on MI355X;
    # Ampere has no fp8/fp4 kernels, no such rows, and uses the 16-bit experts' value).
    import yaml

    from advisor.catalog.loader import DATA_DIR

    _, _, pdf, _ = default_report
    flat = _flat(_text(pdf)[1])
    cal = yaml.safe_load((DATA_DIR / "calibration.yaml").read_text(encoding="utf-8"))
    fams, moe = cal["families"], cal["global"]["moe_efficiency"]
    c3 = fams["cdna3"]
    assert (f"cdna3 {c3['eta_mem']:.3f} {c3['eta_compute_16']:.3f} {c3['eta_compute_fp8']:.3f} "
            f"{c3['moe_efficiency_lowp']:.3f}") in flat  # fmt: skip
    c4 = fams["cdna4"]
    assert (
        f"cdna4 {c4['eta_mem']:.3f} n/a {c4['eta_compute_fp8']:.3f} {c4['moe_efficiency_lowp']:.3f} "
        in flat
    )
    a = fams["ampere"]
    assert "moe_efficiency_lowp" not in a
    assert f"ampere {a['eta_mem']:.3f} {a['eta_compute_16']:.3f} n/a {moe:.3f} (16-bit)" in flat


def test_report_states_the_fitted_collective_efficiency(default_report):
    # The all-reduce component of every multi-GPU latency uses the in-engine collective
    # efficiency fitted for its fabric (data/calibration.yaml fabrics); the appendix states each
    # fabric's value.
    import yaml

    from advisor.catalog.loader import DATA_DIR

    _, _, pdf, _ = default_report
    flat = _flat(_text(pdf)[1])
    cal = yaml.safe_load((DATA_DIR / "calibration.yaml").read_text(encoding="utf-8"))
    nvl, xgmi = (cal["fabrics"][k]["collective_efficiency"] for k in ("nvlink", "xgmi"))
    # (a page break may fall inside the paragraph, now in Appendix A: issue 38)
    assert f"over NVLink at {nvl:.2f} (fitted on" in flat
    assert f"over Infinity Fabric at {xgmi:.2f} (fitted on" in flat
    assert "all-to-alls move their data at a fraction of its nccl-tests rate" in flat


def test_pdf_range_that_excludes_its_estimate_says_which_way_the_model_errs():
    # The README's 70B example: P99 TPOT 34.3 ms, 80% range 27.7-33.8 ms (held-out vLLM-on-Hopper
    # TPOT rows came in below the model); P99 TTFT 369.5 ms inside 227.6-678.4 ms.
    from advisor.report.facts import Deployment

    d = Deployment("x", intervals={"confidence": 0.8, "percentile": 99,
                                   "ttft_ms": [227.6, 678.4], "tpot_ms": [27.7, 33.8]})  # fmt: skip
    assert (
        d.range_text("TPOT", 34.3) == " (80% steady range 27.7-33.8 ms; the model runs high here)"
    )
    assert d.range_text("TTFT", 369.5) == " (80% steady range 227.6-678.4 ms)"
    assert d.range_text("TPOT") == " (80% steady range 27.7-33.8 ms)"


def test_report_without_a_recommendation_draws_the_closest_miss_it_names():
    # Reported: with no deployment meeting the SLA, the summary named the closest miss (TP=8 on
    # 8 x L40S) while the memory chart drew Llama 3.1 405B at TP=1, PP=1 (217 GB of weights on a
    # 48 GB GPU), a deployment the report never discussed, and the latency chart was missing.
    # Now both charts are the closest miss's, as the app's focus puts it (ui/focus.py).
    from advisor.scenario import SLA, Hardware, Options, Workload

    s = Scenario(
        model="llama-3.1-405b", hardware=Hardware(gpus=["l40s"], gpus_per_node=8),
        options=Options(weight_dtypes=["int4"], kv_dtypes=["fp16", "fp8"]),
        workload=Workload(isl_tokens=600, osl_tokens=400, arrival_rate_per_s=0.2),
        sla=SLA(ttft_ms=2000, tpot_ms=50),
    )  # fmt: skip
    rec = recommend(s)
    assert rec.best is None and rec.near_misses
    closest = rec.near_misses[0].deployment
    pdf = build_report(s, recommendation=rec, sensitivities=False, charts=CHARTS)
    flat = _flat(_text(pdf)[1])
    # the memory chart is drawn for the closest miss's TP and PP
    from advisor.report.context import Context
    from advisor.report.sections.charts import memory_figure

    ctx = Context(s, rec, None, None, [], described=closest)
    assert ctx.closest_miss is closest
    title = memory_figure(ctx).layout.title.text
    assert f"TP={closest.tp}, PP={closest.pp}" in title and closest.tp > 1
    if CHARTS:
        assert "the charts show the closest miss, " + _flat(closest.description) in flat
        info = last_build_info()
        assert info["missing_charts"] == []  # memory, latency (of the closest miss), Pareto
        assert info["images"] == 3


def test_a_focus_that_cannot_serve_the_load_says_why_without_infinite_numbers():
    # Llama 3.1 70B int4 on one MI300X at 5 requests/s of 2,000-token prompts: each prefill is
    # 2 x 70.6e9 x 2,000 = 282 TFLOP, >= 216 ms at the datasheet's 1,307 TFLOP/s, so the prompts
    # alone need 1.08 s of GPU time per second (test_focus.py has the same case in the app).
    from advisor.search.deployment_spec import parse_spec
    from advisor.search.focus import evaluate_spec

    s = Scenario.model_validate({
        "model": "llama-3.1-70b", "hardware": {"gpus": ["mi300x"]}, "options": {"engine": "vllm"},
        "workload": {"isl_tokens": 2000, "osl_tokens": 300, "arrival_rate_per_s": 5},
        "sla": {"ttft_ms": 800, "tpot_ms": 60},
    })  # fmt: skip
    focus = evaluate_spec(s, parse_spec("mi300x.tp1.pp1.dp1.int4.fp16")).deployment
    assert focus is not None and not focus.stable
    _, text = _text(build_report(s, focus=focus, focus_note="chosen by hand", sensitivities=False))
    flat = _flat(text)
    assert "Deployment in focus: 1 x (TP=1, PP=1) on mi300x, weights int4, KV fp16" in flat
    # capacity <= 1 / 0.216 s = 4.6 requests/s < 5: below the offered load, said as such
    assert re.search(r"It saturates at 0\.\d× the offered load\.", flat) and "Headroom" not in flat
    assert ("Unstable at the offered load: prefilling the arriving prompts alone takes all of the "
            "GPUs' time; its queue grows without bound") in flat  # fmt: skip
    assert "cannot serve the offered load: its queue grows without bound" in flat  # budget
    assert "not computed" not in flat and "n/a USD" not in flat
    assert not re.search(r"\binf\b|\$inf|\bnan\b", flat, re.I), flat[:2000]


def test_measurement_sources_are_listed_per_publication_as_held_out():
    """Appendix C counts the rows behind an accelerator per publication, the unit leave one
    source out holds out (perf.validation.measurements.source_key). Found 2026-12-06: the 27 RTX
    PRO 6000 rows of TensorRT-LLM's perf-overview page (data/measurements-engine-perf-pages.csv
    E0807-E0833, three tables, one per model) read as "27 measurements from 3 sources", three
    bullets that looked the same once cut at 160 characters."""
    from advisor.report.context import Context
    from advisor.report.sections.sources import sources_appendix

    class Capture:
        def __init__(self):
            self.paras, self.lists = [], []

        def h1(self, *a, **k):
            pass

        h2 = h1

        def para(self, text, *a, **k):
            self.paras.append(text)

        def bullets(self, items, *a, **k):
            self.lists.append(list(items))

    base = Scenario()
    s = base.model_copy(
        update={"hardware": base.hardware.model_copy(update={"gpus": ["rtx-pro-6000"]})}
    )
    doc = Capture()
    sources_appendix(doc, Context(scenario=s, rec=None, rec_note=None, best=None, alternatives=[]))
    assert doc.paras[-1].startswith("27 published measurements from 1 source;")
    assert doc.lists[-1] == [
        "27 rows: github:NVIDIA/TensorRT-LLM docs/source/developer-guide/perf-overview.md"
    ]

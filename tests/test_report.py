"""PDF report: content (pypdf), Unicode, hostile free text, missing charts, CLI exit codes.

Expected values come from the recommendation for the same scenario (advisor.search.recommend)
and from the inputs themselves (client name, SLA target).
"""

from __future__ import annotations

import io
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
    assert 3 <= len(r.pages) <= 8 and len(r.pages) == info["pages"]
    assert "Société Générale, Zürich" in flat and "≤" in flat and "μs" in flat
    assert rec.best is not None
    assert f"Recommended deployment: {rec.best.description}" in flat  # as the app shows it
    assert f"weights {rec.best.weights}" in flat and f"KV cache {rec.best.kv}" in flat
    assert f"{rec.best.gpus} × NVIDIA H100" in flat
    # SLA: P99 TPOT target 50 ms (Scenario default) and the predicted P99 TPOT, one decimal
    assert "≤ 50 ms" in flat
    assert f"P99 TPOT {rec.best.tpot_ms.p99:,.1f} ms" in flat
    assert f"{rec.best.usd_per_million_tokens:,.3f} USD per million output tokens" in flat
    assert "Page 1 of" in flat and "Sources" in flat and "Measured error" in flat


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
    items = [(a.title, a.scenario, a.tp, a.pp), (b.title, b.scenario, b.tp, b.pp)]
    pdf = build_report(a.scenario, client="Société Générale – Zürich", compare=items,
                       sensitivities=False)  # fmt: skip
    return a, b, pdf, last_build_info()


def test_compare_report_content(compare_report):
    a, b, pdf, info = compare_report
    r, text = _text(pdf)
    flat = _flat(text)
    assert len(r.pages) == info["pages"] >= 3
    assert "Comparison of 2 scenarios" in flat and "Société Générale – Zürich" in flat
    # each scenario's SLA (examples.py: both P99 TPOT <= 50 ms) and its recommended deployment
    assert flat.count("P99 TPOT ≤ 50 ms") >= 2
    for ex in (a, b):
        best = recommend(ex.scenario).best
        assert best is not None and best.description in flat
    # the deployments the overlaid charts show: TP/PP as given (examples.py: 70B TP=4, 8B TP=1)
    assert "TP=4, PP=1, fp8 weights" in flat and "TP=1, PP=1, fp16 weights" in flat
    # sources of both accelerators are listed (H100 and L40S)
    assert "NVIDIA H100" in flat and "L40S" in flat


@pytest.mark.skipif(not CHARTS, reason="no Chrome/Chromium for kaleido")
def test_compare_report_embeds_overlaid_charts(compare_report):
    *_, pdf, info = compare_report
    r, _ = _text(pdf)
    # memory, latency, Pareto of the first scenario + the two compare charts
    assert info["missing_charts"] == []
    assert _image_count(r) == info["images"] == 5


def test_compare_without_tp_uses_recommended_shape_and_survives_bad_items():
    a, b = _two_examples()
    # TP=64 exceeds the 4 GPUs: the scenario is listed as not fitting, the report still builds
    pdf = build_report(a.scenario, compare=[("A", a.scenario), ("A", b.scenario, 64, 1)],
                       sensitivities=False)  # fmt: skip
    flat = _flat(_text(pdf)[1])
    assert "A (2)" in flat  # duplicate labels made unique (the charts key on them)
    # without TP/PP: the recommended deployment's shape (pdf._compare_shape; 1/1 if disaggregated)
    best = recommend(a.scenario).best
    tp, pp = (1, 1) if best.kind == "disaggregated" else (best.tp, best.pp)
    assert f"A: TP={tp}, PP={pp}," in flat
    assert "A (2): TP=64, PP=1" in flat


def test_compare_hostile_labels_and_names():
    a, b = _two_examples()
    hostile = "<b>x</b>\x00\x1b[31m\u202e" + "Ü" * 10_000
    pdf = build_report(a.scenario, client=hostile, consultant=hostile,
                       compare=[(hostile, a.scenario, 4, 1), (hostile + "2", b.scenario, 1, 1)],
                       sensitivities=False)  # fmt: skip
    r, text = _text(pdf)
    assert "<b>x</b>" in _flat(text) and "\x00" not in text and "\x1b" not in text
    assert "\u202e" not in text
    assert max(len(w) for w in text.split()) <= 80
    assert len(r.pages) <= 10

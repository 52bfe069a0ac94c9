"""A deployment with expert parallelism and attention data parallelism is described and budgeted
as that layout everywhere it is shown: the Memory and Latency pages and the PDF (the search weighs
those layouts for MoE models, and the hospital workshop's answer is one: Qwen3-235B on B200,
TP=2, EP=2, attention DP=2). Before, the Memory page budgeted a DEP deployment as plain TP and
offered attention DP as a what-if "the search does not choose"; the Latency page and the PDF
named it "TP=2, PP=1"."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog import get_accelerator, get_model
from advisor.physics.memory import memory_budget
from advisor.report.facts import Deployment
from advisor.scenario import DEFAULT_ENGINE
from ui.format import small_bytes

pytestmark = pytest.mark.app

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DEP = "b200.tp2.pp1.dp3.ep2.dpa2.fp8.fp8"
QWEN = "qwen3-235b-a22b"
PARAMS = {"m": "qwen3-235b-a22b", "g": "b200", "in": "1500", "out": "400", "dep": DEP}


def _page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in PARAMS.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_the_memory_page_budgets_the_attention_dp_deployment_in_focus():
    """Under attention DP each GPU holds the whole attention weights and 1/TP of the sequences'
    KV (physics.memory.kv_tp_fraction): Qwen3-235B's 4 KV heads over TP=2 are split by heads
    anyway, so a sequence's KV per GPU is the same, while each GPU also holds both halves of the
    attention weights (and, on the scenario's default engine vLLM, every other weight but the
    routed experts); the page's figures are that budget's, not plain TP's."""
    at = _page("ui/pages/memory.py")
    kw = dict(tp=2, pp=1, weights_dtype="fp8", kv_dtype="fp8", context_tokens=1900)
    m, g = get_model("qwen3-235b-a22b"), get_accelerator("b200")
    dep = memory_budget(m, g, attention_dp=True, engine=DEFAULT_ENGINE, **kw)
    plain = memory_budget(m, g, **kw)
    assert dep.weights_bytes_per_gpu > plain.weights_bytes_per_gpu  # the layouts differ
    metrics = {x.label: x.value for x in at.metric}
    assert metrics["Sequences (paged)"] == f"{dep.max_concurrent_sequences:,}"
    assert metrics["KV per sequence per GPU"] == small_bytes(dep.kv_bytes_per_sequence_per_gpu)
    captions = " ".join(c.value for c in at.caption)
    assert "TP=2, EP=2, attention DP=2" in captions
    assert "What if attention ran data parallel" not in captions  # it does already
    # the paged-vs-contiguous chart counts the same layout (its 16-token bar is the metric)
    spec = next(ch.proto.spec for ch in at.get("plotly_chart") if "Paged vs contiguous" in
                ch.proto.spec)  # fmt: skip
    assert f"{dep.max_concurrent_sequences} seq" in spec
    assert f"{plain.max_concurrent_sequences} seq" not in spec


@pytest.mark.parametrize("page", ["ui/pages/latency.py", "ui/pages/interconnect.py"])
def test_the_latency_and_interconnect_pages_name_the_layout(page):
    at = _page(page)
    assert any("TP=2, EP=2, attention DP=2" in c.value for c in at.caption)


def test_the_pdf_sentence_and_memory_chart_name_the_layout():
    d = Deployment(description="x", gpu="b200", gpu_name="NVIDIA B200", tp=2, pp=1, dp=3, ep=2,
                   attention_dp=2, weights="fp8", kv="fp8")  # fmt: skip
    assert "3 replicas (DP=3) of (TP=2, EP=2, attention DP=2) × PP=1" in d.sentence()
    plain = Deployment(description="x", gpu="b200", tp=2, pp=1, dp=3)
    assert "3 replicas (DP=3) of TP=2 × PP=1" in plain.sentence()


def test_the_calibrate_form_starts_at_the_deployment_in_focus():
    """A client checking the recommendation measures the deployment in focus: the form starts
    at its accelerator, TP, dtypes and MoE layout (it started at TP=1, bf16, plain TP)."""
    at = _page("ui/pages/calibrate.py")
    values = {w.key: w.value for kind in ("selectbox", "number_input", "checkbox")
              for w in getattr(at, kind) if w.key and w.key.startswith("calib.")}  # fmt: skip
    assert (values["calib.model"], values["calib.gpu"], values["calib.tp"]) == (QWEN, "b200", 2)
    assert (values["calib.weights"], values["calib.kv"]) == ("fp8", "fp8")
    assert values["calib.ep"] is True and values["calib.dpa"] is True

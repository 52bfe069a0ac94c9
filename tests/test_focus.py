"""One deployment in focus (issue 11): the deployment the Recommendation page names is the one
Memory, Latency, Interconnect and Speculative show, read from the rendered elements; choosing
another changes them all; a hand-set deployment that does not fit says so on every page; the
choice survives a share link.

Expected deployments come from the search itself (``recommend``) for the same scenario.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.scenario import Hardware, Scenario
from advisor.search.recommend import recommend
from tests.test_app_pages import hand_set

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DETAIL = ["memory", "latency", "interconnect", "speculative"]

#: (URL parameters, the same scenario) for the issue's four checks.
CASES = {
    "default": ({}, Scenario()),
    "405b": ({"m": "llama-3.1-405b", "n": "4"},
             Scenario(model="llama-3.1-405b", hardware=Hardware(nodes=4))),
    "8b-one-gpu": ({"m": "llama-3.1-8b", "gpn": "1"},
                   Scenario(model="llama-3.1-8b", hardware=Hardware(gpus_per_node=1))),
    "deepseek-v3": ({"m": "deepseek-v3", "n": "2"},
                    Scenario(model="deepseek-v3", hardware=Hardware(nodes=2))),
}  # fmt: skip


def _app(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def _shape(text: str, last_tp: bool = False) -> tuple[int, int, str, str]:
    """(TP, PP, weights, KV) named in a rendered caption (its first TP) or in a search
    description (``last_tp``: a disaggregated one names the decode pool's TP last)."""
    tp = re.findall(r"TP=(\d+)", text)
    pp = re.search(r"PP=(\d+)", text)
    w = re.search(r"weights (\w+)|(\w+) weights", text)
    kv = re.search(r"KV(?: cache)? (\w+)|(\w+) KV", text)
    assert tp and w and kv, text
    return int(tp[-1 if last_tp else 0]), int(pp.group(1)) if pp else 1, w.group(1) or w.group(2), kv.group(1) or kv.group(2)  # fmt: skip


def _banner(at: AppTest) -> str:
    """The banner's text as shown (markdown escapes removed)."""
    found = [_plain(e.value) for kind in ("info", "warning", "error") for e in getattr(at, kind)
             if "In focus" in e.value]  # fmt: skip
    assert len(found) == 1, found
    return found[0]


def _plain(markdown: str) -> str:
    return markdown.replace("\\", "")


def _page_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if "TP=" in c.value)


def _says_does_not_fit(at: AppTest) -> list[str]:
    texts = [e.value for kind in ("error", "warning", "info", "caption", "markdown")
             for e in getattr(at, kind)]  # fmt: skip
    return [t for t in texts if "not fit" in t.lower() and "article" not in t.lower()]


@pytest.mark.parametrize("case", list(CASES))
def test_detail_pages_show_the_recommended_deployment(case, point_predictions):
    params, scenario = CASES[case]
    best = recommend(scenario).best
    assert best is not None  # each case has a recommendation (the examples)
    at = _app(params)
    assert not at.exception
    named = next(s.value for s in at.success if s.value.startswith("**Recommended:**"))
    want = _shape(named, last_tp=True)
    assert want == (best.tp, best.pp, best.weights, best.kv)
    banner = _banner(at)
    assert best.spec.describe() in banner and banner.endswith("recommended")
    for page in DETAIL:
        at.switch_page(f"ui/pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert _banner(at) == banner, page
        assert _shape(_page_caption(at)) == want, (page, _page_caption(at))
        assert not _says_does_not_fit(at), (page, _says_does_not_fit(at))
        if page == "memory":
            assert {m.label: m.value for m in at.metric}["Fits"] == "yes"
            assert f"on **{at.session_state['scenario'].hardware.gpus[0]}" not in banner


def test_choosing_another_alternative_changes_every_page(point_predictions):
    scenario = CASES["405b"][1]
    rec = recommend(scenario)
    other = next(d for d in (rec.lowest_latency, rec.decision_matrix.article_shaped,
                             *[m.deployment for m in rec.near_misses])
                 if d is not None and (d.tp, d.pp, d.weights) != (rec.best.tp, rec.best.pp,
                                                                  rec.best.weights))  # fmt: skip
    at = _app(CASES["405b"][0])
    at.selectbox(key="focus.pick").set_value(str(other.spec)).run()
    assert not at.exception
    assert at.query_params["dep"] == str(other.spec)
    banner = _banner(at)
    assert other.spec.describe() in banner and "recommended" not in banner.split("—")[-1]
    for page in DETAIL:
        at.switch_page(f"ui/pages/{page}.py").run()
        assert _banner(at) == banner
        assert _shape(_page_caption(at)) == (other.tp, other.pp, other.weights, other.kv), page
    # and back: the button on a detail page restores the recommendation everywhere
    next(b for b in at.button if b.label == "Back to the recommended deployment").click().run()
    assert _banner(at).endswith("recommended")
    assert "dep" not in at.query_params
    assert _shape(_page_caption(at)) == (rec.best.tp, rec.best.pp, rec.best.weights, rec.best.kv)


def test_a_hand_set_deployment_that_does_not_fit_says_so_on_every_page():
    # Llama 3.1 70B fp16 on one H100: 141 GB of weights > 80 GB (datasheet).
    at = _app({})
    hand_set(at, gpu="h100-sxm", tp=1, pp=1, dp=1, weights="fp16", kv="fp16",
             speculative=False, disaggregated=False)  # fmt: skip
    assert not at.exception
    assert at.query_params["dep"] == "h100-sxm.tp1.pp1.dp1.fp16.fp16"
    for page in ["recommendation", "overview", *DETAIL]:
        at.switch_page(f"ui/pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        banner = _banner(at)
        assert "chosen by hand: does not fit: weights do not fit" in banner, (page, banner)
        assert banner in [_plain(e.value) for e in at.error], page  # shown as an error
        assert any(b.label == "Back to the recommended deployment" for b in at.button), page


def test_a_hand_set_deployment_that_misses_the_sla_says_so_on_every_page():
    # 70B fp16 on TP=4 at P99 TPOT <= 5 ms: one decode step reads 141 GB / 4 GPUs of weights
    # at 3.35 TB/s (datasheet) = 10.5 ms > 5 ms, whatever the batch.
    at = _app({"tpot": "5"})
    hand_set(at, gpu="h100-sxm", tp=4, pp=1, dp=2, weights="fp16", kv="fp16",
             speculative=False, disaggregated=False)  # fmt: skip
    for page in ["recommendation", *DETAIL]:
        at.switch_page(f"ui/pages/{page}.py").run()
        banner = _banner(at)
        assert "chosen by hand: misses the SLA" in banner and "TPOT" in banner, (page, banner)
        assert banner in [_plain(w.value) for w in at.warning], page


def test_a_share_link_reopens_the_same_deployment_and_a_bad_one_warns():
    at = _app({"m": "llama-3.1-8b"})
    rec = recommend(Scenario(model="llama-3.1-8b"))
    other = next(p.spec for p in rec.pareto if p.spec != rec.best.spec)
    at.selectbox(key="focus.pick").set_value(str(other)).run()
    params = {k: at.query_params[k] for k in at.query_params}
    assert params["dep"] == str(other)
    again = _app(params)
    again.switch_page("ui/pages/memory.py").run()
    assert other.describe() in _banner(again)
    assert not [w.value for w in again.warning if "ignored" in w.value]
    bad = _app({**params, "dep": "h100-sxm.tp3x.pp1.dp1.fp8.fp8"})
    text = _plain(" ".join(w.value for w in bad.warning))
    assert "tp3x" in text and "e.g. tp4" in text and "kept the recommended deployment" in text
    assert _banner(bad).endswith("recommended")


def _shown(at: AppTest) -> str:
    """Every text, caption, metric and table cell the page rendered."""
    parts = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
             for e in getattr(at, kind)]  # fmt: skip
    parts += [f"{m.label} {m.value}" for m in at.metric]
    parts += [df.value.to_string() for df in at.dataframe]
    parts += [t.value.to_string() for t in at.table]
    return _plain(" ".join(str(p) for p in parts))


def test_a_deployment_that_cannot_serve_the_load_says_why_and_quotes_no_infinite_price():
    # Llama 3.1 70B int4 on one MI300X at 5 requests/s of 2,000-token prompts: one prefill is
    # 2 x 70.6e9 x 2,000 = 282 TFLOP, >= 216 ms at the datasheet's 1,307 TFLOP/s, so the prompts
    # alone need 5 x 0.216 = 1.08 s of GPU time per second: the queue grows without bound.
    dep = "mi300x.tp1.pp1.dp1.int4.fp16"
    at = _app({"m": "llama-3.1-70b", "g": "mi300x", "eng": "vllm", "in": "2000", "out": "300",
               "rate": "5", "ttft": "800", "tpot": "60", "dep": dep})  # fmt: skip
    for page in ["recommendation", "latency", "compare"]:
        at.switch_page(f"ui/pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        shown = _shown(at)
        assert not re.search(r"\$\s*inf|\binf\b|\bnan\b", shown, re.I), (page, shown[:3000])
        if page != "compare":
            assert "prefilling the arriving prompts alone takes all of the GPUs' time" in _banner(
                at
            )
    at.switch_page("ui/pages/recommendation.py").run()
    assert "No cost per token: this deployment cannot serve the offered load" in _shown(at)


def test_when_nothing_fits_the_focus_names_a_precision_the_search_tried():
    """Kimi-K2 (1.03 T parameters, released in block fp8) on one node of 8 H100: nothing fits,
    and the search, serving the released weights, tried fp8 only. The banner named an fp16
    deployment ("257 GB > 75 GB", 2 bytes a weight), one the user's settings exclude; it now
    names fp8, 1 byte a weight: 1.03e12 / 8 GPUs ~ 129 GB each, still over the ~75 GB left."""
    at = _app({"m": "kimi-k2", "g": "h100-sxm"})
    assert not at.exception
    banner = _banner(at)
    assert "no deployment fits the hardware" in banner, banner
    assert _shape(banner)[2] == "fp8", banner
    assert "fp8 weights" in banner and "129 GB > 75 GB" in banner and "(fp8, TP=8" in banner

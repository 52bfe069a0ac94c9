"""Issue 16 items 1-2: user text never becomes markup, in plotly or in Streamlit markdown.

One hostile corpus (the names the independent attack used, issue 16) goes through the chart
builders and every page. Asserted: no HTML tag of the corpus survives in any plotly figure
(plotly reads ``<b>``, ``<a href>``, ``<span style>`` in every text field), and no markdown text
holds a link GitHub-flavoured markdown would make by itself (a bare URL, ``www.``, an e-mail
address: the "autolink literal" extension, github.github.com/gfm section 6.9) or an unescaped
emphasis. The text is still shown (the escaped form is present).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog import get_accelerator, get_model
from advisor.catalog.user_data import ENV_VAR
from advisor.charts import compare_charts as cc
from advisor.charts.theme import styled
from advisor.perf.model.estimate import EstimateInput, estimate
from advisor.scenario import Scenario
from advisor.store import Store
from ui.format import md_escape

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

#: Scenario names and an engagement drawn as markup in the Compare charts (issue 16, item 1).
HTML_NAMES = ["<b>X</b>", "<a href='//x.co'>X</a>", "<span style='font-size:60px'>X</span>"]
ENGAGEMENT = "<i>eng</i>"
#: Names that became live links in the Scenarios list and the "Saved ..." message (item 2).
LINK_NAMES = ["https://evil.example/login", "www.evil.example/path", "user@evil.example"]
#: An uploaded config.json's model name shown bold and linked in the Memory caption (item 2).
MODEL_NAME = "<img src=x onerror=alert(1)> __bold__ www.evil.com"
#: A tag of the corpus, unescaped (the app's own <b>, <br> in hovers and labels are fine).
RAW_TAG = re.compile(r"<img|<b>X|<a href|<span style|<i>eng", re.IGNORECASE)


def autolinks(markdown: str) -> list[str]:
    """The links GFM's autolink-literal extension would make in ``markdown``: backslash escapes
    are read first (they do not stop it), then ``http(s)://``, ``www.`` and ``x@y.z`` are linked
    where they start after a space, punctuation or the start of the text."""
    text = re.sub(r"\\(.)", r"\1", markdown)
    found = re.findall(r"(?i)(?:^|[\s(*_~])((?:https?://|www\.)[^\s<]+)", text)
    found += re.findall(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+", text, flags=re.ASCII)
    return found


def test_autolinks_detector_finds_what_gfm_links():
    # GFM spec examples 621-635 (extended autolinks): each is linked
    for text in ("Visit www.commonmark.org/help", "http://example.com", "foo@bar.baz",
                 r"https\://evil\.example", "(www.google.com/search?q=Markup+(business))"):  # fmt: skip
        assert autolinks(text), text
    assert not autolinks("no link here; TP=8, P99 <= 50 ms")


@pytest.mark.parametrize("name", [*LINK_NAMES, MODEL_NAME, "mailto:a@b.c", "HTTPS://E.X"])
def test_md_escape_leaves_no_autolink_and_keeps_the_text(name):
    out = md_escape(name)
    assert autolinks(out) == [], out
    assert re.sub(r"\\(.)", r"\1", out).replace("\u2060", "") == name  # shown as typed


# -- plotly --------------------------------------------------------------------------------------
def _spec(figure_json: str) -> str:
    """A figure's JSON with the characters plotly writes as \\u003c etc. decoded."""
    return json.dumps(json.loads(figure_json), ensure_ascii=False)


def _raw_tags(fig: go.Figure) -> list[str]:
    return RAW_TAG.findall(_spec(fig.to_json()))


def test_compare_charts_escape_every_label():
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("l40s")
    ok = estimate(model, gpu, EstimateInput(tp=1, concurrency=4))
    labels = [f"{ENGAGEMENT} / {n}" for n in HTML_NAMES] + HTML_NAMES
    fig = cc.latency_breakdown_figure({lab: ok for lab in labels})
    assert _raw_tags(fig) == []
    assert "&lt;b&gt;X&lt;/b&gt;" in _spec(fig.to_json())  # shown as typed
    rows = cc.batch_sweep(model, gpu, EstimateInput(tp=1), cc.powers_of_two(8))
    fig = cc.throughput_vs_batch_figure({lab: rows for lab in labels})
    assert _raw_tags(fig) == []
    # numbered in order (issue 38: labels stay distinct), the name shown as typed
    assert any(t.name.endswith(". &lt;b&gt;X&lt;/b&gt;") for t in fig.data)


def test_every_figure_title_is_escaped():
    fig = styled(go.Figure(), f"Where the time goes: {MODEL_NAME}")
    assert _raw_tags(fig) == [] and "&lt;img" in fig.layout.title.text
    # every builder returning a figure goes through styled (so its title is escaped)
    for path in (ROOT / "advisor/charts").glob("*_charts.py"):
        src = path.read_text()
        builders = re.findall(r"\ndef (\w+)\([^)]*\)[^:]*-> go\.Figure:", src, flags=re.DOTALL)
        for name in builders:
            body = src.split(f"\ndef {name}(", 1)[1].split("\ndef ", 1)[0]
            assert "styled(" in body, f"{path.name}:{name} does not call styled()"


# -- pages ---------------------------------------------------------------------------------------
@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    return tmp_path / "data"


def _markdown_texts(at: AppTest) -> list[str]:
    out: list[str] = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title",
                 "header", "subheader"):  # fmt: skip
        out += [str(x.value) for x in getattr(at, kind)]
    for kind in ("button", "checkbox", "expander", "selectbox", "multiselect", "radio"):
        out += [str(getattr(w, "label", "")) for w in getattr(at, kind)]
    return out


def _assert_plain(at: AppTest) -> None:
    assert not at.exception, at.exception[0].message if at.exception else ""
    texts = _markdown_texts(at)
    linked = [(t[:80], autolinks(t)) for t in texts if autolinks(t)]
    assert not linked, linked
    bold = [t for t in texts if re.search(r"(?<!\\)__bold|(?<!\\)<(img|b|a|span|i)[\s>]", t)]
    assert not bold, bold
    for chart in at.get("plotly_chart"):
        spec = _spec(chart.proto.spec)
        assert "<br>" in spec or "title" in spec  # decoded: a raw tag would be seen
        assert RAW_TAG.findall(spec) == [], RAW_TAG.findall(spec)


def test_hostile_names_on_the_scenarios_and_compare_pages(data_dir):
    store = Store(data_dir / "scenarios.sqlite3")
    for name in HTML_NAMES + LINK_NAMES:
        store.save(ENGAGEMENT, name, Scenario(name=name, model="llama-3.1-8b"))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("ui/pages/scenarios.py").run()
    _assert_plain(at)
    assert any("evil" in t for t in _markdown_texts(at))  # the names are listed
    at.text_input(key="sc.name").input(LINK_NAMES[0]).run()
    at.button(key="sc.save").click().run()
    assert any("Saved" in s.value for s in at.success)
    _assert_plain(at)
    at.switch_page("ui/pages/compare.py").run()
    picks = [f"{ENGAGEMENT} / {n}" for n in (HTML_NAMES[1], LINK_NAMES[2])]
    at.multiselect(key="cmp.pick").set_value(picks).run()
    assert len(at.get("plotly_chart")) >= 1
    _assert_plain(at)


def test_hostile_uploaded_model_name_on_every_page(data_dir):
    cfg = json.loads((ROOT / "tests/fixtures/hf/llama-3.1-8b.json").read_text())
    cfg["_name_or_path"] = MODEL_NAME
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.file_uploader[0].set_value(("c.json", json.dumps(cfg).encode(), "application/json"))
    at.run()
    assert at.session_state["scenario"].model_config_json is not None
    for page in ("overview", "memory", "latency", "interconnect", "speculative",
                 "recommendation", "scenarios", "compare", "trust", "article"):  # fmt: skip
        at.switch_page(f"ui/pages/{page}.py").run()
        _assert_plain(at)

"""Issue 38 replayed: the hospital workshop (Qwen3-235B-A22B and gpt-oss-120b; 400 clinicians
thinking 60 s; 6,000 / 400 tokens; P99 TTFT 3 s, TPOT 60 ms; one server of 8 MI300X, H200 or
B200), each view checked against the others under AppTest.

Expected values: the rule each page states (the capacity caption's ceil(R / limit)), the
figures another view of the same deployment shows (``recommend`` on the same scenario in this
process), and the issue's own examples.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog.user_data import ENV_VAR
from advisor.scenario import SLA, Hardware, Scenario, Workload
from ui.url import View, scenario_to_params

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    return tmp_path / "data"


def hospital(model: str = "qwen3-235b-a22b", gpu: str = "b200", name: str = "") -> Scenario:
    """The issue's workshop scenario on one server of 8 ``gpu``."""
    return Scenario(
        name=name or f"Hospital {model} on 8x {gpu}", model=model,
        hardware=Hardware(gpus=[gpu], gpus_per_node=8),
        workload=Workload(isl_tokens=6000, osl_tokens=400, arrival_rate_per_s=None,
                          concurrent_users=400, think_time_s=60.0),
        sla=SLA(percentile=99, ttft_ms=3000.0, tpot_ms=60.0),
    )  # fmt: skip


def opened(s: Scenario, page: str | None = None) -> AppTest:
    """The app opened on a share link of ``s`` (then ``page``, in the same session)."""
    at = AppTest.from_file(APP, default_timeout=240)
    for k, v in scenario_to_params(s, View()).items():
        at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_capacity_caption_rule_gives_the_replicas_of_its_table():
    """The caption "One replica serves up to X requests/s; a target rate R needs ceil(R / that)
    replicas": applied to the numbers as shown, the rule gives each row's replicas. On the B200 the
    limit was 2.7773 and the first row 2.7820 requests/s, both shown as "2.78", with 2
    replicas (the issue's "up to 6.44 requests/s yet 2.69 requests/s needs 2 replicas")."""
    at = opened(hospital())
    caption = next(c.value for c in at.caption if "a target rate R needs" in c.value)
    caption = caption.replace("\\", "")  # markdown escapes (ui.format.md_escape)
    limits = [float(x) for x in re.findall(r"up to ([\d.,]+) requests/s", caption)]
    table = next(d.value for d in at.dataframe if "requests/s" in d.value.columns)
    # an aggregated winner (3 x TP=2 when written) has one limit and a "replicas" column; a
    # disaggregated one (since 2026-12-07: prefill TP=2 + decode TP=2 DEP) one per pool
    columns = ["replicas"] if len(limits) == 1 else ["prefill replicas", "decode replicas"]
    assert len(limits) == len(columns), caption
    for row in table.to_dict("records"):
        rate = float(str(row["requests/s"]).replace(",", ""))
        for limit, col in zip(limits, columns, strict=True):
            assert math.ceil(rate / limit - 1e-9) == row[col], (caption, row)


def _trace_names(at: AppTest) -> list[str]:
    import json

    return [
        t.get("name") or ""
        for chart in at.get("plotly_chart")
        for t in json.loads(chart.proto.spec)["data"]
    ]


def test_latency_page_charts_mark_the_decode_batch_its_captions_state():
    """The Latency page states "decode batch 23 per replica" (the search's, 1 + its mean
    running batch: search/results.decode_batch); its roofline and batch sweep marked "batch 22",
    the one-replica estimate's mean running batch (21.8), a third figure for one quantity
    (the issue's "decode batch 77 / 76 / 75.8")."""
    from advisor.search.recommend import recommend
    from advisor.search.results import decode_batch_seqs

    s = hospital()
    n = decode_batch_seqs(recommend(s).best.running_batch)
    at = opened(s, "ui/pages/latency.py")
    text = " ".join(c.value for c in at.caption)
    assert f"decode batch {n} per replica" in text and f"at decode batch {n}:" in text
    names = _trace_names(at)
    assert f"decode (batch {n})" in names and f"scenario batch {n}" in names, names


def test_latency_page_says_the_mean_running_batch_and_the_decode_batch_apart():
    """The Latency page showed "Running seqs / replica 21.8" beside "decode batch 23" (issue 38's
    replay): two figures for one thing, it seemed. The search's mean running batch (21.82,
    ``recommend`` on the same scenario) is the metric, labelled a mean; the caption's decode
    batch says it is 1 + that mean, rounded (search/results.decode_batch)."""
    from advisor.search.recommend import recommend
    from advisor.search.results import decode_batch_seqs
    from ui.format import sig3

    s = hospital()
    rb = recommend(s).best.running_batch
    at = opened(s, "ui/pages/latency.py")
    metric = next(m for m in at.metric if "running seqs" in m.label.lower())
    assert metric.label == "Mean running seqs / replica" and metric.value == sig3(rb), metric
    text = " ".join(c.value for c in at.caption)
    assert (
        f"decode batch {decode_batch_seqs(rb)} per replica (1 + the mean {sig3(rb)} running" in text
    )


def test_speculative_page_states_the_latency_pages_tpot_beside_its_fixed_batch_ones():
    """The replay read "TPOT without speculation (ms), batch 23" 30.1 ms on the Speculative page
    and a mean TPOT of 29.5 ms on the Latency page for the same deployment. Speculation is
    modelled at a fixed batch only, so the page's TPOTs say how many they keep running, and the
    Latency page's figure (its own metric, read in the same session) is stated beside them
    with its load (400 users, the scenario's)."""
    s = hospital()
    at = opened(s, "ui/pages/latency.py")
    latency_tpot = next(m.value for m in at.metric if m.label == "Mean TPOT")
    at.switch_page("ui/pages/speculative.py").run()
    assert not at.exception and not at.error
    tpots = [m for m in at.metric if m.label.startswith("TPOT")]
    # the labels stay short (headless Chromium at 1280 px cut "TPOT without speculation (ms),
    # 57 kept ru..." in a third-width metric box); the fixed batch is in each tooltip
    assert [m.label for m in tpots] == ["TPOT, no speculation (ms)", "TPOT, with speculation (ms)"]
    # the same fixed batch in both (the running batch the Latency page's load keeps: 23 on the
    # 2026-12-03 calibration)
    kept = [
        re.match(r"with (\d+) sequences kept running on each replica", m.help or "") for m in tpots
    ]
    assert None not in kept and len({k.group(1) for k in kept}) == 1, [m.help for m in tpots]
    line = next(c.value for c in at.caption if "The Latency page's mean TPOT" in c.value)
    if "is this one" in line:  # the same figure (a disaggregated decode pool: no prefill stalls)
        assert line.endswith(f"without speculation is this one: {latency_tpot}."), line
        return
    assert f"without speculation, {latency_tpot}, is the deployment in focus" in line, line
    assert "400 users thinking 60 s" in line and "another load" in line


def test_latency_page_calls_a_pipeline_hand_off_no_all_reduce():
    """Qwen3-235B-A22B on 8 MI300X: the closest miss is 4 x (TP=1, PP=2) (when written); its
    step's communication is the pipeline's hand-off, which the Interconnect page says is "no
    tensor-parallel all-reduce"; the Latency page called it "all-reduce 0.01 ms"."""
    from advisor.search.recommend import recommend

    s = hospital(gpu="mi300x")
    d = recommend(s).near_misses[0].deployment
    at = opened(s, "ui/pages/latency.py")
    text = " ".join(c.value for c in at.caption)
    if d.tp == 1:
        step = text.split("Its decode step")[1].split("(the step the search priced")[0]
        assert "all-reduce" not in step and "pipeline hand-offs" in step, step
    inter = opened(s, "ui/pages/interconnect.py")
    said = " ".join(m.value for kind in ("markdown", "caption", "info") for m in inter.get(kind))
    assert ("no tensor-parallel all-reduce" in said) == (d.tp == 1)


#: The consultant's three scenarios: names sharing a long prefix, the accelerator last.
PREFIX = "St. Mary's Hospital clinical assistant, 400 clinicians, 6000/400 tokens, Qwen3-235B on"
SAVED = {g: f"{PREFIX} 8x {n}" for g, n in (("mi300x", "MI300X"), ("h200-sxm", "H200"),
                                            ("b200", "B200"))}  # fmt: skip


def _save_three(data_dir: Path) -> None:
    from advisor.store import DB_NAME, Store

    store = Store(data_dir / DB_NAME)
    for gpu, name in SAVED.items():
        store.save("default", name, hospital(gpu=gpu, name=name), {})


def test_compare_opens_with_the_three_saved_scenarios_in_a_fresh_session(_data_dir):
    """A fresh session's sidebar is the app's default (a Llama 3.1 70B on H100 the consultant
    never chose): Compare opened with it beside the saved scenarios (the issue: "opens with the
    sidebar scenario and a Llama example preselected")."""
    _save_three(_data_dir)
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.switch_page("ui/pages/compare.py").run()
    assert not at.exception, at.exception
    # the store lists the most recently saved first
    assert at.multiselect(key="cmp.pick").value == [
        f"default / {SAVED[g]}" for g in ("b200", "h200-sxm", "mi300x")
    ]


def test_compare_names_the_sidebar_by_its_saved_name(_data_dir):
    """The sidebar holds the B200 scenario, saved: Compare opened with "The sidebar scenario
    (now)" for it and the two others, so the B200 column and bars had no name of their own."""
    _save_three(_data_dir)
    at = opened(hospital(gpu="b200", name=SAVED["b200"]), "ui/pages/compare.py")
    picks = at.multiselect(key="cmp.pick").value
    assert sorted(picks) == sorted(f"default / {n}" for n in SAVED.values())


def test_over_the_budget_the_page_names_one_cheapest_deployment():
    """gpt-oss-120b on B200 with a $300,000 cap (one 8-GPU server costs $472,010): every
    deployment that meets the SLA is over the budget. The page put 4 x (TP=2, attention DP=2)
    in focus as "the cheapest" and its explanation called 1 x (TP=1) "the cheapest to buy",
    at the same price; now both name the first in the ranking (price per hour, then the fewest
    GPUs: search/ranking.py)."""
    from advisor.scenario import Cost

    s = hospital(model="gpt-oss-120b").model_copy(
        update={"cost": Cost(on_prem=True, max_capex_usd=300_000.0)}
    )
    at = opened(s)
    text = " ".join(x.value for kind in ("markdown", "caption", "error", "warning", "info")
                    for x in at.get(kind)).replace("\\", "")  # fmt: skip
    named = re.findall(r"The cheapest: (.+?) \(capex", text)
    to_buy = re.findall(r"the cheapest to buy, (.+?), costs", text)
    assert named and to_buy and named[0] == to_buy[0], (named, to_buy)
    assert named[0].startswith("1 x (TP=1, PP=1)")  # the fewest GPUs at the same price


def test_recommendation_says_how_active_parameters_are_counted():
    """The issue: "active parameters 22.2B (catalog) vs 21.6B (Recommendation), gpt-oss 5.7B
    vs 5.1B (the publisher counts 5.1B; say which convention and use it everywhere)". The
    gpt-oss card (arXiv 2508.10925, Table 1) counts 5.13B active without the input embedding;
    the page now says so beside the count."""
    at = opened(hospital(model="gpt-oss-120b"))
    text = " ".join(x.value for kind in ("markdown", "caption") for x in at.get(kind))
    assert "5.1B active per token (as its publisher counts them: without the input embedding" in (
        text.replace("\\", "")
    )


def test_comparison_pdf_keeps_what_tells_the_three_scenarios_apart():
    """The comparison PDF cut the three labels to 60 characters from the start: all read
    "default / St. Mary's Hospital clinical assistant, 400 clini…", told apart by "(2)" and
    "(3)" only, while the Compare page's charts kept the accelerator ("… B200"). Now the PDF
    keeps it too (charts.compare_charts.distinct_labels), in its tables and its charts."""
    import io

    from pypdf import PdfReader

    from advisor.report.pdf import build_report

    items = [(f"default / {SAVED[g]}", hospital(gpu=g, name=SAVED[g])) for g in SAVED]
    pdf = build_report(items[0][1], compare=items, sensitivities=False, charts=False)
    text = " ".join(
        " ".join(p.extract_text().split()) for p in PdfReader(io.BytesIO(pdf)).pages[:3]
    )
    for tail in ("MI300X", "H200", "B200"):
        assert f"… {tail}" in text, tail
    assert "clini… (2)" not in text and "clini…" not in text


def test_scenario_page_names_the_weights_the_search_tries(_data_dir):
    """gpt-oss-120b is searched in its released MXFP4 only (Options.released_weights; the
    recommendation: "weights mxfp4"); the Scenario page and Compare's inputs said "weights fp16,
    fp8, int8, int4", the sidebar's list the search does not use for it (the PDF said mxfp4)."""
    s = hospital(model="gpt-oss-120b")
    at = opened(s, "ui/pages/overview.py")
    said = " ".join(m.value for m in at.markdown)
    assert "weights mxfp4 (released);" in said and "weights fp16" not in said
    from advisor.store import DB_NAME, Store

    Store(_data_dir / DB_NAME).save("default", "gpt-oss", s.model_copy(update={"name": "o"}), {})
    Store(_data_dir / DB_NAME).save("default", "qwen", hospital(), {})
    cmp = opened(s, "ui/pages/compare.py")
    cells = (str(v) for t in cmp.table for col in t.value.to_dict().values() for v in col.values())
    table = " ".join(cells).replace("\\", "")  # markdown escapes (compare.shown)
    assert "mxfp4 (released) / fp16, fp8" in table


def test_explanation_counts_one_gpu_in_the_singular():
    """The replay's nit: gpt-oss-120b for the hospital wins on one B200 (its MXFP4 weights fit
    one GPU, as the explanation itself says), and the explanation said 'on 1 GPUs'."""
    from advisor.search.recommend import recommend

    text = " ".join(recommend(hospital(model="gpt-oss-120b")).explanation)
    assert "on 1 GPU with" in text
    assert "1 GPUs" not in text

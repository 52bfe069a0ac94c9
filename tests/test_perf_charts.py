"""Figure builders of the Latency, Speculative and Trust pages, called directly.

Expected values are the inputs (the builders must draw what they are given) and the physics
they come from: estimate() for the breakdown, ridge point = peak / bandwidth, speedup of the
same physics as estimate()'s speculative path.
"""

from __future__ import annotations

import numpy as np
import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.charts import latency_charts as lc
from advisor.charts.theme import TEMPLATE
from advisor.charts.trust_charts import trust_scatter
from advisor.perf.model.estimate import EstimateInput, estimate
from advisor.perf.model.replica import build_replicas
from advisor.perf.model.speculative_sweep import speedup_grid, speedup_vs_batch
from advisor.perf.model.sweeps import (
    batch_cap,
    batch_grid,
    batch_sweep,
    replica_config,
    roofline_points,
)
from advisor.perf.validation.trust import error_table, trust_rows
from advisor.perf.validation.validate import FAMILIES, validation_report

M, G = get_model("llama-3.1-70b"), get_accelerator("h100-sxm")
INP = EstimateInput(tp=4, concurrency=16)


@pytest.fixture(scope="module")
def replica():
    return build_replicas([replica_config(M, G, INP)])


def test_breakdown_figure_draws_estimates_components():
    e = estimate(M, G, INP)
    rows = lc.breakdown_rows(e)
    fig = lc.breakdown_figure(rows, "T")
    assert fig.layout.title.text == "T" and fig.layout.template == TEMPLATE
    drawn = {(t.y[0], t.name): t.x[0] for t in fig.data}
    assert drawn[("TPOT", "memory (weights + KV reads)")] == e["breakdown"]["decode_step"]["memory"]
    assert drawn[("TTFT", "compute")] == e["breakdown"]["prefill"]["compute"]
    # TTFT components sum to estimate's TTFT (prefill alone at concurrency, no queueing)
    ttft = sum(v for (n, _), v in drawn.items() if n == "TTFT")
    assert ttft == pytest.approx(e["ttft_ms"])


def test_roofline_ridge_and_points(replica):
    sweep = batch_sweep(replica, 1152, batch_grid(batch_cap(replica, 1280)))
    pts = roofline_points(replica, 1024, 16, 1152)
    assert pts["ridge_flops_per_byte"] == pytest.approx(replica.peak_flops[0] / replica.hbm_bw[0])
    # prefill of 1,024 tokens is compute-bound (right of the ridge), batch-16 decode memory-bound
    assert pts["prefill_intensity"] > pts["ridge_flops_per_byte"] > pts["decode_intensity"]
    fig = lc.roofline_figure(pts, sweep, "R", datasheet=(989e12, 3.35e12))
    assert fig.layout.title.text == "R"
    assert len(fig.data) == 6  # roof, datasheet roof, sweep, prefill, decode, ridge
    assert fig.data[-1].x[0] == pts["ridge_flops_per_byte"]


def test_roofline_title_wraps_in_a_half_width_column(replica):
    """The Latency page's roofline title, as it wrote it for Qwen3-235B-A22B on the B200 (the
    hospital workshop of issue 38), was cut to "... fp8 weigh…" at 1280 px: each line now
    holds at most 36 characters, and the whole title is there."""
    title = "Roofline: NVIDIA B200 (HGX/DGX B200, 180GB), fp8 weights"
    pts = roofline_points(replica, 1024, 16, 1152)
    text = lc.roofline_figure(pts, None, title).layout.title.text
    lines = text.split("<br>")
    assert len(lines) == 2 and max(map(len, lines)) <= 36, lines
    assert " ".join(lines) == title


def test_batch_sweep_and_figure(replica):
    b = batch_grid(50)
    s = batch_sweep(replica, 1152, b)
    e = estimate(M, G, INP)
    i = int(np.nonzero(b == 16)[0][0])
    assert s["step_ms"][i] == pytest.approx(sum(e["breakdown"]["decode_step"].values()))
    assert s["throughput_tok_s"][i] == pytest.approx(16 / s["step_ms"][i] * 1e3)
    fig = lc.batch_figure(s, "B", 16)
    assert fig.layout.title.text == "B" and len(fig.data) == 3
    assert list(fig.data[0].y) == list(s["step_ms"])


def test_speculative_grid_matches_estimate_and_heatmap():
    draft = get_model("llama-3.2-1b")
    cfg = replica_config(M, G, INP)
    e = estimate(M, G, INP.model_copy(update={"spec_draft": draft, "spec_tokens": 3,
                                              "spec_acceptance": 0.6}))  # fmt: skip
    grid = speedup_grid(cfg, draft, 16, 1024 + 128, np.array([0.0, 0.6]), np.arange(1, 9))
    assert grid[2, 1] == pytest.approx(e["speculative"]["speedup"])
    assert (grid[:, 0] < 1).all()  # acceptance 0: one token per step, draft + verify cost more
    fig = lc.speedup_heatmap(grid, [0.0, 0.6], list(range(1, 9)), "H")
    assert fig.layout.title.text == "H" and len(fig.data) == 2
    assert np.array_equal(np.asarray(fig.data[0].z), grid)
    bs = np.array([1.0, 4.0, 16.0, 64.0, 256.0])
    sv = speedup_vs_batch(cfg, draft, bs, 1152, 0.6, np.array([3]))
    assert sv[0, 2] == pytest.approx(grid[2, 1])
    fig = lc.speedup_batch_figure(bs, sv, [3], "S", 16)
    assert len(fig.data) == 3  # k = 3, the 1x line, the scenario marker


def test_trust_scatter_and_error_table():
    rep = validation_report()
    rows = trust_rows(rep)
    assert rows[0]["source"]  # every predicted row joins its CSV source
    fig = trust_scatter(rows, "P", list(FAMILIES))
    assert fig.layout.title.text == "P"
    markers = [t for t in fig.data if t.mode == "markers"]
    assert sum(len(t.x) for t in markers) == sum(np.isfinite(r["predicted"]) for r in rows)
    assert len(fig.data) - len(markers) == 5  # +-25% (2), +-10% (2), identity
    table = {t["family"]: t for t in error_table(rows, FAMILIES)}
    # median |error| equals validate.summarise's for each family
    for fam in FAMILIES:  # (rep["families"] also holds the vLLM/SGLang and AMD slices)
        s = rep["families"][fam]
        if s.get("rows"):
            assert table[fam]["median |error| %"] == pytest.approx(s["median_ape_pct"], abs=0.05)


def test_out_of_sample_table_reads_the_crossval_file():
    # data/crossval.yaml is written by `python -m advisor crossval` (by bench/crossval.py --write
    # before issue 39, byte for byte the same document): one row per held-out grouping and
    # metric family, errors in percent on rows the fit never saw.
    from advisor.perf.validation.validate import out_of_sample

    oos = out_of_sample()
    assert oos is not None and oos["generated_by"].startswith(
        ("python -m advisor crossval", "bench/crossval.py --max-evals")
    )
    groups = [r["held out"] for r in oos["rows"]]
    # Leave-one-source-out leads (issue 12), then leave-one-accelerator-family-out.
    assert groups[0] == "one source at a time"
    assert "one accelerator family at a time" in groups
    assert all(r["rows"] > 0 and 0 <= r["median_ape_pct"] <= r["p90_ape_pct"] for r in oos["rows"])


def test_latency_and_compare_charts_draw_a_component_alike():
    """A step component has one colour and one legend label on the Latency page's breakdown and
    on Compare's (they used to differ: the pipeline bubble was vermillion on one and sky blue,
    the queueing colour, on the other; memory was "HBM reads" on one, which a GDDR card has not).
    A pipeline-parallel 405B on PCIe L40S draws every step component but host dispatch."""
    from advisor.charts import compare_charts as cc

    e = estimate(
        get_model("llama-3.1-405b"), get_accelerator("l40s"),
        EstimateInput(tp=4, pp=4, weights="int4", concurrency=8),
    )  # fmt: skip
    latency = {t.name: t.marker.color for t in lc.breakdown_figure(lc.breakdown_rows(e), "L").data}
    compare = {t.name: t.marker.color for t in cc.latency_breakdown_figure({"A": e}).data}
    shared = set(latency) & set(compare)
    assert {"pipeline bubble", "memory (weights + KV reads)", "dequantization"} <= shared
    assert all(latency[n] == compare[n] for n in shared)
    # the bubble does not take the colour the Latency page gives queueing
    assert latency["pipeline bubble"] != lc.COMPONENT_COLOURS["queueing"]


def test_compare_labels_keep_a_long_word_whole_and_wrap_like_titles():
    """A clinic's scenario name with one 40-character hyphenated word (a hand-made case): the
    Compare tick labels used to keep its first 14 characters and drop the rest without a "…"
    ("Universitätskl"), and the titles broke "Qwen3-235B" at its hyphen. Both now go through
    one helper (theme.wrap_lines): the word is split over lines, nothing is lost unmarked."""
    from advisor.charts import compare_charts as cc
    from advisor.charts.theme import wrap_lines

    word = "Universitätsklinikum-Nordrhein-Westfalen"
    e = estimate(M, G, INP)
    fig = cc.latency_breakdown_figure({f"{word} on {g}": e for g in ("B200", "H200", "MI300X")})
    labels = list(fig.data[0].x)
    for label, g in zip(labels, ("B200", "H200", "MI300X"), strict=True):
        lines = label.split("<br>")
        assert max(map(len, lines)) <= 14, lines  # three scenarios: 14 characters a line
        assert "".join(lines).replace(" ", "").endswith(f"{word}on{g}"), lines
    assert wrap_lines("Qwen3-235B-A22B on 8x MI300X", 16) == ["Qwen3-235B-A22B", "on 8x MI300X"]

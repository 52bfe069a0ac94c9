"""Memory figure builders: titles, traces, template and values equal the advisor's numbers."""

from __future__ import annotations

import math

import pytest

from advisor.catalog import get_accelerator, get_interconnect, get_model
from advisor.charts import interconnect_charts as ic
from advisor.charts import memory_charts as mc
from advisor.charts.theme import TEMPLATE
from advisor.physics.collectives import allreduce, tp_allreduce_bytes
from advisor.physics.memory import memory_budget

MODEL, GPU = get_model("llama-3.1-70b"), get_accelerator("h100-sxm")


@pytest.fixture(scope="module")
def budget():
    return memory_budget(MODEL, GPU, tp=4, context_tokens=1280)


def _template_is_ours(fig) -> bool:
    return fig.layout.template.layout.colorway == TEMPLATE.layout.colorway


def test_stack_segments_sum_to_capacity_and_match_the_budget(budget):
    paged = mc.paged_kv_bytes_per_sequence_per_gpu(MODEL, "fp16", 1280, 16, 4, 1)
    s = mc.memory_stack("H100", budget, paged, 13)
    total = s.weights_bytes + s.kv_in_use_bytes + s.activations_bytes + s.free_bytes
    assert math.isclose(total + s.unusable_bytes, budget.capacity_bytes)  # nothing lost
    assert s.kv_in_use_bytes == pytest.approx(13 * paged) and s.overflow_bytes == 0
    title = mc.memory_stack_title(MODEL.name, GPU.name, 4, 1)
    fig = mc.memory_stack_figure([s], title)
    assert (
        fig.layout.title.text
        == "Memory per GPU: Llama 3.1 70B on NVIDIA H100 SXM5 80GB, TP=4, PP=1"
    )
    assert _template_is_ours(fig)
    assert [t.name for t in fig.data][:2] == ["Weights", "KV cache in use"]
    assert fig.data[0].x[0] == pytest.approx(budget.weights_bytes_per_gpu / 1e9)


def test_stack_shows_overflow_beyond_the_budget(budget):
    paged = mc.paged_kv_bytes_per_sequence_per_gpu(MODEL, "fp16", 1280, 16, 4, 1)
    s = mc.memory_stack("H100", budget, paged, budget.max_concurrent_sequences + 50)
    assert s.free_bytes < paged and s.overflow_bytes > 0
    fig = mc.memory_stack_figure([s], "t")
    assert "KV over budget (offload)" in [t.name for t in fig.data]


def test_offload_starts_one_past_max_concurrent_sequences(budget):
    # paged bytes at block 16 and the budget's max sequences use the same rounding
    paged = mc.paged_kv_bytes_per_sequence_per_gpu(MODEL, "fp16", 1280, 16, 4, 1)
    curve = mc.kv_demand_curve(paged, budget.kv_budget_bytes_per_gpu, 13)
    assert curve["offload_at"] == budget.max_concurrent_sequences + 1
    fig = mc.kv_demand_figure(curve, "Where offloading starts")
    assert fig.layout.title.text == "Where offloading starts" and len(fig.data) == 1


def test_sweep_lines_per_tp_and_kv_dtype_equal_memory_budget():
    rows = mc.max_sequences_sweep(MODEL, GPU, weights_dtype="fp16", kv_dtypes=["fp16", "fp8"])
    fig = mc.max_sequences_figure(rows, "Max sequences", 1280)
    assert len(fig.data) == 4 * 2 and _template_is_ours(fig)
    r = next(
        r for r in rows if r["tp"] == 8 and r["kv_dtype"] == "fp8" and r["context_tokens"] == 4096
    )
    b = memory_budget(MODEL, GPU, tp=8, kv_dtype="fp8", context_tokens=4096)
    assert r["max_sequences"] == b.max_concurrent_sequences
    tp1 = [r for r in rows if r["tp"] == 1]
    assert all(r["max_sequences"] == 0 for r in tp1)  # 141 GB of fp16 weights > one 80 GB GPU
    assert fig.data[0].y[0] is None  # drawn as a gap


def test_allocation_rows_contiguous_then_paged(budget):
    rows = mc.allocation_comparison(
        MODEL, GPU, tp=4, pp=1, weights_dtype="fp16", kv_dtype="fp16", context_tokens=1280,
        max_model_len=131072,
    )  # fmt: skip
    assert [r["block_size"] for r in rows] == [None, 16, 32, 64]
    assert rows[0]["max_sequences"] == budget.max_concurrent_sequences_contiguous
    assert rows[1]["max_sequences"] == budget.max_concurrent_sequences
    assert rows[0]["utilisation"] == pytest.approx(1280 / 131072)
    assert rows[3]["utilisation"] == pytest.approx(1280 / 1280)  # 1280 = 20 x 64
    fig = mc.allocation_figure(rows, "Paged vs contiguous", 16)
    assert fig.layout.title.text == "Paged vs contiguous" and len(fig.data[0].y) == 4


def test_kv_formula_figure_values():
    # Llama-2-70B at 4096 tokens, fp16: article 10.74 GB, correct 1.34 GB (data/article-claims.md)
    fig = mc.kv_formula_figure(10.73741824e9, 1.34217728e9, 0.33554432e9, "KV")
    assert list(fig.data[0].y) == pytest.approx([10.73741824, 1.34217728, 0.33554432])


def test_interconnect_rows_equal_collectives_and_two_allreduces_per_layer():
    links = [get_interconnect("nvlink4"), get_interconnect("ib-ndr")]
    rows = ic.tp_comm_sweep(MODEL, GPU, links, batch_tokens=13)
    msg = tp_allreduce_bytes(13, MODEL.hidden_size, 2)
    r = next(r for r in rows if r["link_id"] == "nvlink4" and r["tp"] == 8)
    # in-engine, as the decode step counts it: NVLink's copy kernels set the rate, so the
    # nccl-tests latencies with the bytes at NVLink's collective_efficiency in
    # data/calibration.yaml x the nccl-tests rate (issues 37, 38)
    import yaml

    from advisor.catalog.loader import DATA_DIR

    cal = yaml.safe_load((DATA_DIR / "calibration.yaml").read_text(encoding="utf-8"))
    k = cal["fabrics"]["nvlink"]["collective_efficiency"]
    bench = allreduce(msg, 8, links[0], algorithms=("ring", "tree", "nvls"))
    expected = allreduce(msg, 8, links[0], algorithms=("ring", "tree", "nvls"),
                         kernel_efficiency=k).time_s  # fmt: skip
    # 13 tokens x 8192 x 2 B = 208 KiB: latency-bound, so the engine pays little over the
    # benchmark (well under the 1/k of the whole time the step charged before 2026-12-07)
    assert bench.time_s < expected < bench.time_s / k
    assert r["collective_efficiency"] == k
    ib = next(r for r in rows if r["link_id"] == "ib-ndr" and r["tp"] == 16)
    assert ib["collective_efficiency"] == 1.0  # the link sets the rate: nccl-tests speed
    assert r["per_layer_s"] == pytest.approx(2 * expected)
    assert r["per_token_s"] == pytest.approx(80 * 2 * expected)  # 80 layers
    assert {r["tp"] for r in rows if r["link_id"] == "nvlink4"} == {1, 2, 4, 8}
    assert 16 in {r["tp"] for r in rows if r["link_id"] == "ib-ndr"}
    fig = ic.per_layer_figure(rows, "All-reduce time per layer")
    assert len(fig.data) == 2 and fig.layout.title.text == "All-reduce time per layer"
    step = ic.step_figure(rows, "Step")
    assert len(step.data) == 2 * 2 + 1 and _template_is_ours(step)  # line + star per link + compute
    # The rest of the step is the performance model's decode step without its communication.
    from advisor.perf.model.replica import ReplicaConfig, build_replicas
    from advisor.perf.model.step import decode_step

    s8 = decode_step(build_replicas([ReplicaConfig(model=MODEL, gpu=GPU, tp=8)]), 13.0, 1024.0)
    assert r["compute_s"] == pytest.approx(float(s8.total[0] - s8.communication[0]))
    assert r["step_s"] == pytest.approx(r["compute_s"] + r["per_token_s"])


def test_interconnect_lines_have_one_colour_each():
    """The Interconnect page's five links (PCIe Gen5, NVLink 4, Infinity Fabric, NVLink 5,
    InfiniBand NDR): NVLink 5 was drawn in Infinity Fabric's purple (seen in a screenshot of the
    page for Qwen3-235B on B200), two lines of one colour in each of its three charts."""
    ids = ["pcie5", "nvlink4", "xgmi", "nvlink5", "ib-ndr"]
    links = [get_interconnect(i) for i in ids]
    rows = ic.tp_comm_sweep(MODEL, GPU, links, batch_tokens=13)
    for fig in (ic.per_layer_figure(rows, "t"), ic.share_figure(rows, "t"),
                ic.step_figure(rows, "t")):  # fmt: skip
        lines = [t.line.color for t in fig.data if t.mode == "lines+markers"]
        assert len(lines) == 5 and len(set(lines)) == 5, lines


def test_article_comparison_uses_the_article_formula():
    from advisor.catalog import interconnects

    rows = ic.article_comparison(16384, interconnects())
    nv8 = next(r for r in rows if r["link"] == "NVLink" and r["n"] == 8)
    assert nv8["article_s"] * 1e6 == pytest.approx(2.427, abs=1e-3)  # collectives.py doctest
    fig = ic.article_figure(rows, "Article vs ours")
    assert len(fig.data) == 4


def test_the_memory_page_titles_wrap_where_plotly_would_cut_them(budget):
    """The Memory page draws the KV-demand chart in a half-width column and the sweep across
    the page: at 1400 px plotly cut "KV fits 423 sequences (as above); offloading starts at
    sequence 42" and "... fp8 weights, attention DP over each" (headless Chromium screenshot,
    Qwen3-235B on B200). Wrapped at spaces instead, every word kept."""
    paged = mc.paged_kv_bytes_per_sequence_per_gpu(MODEL, "fp16", 1280, 16, 4, 1)
    curve = mc.kv_demand_curve(paged, budget.kv_budget_bytes_per_gpu, 13)
    half = "KV fits 423 sequences (as above); offloading starts at sequence 424"
    lines = mc.kv_demand_figure(curve, half).layout.title.text.split("<br>")
    assert len(lines) == 2 and max(map(len, lines)) <= 36 and " ".join(lines) == half
    full = ("Max concurrent sequences vs context: Qwen3 235B-A22B on NVIDIA B200 (HGX/DGX B200, "
            "180GB), fp8 weights, attention DP over each TP group")  # fmt: skip
    rows = [{"tp": 1, "kv_dtype": "fp16", "context_tokens": 1024, "max_sequences": 10}]
    lines = mc.max_sequences_figure(rows, full, 1024).layout.title.text.split("<br>")
    assert len(lines) == 2 and max(map(len, lines)) <= 90 and " ".join(lines) == full

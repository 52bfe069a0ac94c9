"""Figures of the Compare page: two to four scenarios overlaid (pure functions, explicit template).

Inputs are plain data (labels and ``estimate`` results), so the PDF report can reuse them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from advisor.catalog import accelerators
from advisor.catalog.specs import Accelerator, ModelSpec
from advisor.charts.theme import PALETTE, STEP_COMPONENTS, escape, styled, wrap_lines
from advisor.perf.model.estimate import EstimateInput, estimate
from advisor.scenario import Scenario
from advisor.search.results import Deployment

#: Step-time components drawn on the compare charts (theme.STEP_COMPONENTS without the
#: latencies under load, which a step breakdown does not have).
COMPONENTS: tuple[tuple[str, str, str], ...] = tuple(
    c for c in STEP_COMPONENTS if c[0] not in ("queueing", "prefill interruptions")
)


def deployment_result(d: Deployment | None) -> dict:
    """The search's own breakdowns of deployment ``d`` in the shape of an ``estimate`` result
    (what :func:`latency_breakdown_figure` draws): the prefill of one prompt alone and one
    decode step at the mean running batch + 1, by component (ms). For a disaggregated
    deployment, the prefill pool's prefill and the decode pool's step."""
    if d is None or not d.step_breakdown_ms:
        return {"fits": False, "reasons": ["no deployment"], "note": "no deployment",
                "breakdown": {}}  # fmt: skip
    step = {k: v for k, v in d.step_breakdown_ms.items() if k != "batch"}
    return {"fits": True, "breakdown": {"prefill": dict(d.prefill_breakdown_ms),
                                        "decode_step": step}}  # fmt: skip


def deployment_sweep(scenario: Scenario, d: Deployment, limit: int = 1024) -> list[dict]:
    """:func:`batch_sweep` of one replica of ``d`` (a disaggregated deployment's decode pool)
    on the scenario's model, lengths, links and engine."""
    hw, w = scenario.hardware, scenario.workload
    tp = (d.decode_pool or {}).get("tp", d.tp) if d.kind == "disaggregated" else d.tp
    pp = 1 if d.kind == "disaggregated" else d.pp
    inp = EstimateInput(
        tp=tp, pp=pp, dp=1, weights=d.weights, kv=d.kv, isl=w.isl_tokens, osl=w.osl_tokens,
        link=hw.intra_link, inter_link=hw.inter_link, gpus_per_node=hw.gpus_per_node,
        engine=scenario.options.engine,
    )  # fmt: skip
    return batch_sweep(scenario.model_spec(), accelerators()[d.gpu], inp, powers_of_two(limit))


def latency_breakdown_figure(results: Mapping[str, Mapping]) -> go.Figure:
    """Prefill and one decode step split into components, one bar per scenario (means, not
    percentiles: the titles say so).

    ``results`` maps a scenario label to an ``estimate`` result or :func:`deployment_result`;
    infeasible ones get no bar and are named in the x label as "(does not fit)".
    """
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            "Prefill of one prompt alone (TTFT without queueing)",
            "One decode step at the decode batch",
        ),
        horizontal_spacing=0.12,
    )
    # each bar gets a sixth (an eighth) of a page-wide figure with three (four) scenarios:
    # 14 (11) characters a line, so neighbouring labels do not overlap
    width = 20 if len(results) <= 2 else 14 if len(results) == 3 else 11
    names = [
        k + ("" if r.get("fits") else f" ({r.get('note', 'does not fit')})")
        for k, r in results.items()
    ]
    # plotly stacks bars sharing an x category: every label must stay distinct once shortened
    labels = [_wrap(x, width, 5) for x in distinct_labels(names, width * 4)]
    for key, name, colour in COMPONENTS:
        panels = {
            part: [(r.get("breakdown") or {}).get(part, {}).get(key, 0.0) if r.get("fits")
                   else 0.0 for r in results.values()]
            for part in ("prefill", "decode_step")
        }  # fmt: skip
        if key not in ("compute", "memory") and not any(any(v) for v in panels.values()):
            continue  # a component no scenario has stays out of the legend
        for col, part in ((1, "prefill"), (2, "decode_step")):
            ys = panels[part]
            fig.add_trace(
                go.Bar(
                    x=labels,
                    y=ys,
                    name=name,
                    marker_color=colour,
                    legendgroup=key,
                    showlegend=col == 1,
                    hovertemplate="%{x}<br>" + name + ": %{y:.3g} ms<extra></extra>",
                ),
                row=1,
                col=col,
            )
    # wrapped horizontal labels; the legend sits at the bottom of the figure, below them
    fig.update_layout(
        barmode="stack",
        legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom"},
        margin={"b": 150},
    )
    fig.update_xaxes(tickangle=0)
    fig.update_yaxes(title_text="time (ms)", row=1, col=1)
    fig.update_yaxes(title_text="time (ms)", row=1, col=2)
    return styled(fig, "Latency breakdown by scenario (ms)", height=480)


def batch_sweep(
    model: ModelSpec, gpu: Accelerator, inp: EstimateInput, batches: Sequence[int]
) -> list[dict]:
    """Per running batch size: TPOT (ms) and output throughput per GPU (tokens/s) of one replica.

    Stops at the first batch the KV cache cannot hold. Each point is ``estimate`` with a fixed
    concurrency and DP = 1 (one replica), so scenarios with different GPU counts compare per GPU.
    """
    rows = []
    for b in batches:
        # means only: the percentiles' closed-loop model is 95% of an estimate's time
        one = {"concurrency": b, "qps": None, "dp": 1, "percentiles": False}
        res = estimate(model, gpu, inp.model_copy(update=one))
        if not res["fits"] or "kv_offload" in res:  # beyond the on-GPU KV cache
            break
        rows.append(
            {
                "batch": b,
                "tpot_ms": res["tpot_ms"],
                "ttft_ms": res["ttft_ms"],
                "throughput_tok_s_per_gpu": res["throughput_tok_s_per_gpu"],
            }
        )
    return rows


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (at least [1]).

    >>> powers_of_two(40)
    [1, 2, 4, 8, 16, 32]
    """
    return [2**i for i in range(int(math.log2(max(limit, 1))) + 1)]


def throughput_vs_batch_figure(sweeps: Mapping[str, Sequence[Mapping]]) -> go.Figure:
    """Throughput per GPU and TPOT against running batch, one line per scenario (log-2 x axis)."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Output throughput per GPU", "Time per output token (TPOT)"),
        horizontal_spacing=0.12,
    )
    names = distinct_labels(list(sweeps), 40)
    for i, (label, rows) in enumerate(sweeps.items()):
        colour, name = PALETTE[i % len(PALETTE)], escape(names[i])
        xs = [r["batch"] for r in rows]
        for col, key, unit in (
            (1, "throughput_tok_s_per_gpu", "tokens/s per GPU"),
            (2, "tpot_ms", "ms"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=[r[key] for r in rows],
                    mode="lines+markers",
                    name=name,
                    legendgroup=escape(label),  # not shown, but no raw user text in a figure
                    showlegend=col == 1,
                    line={"color": colour},
                    hovertemplate=f"{name}<br>batch %{{x}}<br>%{{y:.3g}} {unit}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    for col in (1, 2):
        fig.update_xaxes(type="log", dtick=math.log10(2), title_text="running batch (sequences)",
                         row=1, col=col)  # fmt: skip
    fig.update_yaxes(title_text="tokens/s per GPU", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="TPOT (ms)", rangemode="tozero", row=1, col=2)
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return styled(fig, "Throughput and TPOT against batch size, one replica", height=480)


def _wrap(label: str, width: int = 20, lines: int = 3) -> str:
    """A tick label broken into at most ``lines`` lines of ``width`` characters
    (:func:`~advisor.charts.theme.wrap_lines`), each escaped: user text, then our line breaks.

    >>> _wrap("Llama 3.1 70B on 4x H100 NVLink, P99 TPOT 50 ms")
    'Llama 3.1 70B on 4x<br>H100 NVLink, P99<br>TPOT 50 ms'
    >>> _wrap("C (does not fit)"), _wrap("<b>X</b> & <i>eng</i>")
    ('C (does not fit)', '&lt;b&gt;X&lt;/b&gt; &amp;<br>&lt;i&gt;eng&lt;/i&gt;')
    """
    return "<br>".join(escape(x) for x in wrap_lines(label, width, lines))


def distinct_labels(labels: Sequence[str], limit: int, numbered: bool = True) -> list[str]:
    """Labels numbered in order ("1. ", "2. ", ... as the ranking's columns; not when
    ``numbered`` is False) and cut to at most ``limit`` characters each, so that no two look
    alike: a long label keeps its start and the part that tells it from the others (after
    their common prefix), with "…" for what is cut. Not escaped (plotly text needs
    :func:`escape`).

    >>> distinct_labels(["Hospital Qwen3-235B workshop, 400 clinicians on 8x MI300X",
    ...                  "Hospital Qwen3-235B workshop, 400 clinicians on 8x B200"], 40)
    ['1. Hospital Qwen3-235B … MI300X', '2. Hospital Qwen3-235B … B200']
    >>> distinct_labels(["A", "B"], 40)
    ['1. A', '2. B']
    >>> distinct_labels(["Hospital workshop on 8x MI300X", "Hospital workshop on 8x B200"], 20,
    ...                 numbered=False)
    ['Hospital … MI300X', 'Hospital … B200']
    >>> distinct_labels(["default / St. Mary's Hospital clinical … MI300X",
    ...                  "default / St. Mary's Hospital clinical assistant, … H200"], 40)
    ["1. default / St. Mary's … MI300X", '2. default / St. … assistant, … H200']
    """
    texts = [" ".join(str(x).split()) for x in labels]
    room = max(limit - (4 if numbered else 1), 8)  # "1. " and a spare
    tails = []
    for i, t in enumerate(texts):
        # what tells it from the label most like it, from the start of the word that begins it
        shared = max((_common_prefix([t, u]) for j, u in enumerate(texts) if j != i), default=0)
        start = t.rfind(" ", 0, shared) + 1 if shared else 0
        tail = t[start:][-(room * 2 // 3) :] if start and len(t) > room else ""
        tails.append(tail.removeprefix("… "))  # a label cut before: one "…" is enough
    out = []
    for i, (text, tail) in enumerate(zip(texts, tails, strict=True), start=1):
        if tail:
            keep = text[: room - len(tail) - 3]
            if " " in keep.strip():  # cut the start at a word boundary
                keep = keep[: keep.rstrip().rfind(" ")]
            text = f"{keep.rstrip()} … {tail}"
        elif len(text) > room:
            text = text[: room - 1] + "…"
        out.append(f"{i}. {text}" if numbered else text)
    return out


def _common_prefix(texts: Sequence[str]) -> int:
    """How many leading characters all ``texts`` share.

    >>> _common_prefix(["8x MI300X", "8x B200"])
    3
    """
    n = 0
    for chars in zip(*texts, strict=False):
        if len(set(chars)) > 1:
            break
        n += 1
    return n

"""Memory figures: per-GPU stack, max sequences against context, paged vs contiguous, offload.

Data functions (``memory_stack``, ``max_sequences_sweep``, ``allocation_comparison``,
``kv_demand_curve``) call the physics; figure builders take their results. Bytes inside,
GB (1e9 bytes) on the axes, labelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from advisor.catalog.specs import Accelerator, ModelSpec
from advisor.charts.theme import (
    FULL_WIDTH_TITLE_WRAP,
    HALF_WIDTH_TITLE_WRAP,
    MEMORY_COLOURS,
    PALETTE,
    gb,
    styled,
)
from advisor.physics.memory import (
    PAGED_BLOCK_SIZES,
    MemoryBudget,
    kv_bytes_per_sequence_per_gpu,
    memory_budget,
)

GB_AXIS = "GB per GPU (1 GB = 10⁹ bytes)"


@dataclass(frozen=True)
class MemoryStack:
    """One GPU's memory split into the segments of the stacked bar, bytes."""

    label: str
    weights_bytes: float
    kv_in_use_bytes: float  # KV of the sequences in flight that fits in the budget
    activations_bytes: float  # activation reserve + runtime overhead
    unusable_bytes: float  # capacity x (1 - gpu_memory_utilization)
    free_bytes: float  # KV budget not used at this concurrency
    overflow_bytes: float  # KV demand beyond the budget: would be offloaded / preempted
    capacity_bytes: float
    concurrency: int
    kv_bytes_per_sequence_paged: float


def paged_kv_bytes_per_sequence_per_gpu(
    model: ModelSpec,
    kv_dtype: str,
    context_tokens: int,
    block_size: int,
    tp: int,
    pp: int,
    attention_dp: bool = False,
) -> float:
    """KV bytes one sequence holds on the busiest GPU when allocated in blocks of ``block_size``
    (under attention DP, 1/TP of a whole sequence on average: ``kv_bytes_per_sequence_per_gpu``)."""
    tokens = math.ceil(context_tokens / block_size) * block_size
    return kv_bytes_per_sequence_per_gpu(model, kv_dtype, tokens, tp, pp, attention_dp)


def memory_stack(
    label: str,
    budget: MemoryBudget,
    kv_bytes_per_sequence_paged: float,
    concurrency: int,
) -> MemoryStack:
    """Split one GPU's memory at ``concurrency`` sequences in flight (paged allocation)."""
    demand = concurrency * kv_bytes_per_sequence_paged
    room = max(0.0, budget.kv_budget_bytes_per_gpu)
    in_use = min(demand, room)
    return MemoryStack(
        label=label,
        weights_bytes=budget.weights_bytes_per_gpu,
        kv_in_use_bytes=in_use,
        activations_bytes=budget.activation_reserve_bytes,
        unusable_bytes=budget.capacity_bytes - budget.usable_bytes,
        free_bytes=room - in_use,
        overflow_bytes=demand - in_use,
        capacity_bytes=budget.capacity_bytes,
        concurrency=concurrency,
        kv_bytes_per_sequence_paged=kv_bytes_per_sequence_paged,
    )


def memory_stack_title(model_name: str, gpu_name: str, layout: int | str, pp: int) -> str:
    """The chart's title; ``layout`` a TP degree or the layout in words ("TP=2, EP=2, ...")."""
    shape = f"TP={layout}" if isinstance(layout, int) else layout
    return f"Memory per GPU: {model_name} on {gpu_name}, {shape}, PP={pp}"


def memory_stack_figure(stacks: Sequence[MemoryStack], title: str) -> go.Figure:
    """Horizontal stacked bar per GPU: weights, KV in use, activations, unusable, free, overflow."""
    segments = (
        ("weights", "Weights", "weights_bytes"),
        ("kv", "KV cache in use", "kv_in_use_bytes"),
        ("activations", "Activations + runtime", "activations_bytes"),
        ("free", "Free (KV room left)", "free_bytes"),
        ("unusable", "Held back (1 − utilisation)", "unusable_bytes"),
        ("overflow", "KV over budget (offload)", "overflow_bytes"),
    )
    labels = [s.label for s in reversed(stacks)]
    fig = go.Figure()
    for key, name, attr in segments:
        values = [gb(getattr(s, attr)) for s in reversed(stacks)]
        if key == "overflow" and not any(v > 0 for v in values):
            continue
        fig.add_trace(
            go.Bar(
                name=name,
                y=labels,
                x=values,
                orientation="h",
                marker={"color": MEMORY_COLOURS[key]},
                text=[f"{v:.1f}" if v >= 2 else "" for v in values],
                textposition="inside",
                hovertemplate=f"{name}: %{{x:.2f}} GB<extra>%{{y}}</extra>",
            )
        )
    cap = max(gb(s.capacity_bytes) for s in stacks)
    fig.update_layout(
        barmode="stack",
        legend={"orientation": "h", "y": 1.0, "x": 0, "yanchor": "bottom", "traceorder": "normal"},
        margin={"t": 110},
    )
    fig.update_xaxes(title_text=GB_AXIS, range=[0, _x_max(stacks, cap)])
    fig.update_yaxes(automargin=True)
    return styled(fig, title, height=max(300, 180 + 60 * len(stacks)))


def _x_max(stacks: Sequence[MemoryStack], cap: float) -> float:
    total = max(
        gb(
            s.weights_bytes
            + s.kv_in_use_bytes
            + s.activations_bytes
            + s.free_bytes
            + s.unusable_bytes
            + s.overflow_bytes
        )
        for s in stacks
    )
    return max(total, cap) * 1.03


def max_sequences_sweep(
    model: ModelSpec,
    gpu: Accelerator,
    *,
    weights_dtype: str,
    kv_dtypes: Sequence[str],
    tps: Sequence[int] = (1, 2, 4, 8),
    pp: int = 1,
    block_size: int = 16,
    gpu_memory_utilization: float = 0.9,
    contexts: Sequence[int] | None = None,
    attention_dp: bool = False,
    engine: str = "generic",
) -> list[dict]:
    """Max concurrent sequences (paged) for each (TP, KV dtype, context): rows of a table
    (``attention_dp``: attention data parallel over each TP group, as the deployment in focus)."""
    if contexts is None:
        contexts = context_grid(model.max_position_embeddings)
    rows = []
    for tp in tps:
        for kv in kv_dtypes:
            for ctx in contexts:
                b = memory_budget(
                    model, gpu, tp=tp, pp=pp, weights_dtype=weights_dtype, kv_dtype=kv,
                    context_tokens=ctx, block_size=block_size,
                    gpu_memory_utilization=gpu_memory_utilization, suggest=False,
                    attention_dp=attention_dp and tp > 1, engine=engine,
                )  # fmt: skip
                rows.append(
                    {"tp": tp, "kv_dtype": kv, "context_tokens": ctx,
                     "max_sequences": b.max_concurrent_sequences, "fits": b.fits}
                )  # fmt: skip
    return rows


def context_grid(max_tokens: int, start: int = 512) -> list[int]:
    """Powers of two from ``start`` up to the model's maximum context (inclusive).

    >>> context_grid(8192)
    [512, 1024, 2048, 4096, 8192]
    >>> context_grid(131072)[-1]
    131072
    """
    out, c = [], start
    while c < max_tokens:
        out.append(c)
        c *= 2
    out.append(max_tokens)
    return out


def max_sequences_figure(rows: Sequence[dict], title: str, chosen_context: int) -> go.Figure:
    """One line per (TP, KV dtype): max concurrent sequences against context (log-log).

    Colour = TP degree, dash = KV dtype. Points where nothing fits are left out (a gap).
    """
    dashes = ("solid", "dash", "dot", "dashdot")
    tps = sorted({r["tp"] for r in rows})
    kvs = list(dict.fromkeys(r["kv_dtype"] for r in rows))
    fig = go.Figure()
    for i, tp in enumerate(tps):
        for j, kv in enumerate(kvs):
            pts = [r for r in rows if r["tp"] == tp and r["kv_dtype"] == kv]
            fig.add_trace(
                go.Scatter(
                    name=f"TP={tp}, KV {kv}",
                    x=[r["context_tokens"] for r in pts],
                    y=[r["max_sequences"] or None for r in pts],
                    mode="lines+markers",
                    line={"color": PALETTE[i % len(PALETTE)], "dash": dashes[j % len(dashes)]},
                    hovertemplate="%{x:,} tokens: %{y:,} sequences<extra>%{fullData.name}</extra>",
                )
            )
    fig.add_vline(
        x=chosen_context,
        line={"color": "#555", "dash": "dot"},
        annotation_text=f"scenario: {chosen_context:,} tokens",
        annotation_position="top",
    )
    ctxs = sorted({r["context_tokens"] for r in rows})
    fig.update_xaxes(
        type="log", tickvals=ctxs, ticktext=[_tokens(c) for c in ctxs],
        title_text="context per sequence (tokens, prompt + output)",
    )  # fmt: skip
    fig.update_yaxes(
        type="log",
        dtick=1,
        tickformat=",",
        title_text="max concurrent sequences per replica (paged)",
    )
    return styled(fig, title, height=460, wrap=FULL_WIDTH_TITLE_WRAP)


def _tokens(n: int) -> str:
    """Token counts as axis labels: 512, 4k, 128k (k = 1024).

    >>> _tokens(512), _tokens(4096), _tokens(131072), _tokens(1000)
    ('512', '4k', '128k', '1000')
    """
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def allocation_comparison(
    model: ModelSpec,
    gpu: Accelerator,
    *,
    tp: int,
    pp: int,
    weights_dtype: str,
    kv_dtype: str,
    context_tokens: int,
    max_model_len: int,
    gpu_memory_utilization: float = 0.9,
    attention_dp: bool = False,
    engine: str = "generic",
) -> list[dict]:
    """Max sequences and utilisation: contiguous (reserves max_model_len) then paged 16/32/64,
    of the layout given (``attention_dp``: attention data parallel over the TP GPUs)."""
    rows = []
    for bs in PAGED_BLOCK_SIZES:
        b = memory_budget(
            model, gpu, tp=tp, pp=pp, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
            context_tokens=context_tokens, block_size=bs, max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization, suggest=False,
            attention_dp=attention_dp, engine=engine,
        )  # fmt: skip
        if not rows:
            rows.append(
                {"allocation": f"contiguous<br>{max(max_model_len, context_tokens):,} reserved",
                 "block_size": None,
                 "max_sequences": b.max_concurrent_sequences_contiguous,
                 "utilisation": b.contiguous_utilisation}
            )  # fmt: skip
        rows.append(
            {"allocation": f"paged<br>{bs}-token blocks", "block_size": bs,
             "max_sequences": b.max_concurrent_sequences, "utilisation": b.paged_utilisation}
        )  # fmt: skip
    return rows


def allocation_figure(rows: Sequence[dict], title: str, chosen_block: int) -> go.Figure:
    """Bars of max sequences per allocation scheme, labelled with the KV utilisation."""
    colours = [
        MEMORY_COLOURS["unusable"]
        if r["block_size"] is None
        else (MEMORY_COLOURS["kv"] if r["block_size"] == chosen_block else "#F3C97A")
        for r in rows
    ]
    fig = go.Figure(
        go.Bar(
            x=[r["allocation"] for r in rows],
            y=[r["max_sequences"] for r in rows],
            marker={"color": colours},
            text=[f"{r['max_sequences']:,} seq · {r['utilisation']:.0%} used" for r in rows],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{x}: %{y:,} sequences<extra></extra>",
            showlegend=False,
        )
    )
    fig.update_yaxes(title_text="max concurrent sequences per replica")
    return styled(fig, title, height=400, wrap=HALF_WIDTH_TITLE_WRAP)


def kv_demand_curve(
    kv_bytes_per_sequence_paged: float, kv_budget_bytes: float, concurrency: int
) -> dict:
    """KV demand per GPU against sequences in flight, and where it passes the budget.

    ``offload_at`` is the first concurrency whose KV no longer fits (None when nothing fits:
    the budget is not positive).

    >>> kv_demand_curve(1e9, 10.5e9, 4)["offload_at"]
    11
    """
    max_fit = (
        math.floor(kv_budget_bytes / kv_bytes_per_sequence_paged) if kv_budget_bytes > 0 else 0
    )
    offload_at = max_fit + 1 if kv_budget_bytes > 0 else None
    n_max = max(8, 2 * max_fit, int(concurrency * 1.3) + 1)
    step = max(1, n_max // 200)
    ns = list(range(0, n_max + 1, step))
    return {
        "concurrency": ns,
        "demand_bytes": [n * kv_bytes_per_sequence_paged for n in ns],
        "budget_bytes": kv_budget_bytes,
        "max_fit": max_fit,
        "offload_at": offload_at,
        "chosen": concurrency,
    }


def kv_demand_figure(curve: dict, title: str) -> go.Figure:
    """KV cache demand against concurrency, with the budget line and the offload point."""
    fig = go.Figure(
        go.Scatter(
            name="KV demand (paged)",
            x=curve["concurrency"],
            y=[gb(v) for v in curve["demand_bytes"]],
            mode="lines",
            line={"color": MEMORY_COLOURS["kv"], "width": 3},
            hovertemplate="%{x} sequences: %{y:.2f} GB<extra></extra>",
        )
    )
    fig.add_hline(
        y=gb(max(0.0, curve["budget_bytes"])),
        line={"color": MEMORY_COLOURS["weights"], "dash": "dash"},
        annotation_text=f"KV budget {gb(curve['budget_bytes']):.1f} GB"
        if curve["budget_bytes"] > 0
        else "no room for a KV cache: the weights and reserve take all usable memory",
        annotation_position="top left",
    )
    if curve["offload_at"] is not None:
        fig.add_vline(
            x=curve["offload_at"],
            line={"color": MEMORY_COLOURS["overflow"]},
            annotation_text=f"offloading starts at {curve['offload_at']:,} sequences",
            annotation_position="bottom right",
        )
    fig.add_vline(
        x=curve["chosen"],
        line={"color": "#555", "dash": "dot"},
        annotation_text=f"scenario: {curve['chosen']:,}",
        annotation_position="top right",
    )
    fig.update_xaxes(title_text="sequences in flight")
    fig.update_yaxes(title_text=GB_AXIS, rangemode="tozero")
    fig.update_layout(showlegend=False)
    return styled(fig, title, height=380, wrap=HALF_WIDTH_TITLE_WRAP)


def kv_formula_figure(
    article_bytes: float, correct_bytes: float, per_gpu_bytes: float, title: str
) -> go.Figure:
    """Three bars: the article's formula (d_model), the correct total (KV heads), per GPU."""
    labels = ["article's formula (d_model)", "correct (KV heads)", "correct, per GPU"]
    values = [gb(article_bytes), gb(correct_bytes), gb(per_gpu_bytes)]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=values,
            marker={"color": [MEMORY_COLOURS["overflow"], MEMORY_COLOURS["kv"], "#F3C97A"]},
            text=[f"{v:.3g} GB" for v in values],
            textposition="outside",
            cliponaxis=False,
            showlegend=False,
            hovertemplate="%{x}: %{y:.3f} GB<extra></extra>",
        )
    )
    fig.update_yaxes(title_text="KV cache of one sequence (GB, 10⁹ bytes)")
    return styled(fig, title, height=380)

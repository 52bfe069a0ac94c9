"""Latency and speculative-decoding figures: step breakdown, roofline, batch sweep, speedup.

Inputs are the plain dicts/arrays of ``advisor.perf.model.estimate``, ``advisor.perf.model.sweeps`` and
``advisor.perf.model.speculative_sweep`` (seconds inside, ms on the axes, labelled).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from advisor.charts.theme import (
    HALF_WIDTH_TITLE_WRAP,
    PALETTE,
    STEP_COMPONENTS,
    log_ticks,
    styled,
)

#: Colours and legend labels of the step components (theme.STEP_COMPONENTS, shared with Compare).
COMPONENT_COLOURS: dict[str, str] = {k: colour for k, _, colour in STEP_COMPONENTS}
COMPONENT_LABELS: dict[str, str] = {k: label for k, label, _ in STEP_COMPONENTS}


def _vline_trace(x: float, y0: float, y1: float, name: str, colour: str, dash: str) -> go.Scatter:
    """A vertical line as a trace (layout shapes on log axes take log10 coordinates)."""
    return go.Scatter(
        x=[x, x],
        y=[y0, y1],
        mode="lines",
        name=name,
        line={"color": colour, "dash": dash},
        hovertemplate=f"{name}<extra></extra>",
    )


def breakdown_rows(est: Mapping) -> dict[str, dict[str, float]]:
    """{'TTFT': {component: ms}, 'TPOT': {...}} from an ``estimate`` result.

    TTFT = prefill components (+ queueing under a request rate); TPOT = one decode step's
    components (+ prefill interruptions per token with several sequences running).
    """
    bd = est.get("breakdown") or {}
    out: dict[str, dict[str, float]] = {}
    if "prefill" in bd:
        ttft = dict(bd["prefill"])
        if "queueing_ms" in bd:
            ttft["queueing"] = float(bd["queueing_ms"])
        out["TTFT"] = ttft
    if "decode_step" in bd:
        tpot = dict(bd["decode_step"])
        if "prefill_interruptions_ms_per_token" in bd:
            tpot["prefill interruptions"] = float(bd["prefill_interruptions_ms_per_token"])
        out["TPOT" if "prefill_interruptions_ms_per_token" in bd or "queueing_ms" not in bd
            else "decode step"] = tpot  # fmt: skip
    return out


def breakdown_figure(rows: Mapping[str, Mapping[str, float]], title: str) -> go.Figure:
    """Horizontal stacked bars: one bar per metric (TTFT, TPOT), one trace per component (ms).

    Components that are zero in every bar are left out; two subplots since TTFT and TPOT
    differ by orders of magnitude.
    """
    names = list(rows)
    comps = [c for c in COMPONENT_COLOURS if any(rows[n].get(c, 0.0) > 0 for n in names)]
    fig = make_subplots(rows=len(names) or 1, cols=1, vertical_spacing=0.4,
                        subplot_titles=[f"{n}: {_ms3(sum(rows[n].values()))} ms" for n in names])  # fmt: skip
    for i, n in enumerate(names, start=1):
        for c in comps:
            v = float(rows[n].get(c, 0.0))
            fig.add_trace(
                go.Bar(
                    y=[n], x=[v], orientation="h", name=COMPONENT_LABELS[c],
                    marker_color=COMPONENT_COLOURS[c], legendgroup=c, showlegend=i == 1,
                    hovertemplate=f"{COMPONENT_LABELS[c]}: %{{x:.3g}} ms<extra>{n}</extra>",
                    text=[f"{v:.3g}" if v > 0 else ""], textposition="inside",
                ),
                row=i, col=1,
            )  # fmt: skip
    fig.update_xaxes(title_text="ms", row=len(names) or 1, col=1)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(barmode="stack", legend={"orientation": "h", "y": -0.3})
    return styled(fig, title, height=400)


def roofline_figure(
    pts: Mapping,
    sweep: Mapping | None,
    title: str,
    datasheet: tuple[float, float] | None = None,
) -> go.Figure:
    """Log-log roofline: attainable TFLOP/s against FLOP/byte with prefill and decode points.

    Roof = min(peak, intensity x bandwidth) at the calibrated achievable peak and bandwidth;
    ``datasheet`` (peak FLOP/s, bytes/s) adds the datasheet roof dotted; ``sweep`` (from
    ``batch_sweep``) adds decode's intensity over batch sizes.
    """
    peak, bw = pts["peak_flops_per_s"], pts["bandwidth_bytes_per_s"]
    ridge = pts["ridge_flops_per_byte"]
    xs = [pts["prefill_intensity"], pts["decode_intensity"], ridge]
    if sweep is not None:
        xs += [float(np.min(sweep["intensity"])), float(np.max(sweep["intensity"]))]
    lo, hi = min(xs) / 3, max(xs) * 3
    x = np.geomspace(lo, hi, 200)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=x, y=np.minimum(peak, x * bw) / 1e12, mode="lines", name="achievable roof (calibrated)",
        line={"color": "#222222", "width": 3},
        hovertemplate="%{x:.3g} FLOP/B → %{y:.4g} TFLOP/s<extra></extra>",
    ))  # fmt: skip
    if datasheet is not None:
        fig.add_trace(go.Scatter(
            x=x, y=np.minimum(datasheet[0], x * datasheet[1]) / 1e12, mode="lines",
            name="datasheet roof", line={"color": "#7F7F7F", "dash": "dot"},
            hovertemplate="%{x:.3g} FLOP/B → %{y:.4g} TFLOP/s<extra>datasheet</extra>",
        ))  # fmt: skip
    if sweep is not None:
        ai = np.asarray(sweep["intensity"])
        fig.add_trace(go.Scatter(
            x=ai, y=np.minimum(peak, ai * bw) / 1e12, mode="lines", name="decode, batch 1 → max",
            line={"color": PALETTE[1], "width": 6}, opacity=0.35,
            customdata=np.asarray(sweep["batch"]),
            hovertemplate="batch %{customdata:.0f}: %{x:.3g} FLOP/B<extra></extra>",
        ))  # fmt: skip
    for name, key, colour, sym in (
        (f"prefill ({pts['isl_tokens']:,.0f} tokens)", "prefill_intensity", PALETTE[0], "square"),
        (f"decode (batch {pts['batch']:,.0f})", "decode_intensity", PALETTE[1], "circle"),
    ):
        ai = pts[key]
        fig.add_trace(go.Scatter(
            x=[ai], y=[min(peak, ai * bw) / 1e12], mode="markers+text", name=name,
            marker={"size": 14, "color": colour, "symbol": sym, "line": {"width": 1, "color": "#222"}},
            text=[f"{ai:,.0f} FLOP/B" if ai >= 10 else f"{ai:.2g} FLOP/B"],
            textposition="bottom left" if key == "prefill_intensity" else "bottom right",
            hovertemplate=f"{name}: %{{x:.3g}} FLOP/B<extra></extra>",
        ))  # fmt: skip
    y_lo = float(np.min(np.minimum(peak, x * bw))) / 1e12
    fig.add_trace(_vline_trace(ridge, y_lo, peak / 1e12 * 1.5, f"ridge {ridge:,.0f} FLOP/B",
                               PALETTE[5], "dash"))  # fmt: skip
    fig.update_xaxes(type="log", dtick=1, tickformat=",", title_text="arithmetic intensity (FLOP per byte of memory traffic)")  # fmt: skip
    fig.update_yaxes(type="log", dtick=1, tickformat=",", title_text="attainable TFLOP/s per GPU")
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return styled(fig, title, height=480, wrap=HALF_WIDTH_TITLE_WRAP)


def batch_figure(sweep: Mapping, title: str, current_batch: float | None = None) -> go.Figure:
    """Decode step time (ms, left) and throughput per replica (tokens/s, right) against batch."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    b = np.asarray(sweep["batch"])
    fig.add_trace(go.Scatter(
        x=b, y=sweep["step_ms"], name="decode step = TPOT (ms)", mode="lines",
        line={"color": PALETTE[0], "width": 3},
        hovertemplate="batch %{x:.0f}: %{y:.3g} ms per token<extra></extra>",
    ), secondary_y=False)  # fmt: skip
    fig.add_trace(go.Scatter(
        x=b, y=sweep["throughput_tok_s"], name="throughput per replica (tokens/s)", mode="lines",
        line={"color": PALETTE[1], "width": 3, "dash": "dash"},
        hovertemplate="batch %{x:.0f}: %{y:,.0f} tokens/s<extra></extra>",
    ), secondary_y=True)  # fmt: skip
    if current_batch is not None:
        top = float(np.max(sweep["step_ms"]))
        fig.add_trace(_vline_trace(current_batch, 0.0, top, f"scenario batch {current_batch:,.0f}",
                                   "#444444", "dot"), secondary_y=False)  # fmt: skip
    fig.update_xaxes(type="log", **log_ticks(0, 6), title_text="running sequences (batch)")
    fig.update_yaxes(title_text="decode step (ms)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="output tokens/s per replica", rangemode="tozero", secondary_y=True)
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return styled(fig, title, height=440, wrap=HALF_WIDTH_TITLE_WRAP)


def speedup_heatmap(
    grid: np.ndarray, acceptances: Sequence[float], ks: Sequence[int], title: str
) -> go.Figure:
    """Speedup (colour) over acceptance rate (x) and draft length k (y), with the 1x contour.

    Diverging colours centred on 1: blue = faster than plain decoding, red = slower.
    """
    z = np.asarray(grid, dtype=float)
    zmax = max(float(np.nanmax(z)), 1.01)
    zmin = min(float(np.nanmin(z)), 0.99)
    mid = (1.0 - zmin) / (zmax - zmin)
    fig = go.Figure()
    fig.add_trace(go.Heatmap(
        z=z, x=list(acceptances), y=list(ks), zmin=zmin, zmax=zmax,
        colorscale=[[0, "#B2182B"], [mid, "#F7F7F7"], [1, "#2166AC"]],
        colorbar={"title": {"text": "speedup (×)"}},
        hovertemplate="acceptance %{x:.2f}, k = %{y}: %{z:.2f}×<extra></extra>",
    ))  # fmt: skip
    fig.add_trace(go.Contour(
        z=z, x=list(acceptances), y=list(ks), showscale=False, name="speedup = 1×",
        contours={"start": 1.0, "end": 1.0, "size": 1.0, "coloring": "none",
                  "showlabels": True, "labelfont": {"size": 13, "color": "#000"}},
        line={"width": 3, "color": "#000", "dash": "dash"}, hoverinfo="skip", showlegend=True,
    ))  # fmt: skip
    fig.update_xaxes(title_text="acceptance rate (per drafted token)", range=[0, 1])
    fig.update_yaxes(title_text="draft tokens per step (k)", dtick=1)
    fig.update_layout(legend={"orientation": "h", "y": -0.2})
    return styled(fig, title, height=460)


def speedup_batch_figure(
    batches: np.ndarray, speedups: np.ndarray, ks: Sequence[int], title: str,
    current_batch: float | None = None,
) -> go.Figure:  # fmt: skip
    """Speedup against batch, one line per k; the 1× line marks where it stops paying."""
    fig = go.Figure()
    b = np.asarray(batches)
    for i, k in enumerate(ks):
        fig.add_trace(go.Scatter(
            x=b, y=np.asarray(speedups)[i], mode="lines", name=f"k = {k}",
            line={"color": PALETTE[i % len(PALETTE)], "width": 2.5},
            hovertemplate=f"k = {k}, batch %{{x:.0f}}: %{{y:.2f}}×<extra></extra>",
        ))  # fmt: skip
    fig.add_trace(go.Scatter(
        x=[float(b.min()), float(b.max())], y=[1.0, 1.0], mode="lines", name="1× (no gain)",
        line={"dash": "dash", "color": "#B2182B"}, hoverinfo="skip",
    ))  # fmt: skip
    if current_batch is not None:
        top = max(float(np.nanmax(speedups)), 1.0)
        fig.add_trace(_vline_trace(current_batch, 0.0, top, f"scenario batch {current_batch:,.0f}",
                                   "#444444", "dot"))  # fmt: skip
    fig.update_xaxes(type="log", **log_ticks(0, 6), title_text="running sequences (batch)")
    fig.update_yaxes(title_text="speedup per token (×)", rangemode="tozero")
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return styled(fig, title, height=440)


def _ms3(x: float) -> str:
    """Three significant figures without exponent notation (a subplot title).

    >>> _ms3(1080.4), _ms3(23.71), _ms3(0.04567)
    ('1,080', '23.7', '0.0457')
    """
    return f"{float(f'{x:.3g}'):,.0f}" if x >= 100 else f"{x:.3g}"

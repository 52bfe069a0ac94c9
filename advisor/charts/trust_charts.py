"""Trust figure: predicted against measured on log axes, with the identity line and ±bands."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from advisor.charts.theme import PALETTE, styled


def trust_scatter(rows: Sequence[dict], title: str, families: Sequence[str]) -> go.Figure:
    """One marker trace per family (in ``families`` order, empty ones left out), then the
    identity line and the ±10% and ±25% bands (4 line traces). Values in each family's unit."""
    fig = go.Figure()
    vals = [v for r in rows for v in (r["measured"], r["predicted"]) if np.isfinite(v) and v > 0]
    lo, hi = (min(vals) / 2, max(vals) * 2) if vals else (1e-3, 1e4)
    x = np.array([lo, hi])
    for frac, dash in ((0.25, "dot"), (0.10, "dash")):
        for sign in (1, -1):
            fig.add_trace(go.Scatter(
                x=x, y=x * (1 + sign * frac), mode="lines", showlegend=sign == 1,
                name=f"±{frac:.0%}", legendgroup=f"band{frac}", hoverinfo="skip",
                line={"color": "#999999", "dash": dash, "width": 1},
            ))  # fmt: skip
    fig.add_trace(go.Scatter(
        x=x, y=x, mode="lines", name="predicted = measured", hoverinfo="skip",
        line={"color": "#222222", "width": 1.5},
    ))  # fmt: skip
    for i, fam in enumerate(families):
        sel = [r for r in rows if r["family"] == fam and np.isfinite(r["predicted"])]
        if not sel:
            continue
        fig.add_trace(go.Scatter(
            x=[r["measured"] for r in sel], y=[r["predicted"] for r in sel], mode="markers",
            name=f"{fam} ({len(sel)})",
            marker={"color": PALETTE[i % len(PALETTE)], "size": 8, "opacity": 0.8,
                    "line": {"width": 0.5, "color": "#fff"}},
            customdata=[[r["id"], r.get("gpu_name", r["gpu"]), r.get("model_name", r["model"]),
                         r["engine"], r["error_pct"], r.get("unit", "")] for r in sel],
            hovertemplate=("%{customdata[0]} %{customdata[2]} on %{customdata[1]} "
                           "(%{customdata[3]})<br>measured %{x:.4g}, predicted %{y:.4g} "
                           "%{customdata[5]}<br>error %{customdata[4]:+.1f}%<extra></extra>"),
        ))  # fmt: skip
    fig.update_xaxes(type="log", dtick=1, range=np.log10(x).tolist(),
                     title_text="measured (each family in its own unit: s, tokens/s, µs, GB/s)")  # fmt: skip
    fig.update_yaxes(type="log", dtick=1, range=np.log10(x).tolist(), title_text="predicted")
    fig.update_layout(legend={"orientation": "v", "x": 1.02, "y": 1})
    return styled(fig, title, height=560)

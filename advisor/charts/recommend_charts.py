"""Figures of the Recommendation page (pure functions, explicit template)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from advisor.charts.theme import PALETTE, escape, styled

MEETS, MISSES, BEST = PALETTE[2], PALETTE[5], PALETTE[0]
#: Hover of a point; customdata = [point_id (identifies the deployment), GPUs, tokens/s
#: per GPU, USD per million tokens, the description escaped for plotly's HTML-like labels, its
#: TTFT / TPOT / E2E at the SLA's percentile].
_HOVER = (
    "<b>%{{customdata[4]}}</b><br>%{{customdata[1]}} GPUs<br>{metric} %{{x:.3g}} ms<br>"
    "%{{customdata[2]:,.0f}} tokens/s per GPU<br>$%{{customdata[3]:,.3f}} per million tokens"
    "<br>%{{customdata[5]}}<extra></extra>"
)


def point_id(p) -> str:
    """What identifies a point's deployment: its ``DeploymentSpec`` text form
    (advisor/search/deployment_spec.py), else its description."""
    spec = getattr(p, "spec", None)
    return str(spec) if spec is not None else p.description


def _custom(p) -> list:
    return [point_id(p), p.gpus, p.throughput_per_gpu_tok_s, p.usd_per_million_tokens,
            escape(p.description), _targets(p)]  # fmt: skip


def _targets(p) -> str:
    """'TTFT 845 ms · TPOT 26.8 ms · E2E 9,100 ms' at the SLA's percentile (what it is judged by)."""
    parts = [f"{n} {v:,.0f} ms" if v >= 100 else f"{n} {v:,.1f} ms"
             for n, v in (("TTFT", getattr(p, "ttft_ms", None)),
                          ("TPOT", getattr(p, "tpot_ms", None)),
                          ("E2E", getattr(p, "e2e_ms", None))) if v is not None]  # fmt: skip
    return " · ".join(parts)


def _front(pts: Sequence, y) -> list:
    """The points no other point beats on both latency and ``y`` (lower is better), by latency:
    the frontier line (the search sends the frontier of all candidates and that of those
    meeting the SLA, so some points lie behind the line)."""
    out, best = [], float("inf")
    for p in sorted(pts, key=lambda p: (p.latency_ms, y(p))):
        if y(p) < best:
            out.append(p)
            best = y(p)
    return out


#: Point groups: (key, legend name, colour); "over": meets the SLA but its purchase is above
#: the scenario's budget cap (cost.max_capex_usd), so it is not recommended; "risk": its
#: predictions meet the SLA, the upper end of a range does not (search/sla.py).
_GROUPS = (("meets", "meets the SLA", MEETS), ("over", "meets the SLA, over the budget",
           PALETTE[3]), ("risk", "at risk: predictions meet it, ranges reach past it",
           PALETTE[1]), ("misses", "misses it", MISSES))  # fmt: skip


def _group(p) -> str:
    if not p.meets_sla:
        return "risk" if getattr(p, "sla_verdict", "") == "at risk" else "misses"
    return "over" if getattr(p, "over_budget", False) else "meets"


#: 1-2-5 ticks labelled in full on the log latency axis (ms).
TICKS = [m * 10**e for e in range(-1, 6) for m in (1, 2, 5)]


def pareto_figure(
    throughput_points: Sequence,
    cost_points: Sequence,
    *,
    latency_metric: str,
    sla_ms: float | None = None,
    best: str | None = None,
    focus=None,
) -> go.Figure:
    """The two Pareto frontiers against the latency metric: throughput per GPU (higher is better)
    and cost per million output tokens (lower is better). Points are ``ParetoPoint``-like objects
    (description, gpus, throughput_per_gpu_tok_s, usd_per_million_tokens, latency_ms,
    meets_sla: every target of the SLA and the headroom); hovering names the deployment, and
    ``customdata[0]`` of every point is :func:`point_id` (what a click selects). ``best`` (a
    description) is drawn as a star with its own legend entry; ``sla_ms`` draws the target as a
    dashed vertical line. ``focus`` (a ``ParetoPoint``-like object, on the frontier or not): the
    deployment in focus, ringed in both panels."""
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=("Throughput per GPU against latency", "Cost against latency"),
    )
    panels = (
        (1, throughput_points, "throughput_per_gpu_tok_s", "output tokens/s per GPU"),
        (2, cost_points, "usd_per_million_tokens", "USD per million output tokens"),
    )
    points_all = [*throughput_points, *cost_points]
    for col, points, key, unit in panels:
        pts = sorted(points, key=lambda p: p.latency_ms)
        sign = -1.0 if key == "throughput_per_gpu_tok_s" else 1.0
        line = _front(pts, lambda p: sign * getattr(p, key))  # noqa: B023
        fig.add_trace(
            go.Scatter(
                x=[p.latency_ms for p in line],
                y=[getattr(p, key) for p in line],
                mode="lines",
                line={"color": "#AAAAAA", "dash": "dot"},
                hoverinfo="skip",
                showlegend=False,
            ),  # fmt: skip
            row=1,
            col=col,
        )
        for group, name, colour in _GROUPS:
            sel = [p for p in pts if _group(p) == group]
            if group in ("over", "risk") and not any(_group(p) == group for p in points_all):
                continue  # no budget cap, or nothing above it, or none at risk: no legend entry
            fig.add_trace(
                go.Scatter(
                    x=[p.latency_ms for p in sel],
                    y=[getattr(p, key) for p in sel],
                    mode="markers",
                    marker={
                        "color": colour,
                        "size": 11,
                        "symbol": {"over": "x", "risk": "diamond"}.get(group, "circle"),
                    },
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    customdata=[_custom(p) for p in sel],
                    hovertemplate=_HOVER.format(metric=escape(latency_metric)),
                ),
                row=1,
                col=col,
            )
        chosen = [p for p in pts if best is not None and p.description == best]
        # a winner at risk says so in its legend entry and hover, not only by its colour
        won = "recommended" + (", at risk" if chosen and _group(chosen[0]) == "risk" else "")
        if chosen:
            fig.add_trace(
                go.Scatter(
                    x=[chosen[0].latency_ms],
                    y=[getattr(chosen[0], key)],
                    mode="markers",
                    marker={
                        "symbol": "star",
                        "size": 20,
                        "color": BEST,
                        "line": {"color": "#FFFFFF", "width": 1.5},
                    },
                    name=won,
                    legendgroup="best",
                    showlegend=col == 1,
                    customdata=[_custom(chosen[0])],
                    hovertemplate=f"<b>{won}</b><br>"
                    + _HOVER.format(metric=escape(latency_metric)),
                ),  # fmt: skip
                row=1,
                col=col,
            )
        if focus is not None:
            fig.add_trace(
                go.Scatter(
                    x=[focus.latency_ms], y=[getattr(focus, key)], mode="markers",
                    marker={"symbol": "circle-open", "size": 24, "color": "#222222",
                            "line": {"width": 2.5}},
                    name="in focus", legendgroup="focus", showlegend=col == 1,
                    customdata=[_custom(focus)],
                    hovertemplate="<b>in focus</b><br>" + _HOVER.format(metric=escape(latency_metric)),
                ),
                row=1, col=col,
            )  # fmt: skip
        if sla_ms is not None:
            fig.add_vline(x=sla_ms, line={"color": "#444444", "dash": "dash"}, row=1, col=col)
        xt = f"{latency_metric} (ms)" + (f"; dashed: SLA {sla_ms:g} ms" if sla_ms else "")
        fig.update_xaxes(title_text=xt, type="log", tickvals=TICKS, ticktext=[f"{t:g}" for t in TICKS],
                         row=1, col=col)  # fmt: skip
        fig.update_yaxes(title_text=unit, rangemode="tozero", row=1, col=col)
    fig.update_layout(legend={"orientation": "h", "y": -0.22})
    return styled(
        fig, f"Pareto frontiers: what each millisecond of {latency_metric} costs", height=480
    )

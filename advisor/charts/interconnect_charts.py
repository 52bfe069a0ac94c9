"""Interconnect figures: tensor-parallel all-reduce time against TP degree, per link.

``tp_comm_sweep`` computes the rows (physics.collectives for the all-reduce, the performance
model's decode step for the rest); the figure builders draw them. Seconds inside, µs / ms on
the axes, labelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from advisor.catalog.specs import Accelerator, Interconnect, ModelSpec
from advisor.charts.theme import LINK_COLOURS, PALETTE, log_ticks, styled
from advisor.physics.collectives import (
    NCCL_ALGORITHMS,
    allreduce,
    article_allreduce_time_s,
    tp_allreduce_bytes,
)

if TYPE_CHECKING:
    from advisor.perf.model.profile_range import Work

#: TP degrees the page compares; 16 only on the inter-node link (two 8-GPU nodes).
TP_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16)
#: The article's link parameters: alpha (s) and the bandwidth it plugs in (bytes/s).
#: Source: data/article-claims.md ("NVLink alpha = 1.2 us, beta = 450 GB/s"; "PCIe alpha = 5 us,
#: beta = 32 GB/s").
ARTICLE_LINKS: dict[str, tuple[float, float]] = {
    "NVLink": (1.2e-6, 450e9),
    "PCIe": (5e-6, 32e9),
}
#: Which of our links each article link is compared with.
ARTICLE_VS_OURS: dict[str, str] = {"NVLink": "nvlink4", "PCIe": "pcie5"}


def engine_algorithms(engine: str) -> tuple[str, ...] | None:
    """All-reduce algorithms an engine may use: NCCL's only for 'generic', plus custom kernels
    (one-shot / two-shot) for vLLM, TensorRT-LLM and SGLang (None = every available one)."""
    return NCCL_ALGORITHMS if engine == "generic" else None


def max_tp_on(link: Interconnect) -> int:
    """Largest TP degree drawn for a link: 8 inside a node, 16 over the network."""
    return 16 if link.scope == "inter_node" else 8


def tp_comm_sweep(
    model: ModelSpec,
    gpu: Accelerator,
    links: Sequence[Interconnect],
    *,
    batch_tokens: int,
    weights_dtype: str = "fp16",
    kv_dtype: str = "fp16",
    context_tokens: float = 1024.0,
    pp: int = 1,
    activation_bytes: float = 2.0,
    engine: str = "generic",
    tps: Sequence[int] = TP_DEGREES,
    work: Work | None = None,
) -> list[dict]:
    """Per (link, TP): all-reduce time per layer and per token, and its share of a decode step.

    Times are in-engine, as in the decode step: the nccl-tests latencies, and the bytes at the
    collective efficiency of the link's fabric x their nccl-tests rate
    (``profiles.collective_efficiency``: fitted per fabric where copy kernels set the rate, NVLink
    and Infinity Fabric; 1 over PCIe; ``physics.collectives.algorithm_time_s``). Two all-reduces of ``batch_tokens x hidden x activation_bytes`` per layer (Megatron-LM);
    per token = layers x per layer (a token crosses every pipeline stage). The rest of the step
    (GEMMs, attention over ``context_tokens`` of KV cache, engine overhead) comes from the
    performance model (advisor.perf.model.step.decode_step) on ``gpu`` at that TP, so only the link
    differs between the lines. ``work``: what each replica serves (a client profile prices the
    rest of the step only where it holds the replica's deployment and this workload,
    advisor/perf/model/replica.applied; None: nowhere).
    """
    from advisor.perf.model.profiles import collective_efficiency
    from advisor.perf.model.replica import ReplicaConfig, build_replicas
    from advisor.perf.model.step import decode_step

    msg = tp_allreduce_bytes(batch_tokens, model.hidden_size, activation_bytes)
    algs = engine_algorithms(engine)
    tp_list = sorted({tp for tp in tps})
    r = build_replicas(
        [
            ReplicaConfig(
                model=model,
                gpu=gpu,
                tp=tp,
                pp=pp,
                weights=weights_dtype,
                kv=kv_dtype,
                engine=engine,
                work=work,
            )
            for tp in tp_list
        ]  # fmt: skip
    )
    step = decode_step(r, float(batch_tokens), float(context_tokens))
    rest = dict(zip(tp_list, step.total - step.communication, strict=True))
    rows = []
    for link in links:
        for tp in tps:
            if tp > max_tp_on(link):
                continue
            # inside the engine, as the decode step counts it (perf.model.step: the bytes at the
            # link's fabric's collective efficiency x their nccl-tests rate), so this page and the
            # Latency page give one number (issue 38: 6.29 ms here, 9.69 ms there)
            ce = collective_efficiency(link)  # the fabric's own value, flagged if borrowed
            ar = allreduce(msg, tp, link, algorithms=_usable(algs, tp, link),
                           kernel_efficiency=ce.value)  # fmt: skip
            per_layer = 2 * ar.time_s
            per_token = model.num_hidden_layers * per_layer
            compute = float(rest[tp])
            rows.append(
                {"link_id": link.id, "link_name": link.name, "kind": link.kind, "tp": tp,
                 "message_bytes": msg, "allreduce_s": ar.time_s, "algorithm": ar.algorithm,
                 "collective_efficiency": ce.value, "collective_calibrated": ce.calibrated,
                 "collective_note": ce.note,
                 "per_layer_s": per_layer, "per_token_s": per_token, "compute_s": compute,
                 "step_s": compute + per_token,
                 "comm_share": per_token / (compute + per_token)}
            )  # fmt: skip
    return rows


def efficiency_note(rows: Sequence[dict]) -> str:
    """Per link drawn, the in-engine collective efficiency its bytes move at (x nccl-tests rate).

    >>> efficiency_note([{"link_name": "A", "collective_efficiency": 0.6,
    ...                   "collective_calibrated": False, "collective_note": "no rows"}])
    'A 0.60 (uncalibrated: no rows)'
    """
    seen: dict[str, str] = {}
    for r in rows:
        flag = "" if r["collective_calibrated"] else "uncalibrated: "
        seen[r["link_name"]] = (f"{r['link_name']} {r['collective_efficiency']:.2f} "
                                f"({flag}{r['collective_note']})")  # fmt: skip
    return "; ".join(seen.values())


def _usable(algs: tuple[str, ...] | None, tp: int, link: Interconnect) -> tuple[str, ...] | None:
    from advisor.physics.collectives import available_algorithms

    if algs is None or tp == 1:
        return None
    ok = tuple(a for a in algs if a in available_algorithms("allreduce", tp, link))
    return ok or None


def bandwidth_cliff(rows: Sequence[dict]) -> dict[str, int]:
    """Per link, the TP degree with the shortest estimated step: beyond it TP stops paying off.

    >>> bandwidth_cliff([{"link_id": "a", "tp": 1, "step_s": 3.0},
    ...                  {"link_id": "a", "tp": 2, "step_s": 2.0},
    ...                  {"link_id": "a", "tp": 4, "step_s": 2.5}])
    {'a': 2}
    """
    best: dict[str, tuple[float, int]] = {}
    for r in rows:
        cur = best.get(r["link_id"])
        if cur is None or r["step_s"] < cur[0]:
            best[r["link_id"]] = (r["step_s"], r["tp"])
    return {k: v[1] for k, v in best.items()}


def link_colours(rows: Sequence[dict]) -> dict[str, str]:
    """A distinct colour per link of ``rows``: its kind's (``LINK_COLOURS``) where it is the only
    link of that kind, else the palette's first colour no other link has. Two NVLink generations
    took palette colours by position, and NVLink 5's was Infinity Fabric's purple: two lines of
    one colour on the Interconnect page.

    >>> rows = [{"link_id": k, "kind": t} for k, t in (("pcie5", "pcie"), ("nvlink4", "nvlink"),
    ...         ("xgmi", "xgmi"), ("nvlink5", "nvlink"), ("ib", "infiniband"))]
    >>> c = link_colours(rows)
    >>> len(set(c.values())) == len(c) == 5, c["xgmi"] == LINK_COLOURS["xgmi"]
    (True, True)
    """
    links = _links(rows)
    kind = {r["link_id"]: r["kind"] for r in rows}
    shared = {k for k in kind.values() if sum(1 for lid in links if kind[lid] == k) > 1}
    out = {lid: LINK_COLOURS[kind[lid]] for lid in links
           if kind[lid] not in shared and kind[lid] in LINK_COLOURS}  # fmt: skip
    free = [c for c in PALETTE if c not in out.values()]
    for lid in links:
        if lid not in out:
            out[lid] = free.pop(0) if free else PALETTE[len(out) % len(PALETTE)]
    return out


def _links(rows: Sequence[dict]) -> list[str]:
    return list(dict.fromkeys(r["link_id"] for r in rows))


def _tp_axis(fig: go.Figure) -> None:
    fig.update_xaxes(
        type="log", tickvals=list(TP_DEGREES), ticktext=[str(t) for t in TP_DEGREES],
        title_text="TP degree (GPUs in the all-reduce)",
    )  # fmt: skip


def per_layer_figure(rows: Sequence[dict], title: str) -> go.Figure:
    """All-reduce time per layer (two all-reduces) against TP, one line per link, µs (log)."""
    fig = go.Figure()
    colours = link_colours(rows)
    for lid in _links(rows):
        pts = [r for r in rows if r["link_id"] == lid and r["tp"] > 1]
        fig.add_trace(
            go.Scatter(
                name=pts[0]["link_name"] if pts else lid,
                x=[r["tp"] for r in pts],
                y=[r["per_layer_s"] * 1e6 for r in pts],
                customdata=[
                    [
                        r["algorithm"],
                        f"{r['collective_efficiency']:.2f}"
                        + ("" if r["collective_calibrated"] else ", uncalibrated"),
                    ]
                    for r in pts
                ],
                mode="lines+markers",
                line={"color": colours[lid], "width": 3},
                hovertemplate="TP=%{x}: %{y:.3g} µs per layer (%{customdata[0]}; in engine at "
                "%{customdata[1]} × the nccl-tests data rate)<extra>%{fullData.name}</extra>",
            )
        )
    _tp_axis(fig)
    fig.update_yaxes(type="log", **log_ticks(), title_text="all-reduce time per layer (µs)")
    return styled(fig, title, height=420)


def step_figure(rows: Sequence[dict], title: str) -> go.Figure:
    """Estimated decode step (memory-bound compute + all-reduce) against TP; the best TP marked."""
    fig = go.Figure()
    cliff = bandwidth_cliff(rows)
    colours = link_colours(rows)
    for lid in _links(rows):
        pts = [r for r in rows if r["link_id"] == lid]
        colour = colours[lid]
        fig.add_trace(
            go.Scatter(
                name=pts[0]["link_name"],
                x=[r["tp"] for r in pts],
                y=[r["step_s"] * 1e3 for r in pts],
                mode="lines+markers",
                line={"color": colour, "width": 3},
                hovertemplate="TP=%{x}: %{y:.3g} ms per step<extra>%{fullData.name}</extra>",
            )
        )
        best = next(r for r in pts if r["tp"] == cliff[lid])
        fig.add_trace(
            go.Scatter(
                x=[best["tp"]], y=[best["step_s"] * 1e3], mode="markers", showlegend=False,
                marker={"symbol": "star", "size": 16, "color": colour,
                        "line": {"color": "#222", "width": 1}},
                hovertemplate=f"best TP on {best['link_name']}: %{{x}}<extra></extra>",
            )
        )  # fmt: skip
    compute = {r["tp"]: r["compute_s"] for r in rows}
    xs = sorted(compute)
    fig.add_trace(
        go.Scatter(
            name="step without communication (performance model)",
            x=xs, y=[compute[t] * 1e3 for t in xs], mode="lines",
            line={"color": "#555", "dash": "dot"},
            hovertemplate="TP=%{x}: %{y:.3g} ms<extra>memory-bound estimate</extra>",
        )
    )  # fmt: skip
    _tp_axis(fig)
    fig.update_yaxes(type="log", **log_ticks(), title_text="decode step estimate (ms)")
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    return styled(fig, title, height=460)


def share_figure(rows: Sequence[dict], title: str) -> go.Figure:
    """Share of the estimated decode step spent in all-reduce, per link, against TP (%)."""
    fig = go.Figure()
    colours = link_colours(rows)
    for lid in _links(rows):
        pts = [r for r in rows if r["link_id"] == lid]
        fig.add_trace(
            go.Scatter(
                name=pts[0]["link_name"],
                x=[r["tp"] for r in pts],
                y=[100 * r["comm_share"] for r in pts],
                mode="lines+markers",
                line={"color": colours[lid], "width": 3},
                hovertemplate="TP=%{x}: %{y:.1f}% communicating<extra>%{fullData.name}</extra>",
            )
        )
    _tp_axis(fig)
    fig.update_yaxes(title_text="share of the step spent in all-reduce (%)", range=[0, 100])
    fig.update_layout(showlegend=False)
    return styled(fig, title, height=460)


def article_comparison(
    message_bytes: float,
    ours: dict[str, Interconnect],
    engine: str = "generic",
    tps: Sequence[int] = (2, 4, 8),
) -> list[dict]:
    """One all-reduce of ``message_bytes``: the article's T(N) and our model, per link and N."""
    algs = engine_algorithms(engine)
    rows = []
    for name, (alpha, bw) in ARTICLE_LINKS.items():
        link = ours[ARTICLE_VS_OURS[name]]
        for n in tps:
            rows.append(
                {"link": name, "n": n,
                 "article_s": float(article_allreduce_time_s(message_bytes, n, alpha, bw)),
                 "ours_s": allreduce(message_bytes, n, link,
                                     algorithms=_usable(algs, n, link)).time_s,
                 "ours_link": link.name}
            )  # fmt: skip
    return rows


def article_figure(rows: Sequence[dict], title: str) -> go.Figure:
    """Article's formula (dashed) against ours (solid) for one all-reduce, µs."""
    fig = go.Figure()
    for name in dict.fromkeys(r["link"] for r in rows):
        pts = [r for r in rows if r["link"] == name]
        colour = LINK_COLOURS["nvlink" if name == "NVLink" else "pcie"]
        fig.add_trace(
            go.Scatter(
                name=f"ours: {pts[0]['ours_link']}", x=[r["n"] for r in pts],
                y=[r["ours_s"] * 1e6 for r in pts], mode="lines+markers",
                line={"color": colour, "width": 3},
            )
        )  # fmt: skip
        alpha, bw = ARTICLE_LINKS[name]
        fig.add_trace(
            go.Scatter(
                name=f"article: {name} (α {alpha * 1e6:g} µs, {bw / 1e9:g} GB/s)",
                x=[r["n"] for r in pts], y=[r["article_s"] * 1e6 for r in pts],
                mode="lines+markers", line={"color": colour, "dash": "dash"},
                marker={"symbol": "diamond-open", "size": 10},
            )
        )  # fmt: skip
    fig.update_xaxes(type="log", tickvals=[2, 4, 8], title_text="GPUs in the all-reduce (N)")
    fig.update_yaxes(type="log", **log_ticks(), title_text="one all-reduce (µs)")
    return styled(fig, title, height=400)

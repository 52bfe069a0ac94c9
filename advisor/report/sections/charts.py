"""The charts: the app's figure builders, embedded page-wide as 2x PNGs; a chart that cannot be
built is listed at the end with why (``missing_charts_section``)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from advisor.catalog import accelerators
from advisor.report import images
from advisor.report.context import Context
from advisor.report.document import GREY, Doc
from advisor.report.facts import deployment
from advisor.report.text import clean
from advisor.search.deployment_spec import layout_text
from advisor.search.results import decode_batch_seqs

#: Chart image size in CSS pixels before the 2x scale (aspect of a page-wide figure).
CHART_W, CHART_H = 900, 480


def memory_figure(ctx: Context):
    from advisor.charts import memory_charts as mc
    from advisor.physics.memory import memory_budget

    s = ctx.scenario
    d = ctx.best or (deployment(ctx.described, s.sla.percentile) if ctx.described else None)
    model = s.model_spec()
    gid = d.gpu if d else s.hardware.gpus[0]
    gpu = accelerators()[gid]
    tp, pp = (d.tp, d.pp) if d else (1, 1)
    dpa = bool(d and d.attention_dp > 1)  # attention DP: whole attention weights, own sequences' KV
    wd = d.weights if d else s.options.weight_dtypes[0]
    kd = d.kv if d else s.options.kv_dtypes[0]
    context = s.workload.isl_tokens + s.workload.osl_tokens
    b = memory_budget(model, gpu, tp=tp, pp=pp, weights_dtype=wd, kv_dtype=kd,
                      context_tokens=context, attention_dp=dpa, engine=s.options.engine)  # fmt: skip
    paged = mc.paged_kv_bytes_per_sequence_per_gpu(model, kd, context, 16, tp, pp, dpa)
    # the decode batch every view shows (search/results.decode_batch), as the Memory page
    n = decode_batch_seqs(d.running) if d and d.running is not None else b.max_concurrent_sequences
    stack = mc.memory_stack(gpu.name, b, paged, max(1, n))
    layout = layout_text(tp, bool(d and d.ep > 1), dpa)
    return mc.memory_stack_figure([stack], mc.memory_stack_title(model.name, gpu.name, layout, pp))


def _figure_builders(ctx: Context) -> list[tuple[str, Callable[[], Any]]]:
    out: list[tuple[str, Callable[[], Any]]] = [
        ("Memory and KV budget per GPU", lambda: memory_figure(ctx))
    ]
    rec = ctx.rec
    out.append(("Latency breakdown", lambda: _chart_from("latency", rec, ctx)))
    out.append(("Pareto frontier: cost against latency", lambda: _chart_from("pareto", rec, ctx)))
    return out


def _chart_from(kind: str, rec: Any, ctx: Context):
    """The app's figure for ``kind`` built from the recommendation (None if unavailable)."""
    from advisor.report import figures

    if kind == "latency":  # the deployment the summary describes (the focused one, if any)
        return figures.latency_figure(rec, ctx.scenario, ctx.described)
    return figures.figure(kind, rec, ctx.scenario)


def embed(doc: Doc, ctx: Context, title: str, build: Callable[[], Any]) -> bool:
    """Build one figure and embed it page-wide as a 2x PNG; a failure is listed, not fatal."""
    ok, why = images.charts_status()
    try:
        fig = build()
    except Exception as exc:  # noqa: BLE001 - a missing chart is listed, not fatal
        ctx.missing_charts.append(
            (title, f"could not be built ({type(exc).__name__}: {clean(exc, 160)})")
        )
        return False
    if fig is None:
        ctx.missing_charts.append((title, "no data for this chart (no recommendation or builder)"))
        return False
    if not ok:
        ctx.missing_charts.append((title, why))
        return False
    png = images.figure_png(fig, CHART_W, CHART_H, scale=2)
    if png is None:
        ctx.missing_charts.append((title, images.charts_status()[1]))
        return False
    h = doc.epw * CHART_H / CHART_W
    if doc.get_y() + h > doc.h - doc.b_margin:
        doc.add_page()
    doc.image(io.BytesIO(png), x=doc.l_margin, w=doc.epw, h=h)
    ctx.images += 1
    doc.ln(3)
    return True


def charts_section(doc: Doc, ctx: Context) -> None:
    if images.charts_status()[0] and doc.get_y() + 16 + doc.epw * CHART_H / CHART_W > (
        doc.h - doc.b_margin
    ):
        doc.add_page()  # the heading goes with its first chart, never alone at a page's foot
    doc.h1(f"Charts: {clean(ctx.scenario.name, 80)}" if ctx.compared else "Charts")
    if ctx.closest_miss is not None:
        doc.para("No deployment meets the SLA: the charts show the closest miss, "
                 + clean(ctx.closest_miss.description, 400) + ".", 9.5, colour=GREY)  # fmt: skip
    embedded = [embed(doc, ctx, title, build) for title, build in _figure_builders(ctx)]
    if not any(embedded):
        doc.para("No chart could be embedded; see 'Missing charts' at the end.", 9.5, colour=GREY)


def missing_charts_section(doc: Doc, ctx: Context) -> None:
    doc.h1("Missing charts")
    doc.bullets([f"{t}: {why}" for t, why in ctx.missing_charts], 9)
    if not images.charts_status()[0]:
        doc.para(f"To enable charts: {images.ENABLE_HINT}.", 9)

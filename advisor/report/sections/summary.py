"""The cover block and the executive summary: the deployment described (recommended or in
focus), its SLA verdicts, cost and throughput, the alternatives that lost and why."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from fpdf.enums import XPos, YPos

import advisor
from advisor.physics.queueing.results import unstable_text
from advisor.report.context import Context
from advisor.report.document import ACCENT, BRAND, LIGHT, TITLE, Doc
from advisor.report.facts import Deployment, fmt, num, pick
from advisor.report.sections.compare import CompareItem
from advisor.report.text import NAME_LIMIT, clean
from advisor.scenario import Scenario
from advisor.search.budget import plural
from advisor.search.ranking import deciding_key
from advisor.search.results import decode_batch_seqs


def alternatives(rec: Any, best: Deployment | None) -> list[tuple[str, str]]:
    """The top two alternatives and why each lost: (description, reason).

    One that is cheaper (or smaller) but misses the SLA (the first near miss, else a Pareto point
    that fails it), and one that meets the SLA at a higher cost (the cost frontier).
    """
    if rec is None or best is None:
        return []
    metric = pick(rec, "latency_metric", default="latency")
    cheaper: list[tuple[str, str]] = []
    for nm in pick(rec, "near_misses", default=[]) or []:
        d = pick(nm, "deployment")
        fails = "; ".join(str(f) for f in (pick(nm, "fails", default=[]) or []))
        cost = num(pick(d, "usd_per_million_tokens"))
        extra = f" (it would cost {cost:,.3f} USD per million tokens)" if cost is not None else ""
        cheaper.append(
            (str(pick(d, "description", default="?")), f"misses the SLA: {fails}{extra}")
        )
    for p in pick(rec, "pareto", default=[]) or []:
        if not p.meets_sla and p.description != best.description:
            cheaper.append(
                (
                    p.description,
                    f"{p.gpus} GPUs but misses the SLA: {metric} {p.latency_ms:,.1f} ms",
                )
            )
    dearer: list[tuple[str, str]] = []
    rank_by = getattr(pick(rec, "scenario"), "rank_by", "cost")
    for p in pick(rec, "pareto_cost", default=[]) or []:
        if p.meets_sla and p.description != best.description:
            dearer.append((p.description, ranks_lower(p, best, metric, rank_by)))
    out = cheaper[:1] + dearer[:1]
    for extra in cheaper[1:] + dearer[1:]:
        if len(out) >= 2:
            break
        out.append(extra)
    return out[:2]


def ranks_lower(p: Any, best: Deployment, metric: str, rank_by: str = "cost") -> str:
    """Why ``p``, which meets the SLA, ranks below ``best``, on the key the search decided by
    (``search.ranking.deciding_key``: price per hour, then GPUs in use, then headroom, then
    latency; ``rank_by="gpus"``: the GPUs first), with its cost per token as its own figure.
    The summary said "but costs 0.977 USD per million tokens (-18%)" of a point that lost on
    headroom at the same price per hour: under a closed loop of users a faster deployment
    sends more tokens, so a point behind the pick can cost less per token.

    >>> from types import SimpleNamespace as N
    >>> best = Deployment("pick", gpus=6, usd_per_mtok=1.195, usd_per_hour=24.09, headroom=2.5,
    ...                   tpot_ms=36.0)
    >>> p = N(gpus=6, usd_per_million_tokens=0.977, usd_per_hour=24.09, headroom=1.4,
    ...       latency_ms=21.1)
    >>> ranks_lower(p, best, "P99 TPOT")
    'meets the SLA (P99 TPOT 21.1 ms) at the same price per hour on 6 GPUs but with less headroom (1.4x vs 2.5x); 0.977 USD per million tokens (-18%): its users wait less, so they send more'
    >>> ranks_lower(N(gpus=6, usd_per_million_tokens=1.2, usd_per_hour=24.09, headroom=2.5,
    ...               latency_ms=38.2), best, "P99 TPOT")
    'meets the SLA (P99 TPOT 38.2 ms) at the same price per hour on 6 GPUs with as much headroom but a higher P99 TPOT (38.2 ms vs 36.0 ms); 1.200 USD per million tokens (+0%)'
    """
    b = best.usd_per_mtok or 0.0
    diff = f" ({(p.usd_per_million_tokens / b - 1) * 100:+.0f}%)" if b > 0 else ""
    per_tok = f"{p.usd_per_million_tokens:,.3f} USD per million tokens{diff}"
    if b > 0 and p.usd_per_million_tokens < b:
        per_tok += ": its users wait less, so they send more"
    meets = f"meets the SLA ({metric} {p.latency_ms:,.1f} ms)"
    h_p, h_b = num(getattr(p, "usd_per_hour", None)), best.usd_per_hour
    gpus_b = best.gpus if best.gpus is not None else p.gpus
    if h_p is None or h_b is None:  # a result without prices per hour (an older export)
        if rank_by == "gpus" and p.gpus > gpus_b:
            return f"{meets} but uses {p.gpus} GPUs vs {gpus_b}; {per_tok}"
        return f"{meets} but costs {per_tok} on {p.gpus} GPUs"
    # a key the export lacks ties, so the next one decides as far as the text can tell
    room_p, room_b = num(getattr(p, "headroom", None)), best.headroom
    rooms = (room_b, room_p) if room_p is not None and room_b is not None else (0.0, 0.0)
    lat_b = num(getattr(best, f"{metric.split()[-1].lower()}_ms", None))
    lats = (lat_b, p.latency_ms) if lat_b is not None else (0.0, 0.0)
    key = deciding_key(rank_by, (h_b, h_p), (gpus_b, p.gpus), rooms, lats)
    if rank_by == "gpus" and key == "gpus":
        return f"{meets} but uses {p.gpus} GPUs vs {gpus_b}; {per_tok}"
    if key == "price":
        return (
            f"{meets} but costs {h_p:,.2f} USD per hour vs {h_b:,.2f} on {p.gpus} GPUs; {per_tok}"
        )
    if key == "gpus":
        return f"{meets} at the same price per hour but uses {p.gpus} GPUs vs {gpus_b}; {per_tok}"
    same = f"{meets} at the same price per hour on {p.gpus} GPUs"
    if key == "headroom":
        return f"{same} but with less headroom ({rooms[1]:.1f}x vs {rooms[0]:.1f}x); {per_tok}"
    if key == "latency":
        return (f"{same} with as much headroom but a higher {metric} ({lats[1]:,.1f} ms vs "
                f"{lats[0]:,.1f} ms); {per_tok}")  # fmt: skip
    return f"{same}, ranked after it; {per_tok}"


def cover(doc: Doc, ctx: Context, client: str, consultant: str, date: _dt.date,
           items: Sequence[CompareItem] = ()) -> None:  # fmt: skip
    s = ctx.scenario
    rows = [
        ("Client / engagement", client or "(not given)"),
        ("Consultant", consultant or "(not given)"),
        ("Scenario", clean(s.name, NAME_LIMIT)),
    ]
    if items:
        rows.append(("Compared", "; ".join(it.label for it in items)))
    rows += [("Date", date.isoformat()), ("Prepared with", f"{BRAND} {advisor.__version__}")]
    # the block grows with the text (long client names wrap); measure before drawing the fill
    doc.set_font(doc.family, "", 9.5)
    lines = sum(
        len(doc.multi_cell(doc.epw - 52, 5.2, doc.t(v), dry_run=True, output="LINES"))
        for _, v in rows
    )
    box_h = max(44.0, 18 + 5.2 * lines + 4)
    doc.set_fill_color(*LIGHT)
    y0 = doc.get_y()
    doc.rect(doc.l_margin, y0, doc.epw, box_h, style="F")
    doc.set_xy(doc.l_margin + 5, y0 + 4)
    doc.set_font(doc.family, "B", 20)
    doc.set_text_color(*ACCENT)
    title = TITLE if not items else "LLM serving comparison"
    doc.cell(doc.epw - 10, 10, doc.t(title), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")
    doc.set_text_color(0, 0, 0)
    doc.set_font(doc.family, "", 9.5)
    for label, value in rows:
        doc.set_x(doc.l_margin + 5)
        doc.set_font(doc.family, "B", 9.5)
        doc.cell(42, 5.2, doc.t(label))
        doc.set_font(doc.family, "", 9.5)
        doc.multi_cell(
            doc.epw - 52,
            5.2,
            doc.t(value),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
            max_line_height=5.2,
        )
    doc.set_y(max(doc.get_y(), y0 + box_h) + 4)


def _sla_lines(s: Scenario, d: Deployment) -> list[str]:
    out = []
    for label, target, got in (
        ("TTFT", s.sla.ttft_ms, d.ttft_ms),
        ("TPOT", s.sla.tpot_ms, d.tpot_ms),
        ("E2E", s.sla.e2e_ms, d.e2e_ms),
    ):
        if target is None:
            if got is not None:
                out.append(
                    f"P{s.sla.percentile} {label} {got:,.1f} ms"
                    f"{d.range_text(label, got)} (no target)"
                )
            continue
        if got is None:
            out.append(f"P{s.sla.percentile} {label} target ≤ {target:g} ms: not computed")
            continue
        margin = (target - got) / target * 100
        out.append(
            f"P{s.sla.percentile} {label} {got:,.1f} ms{d.range_text(label, got)} against ≤ "
            f"{target:g} ms: {d.verdict(label, got, target)}, margin {margin:+.0f}%"
        )
    return out


def summary(doc: Doc, ctx: Context, title: str = "Executive summary") -> None:
    s = ctx.scenario
    doc.h1(clean(title, 120))
    model = s.model_spec()
    load = (
        f"{s.workload.arrival_rate_per_s:g} requests/s"
        if s.workload.arrival_rate_per_s is not None
        else f"{s.workload.concurrent_users:,} concurrent users thinking "
        f"{s.workload.think_time_s:g} s between requests"
    )
    doc.para(
        f"Question: serve {clean(model.name, 120)} at {load} with {s.workload.isl_tokens:,} input and "
        f"{s.workload.osl_tokens:,} output tokens per request, SLA {s.sla.describe()}, on at most "
        f"{s.hardware.total_gpus} GPUs ({', '.join(s.hardware.gpus)}).",
        9.5,
    )
    d = ctx.best
    if ctx.focus_note and not ctx.focused:
        doc.para(f"Deployment in focus in the app: {ctx.focus_note}. The recommendation follows.",
                 10, colour=(170, 40, 0))  # fmt: skip
    if d is None:
        reason = (
            ctx.rec_note
            or str(pick(ctx.rec, "no_best_reason", default=""))
            or ("no deployment meets the SLA within the hardware")
        )
        doc.para("No recommendation: " + clean(reason, 600), 10.5, bold=True, colour=(170, 40, 0))
        _explanation(doc, ctx)
        return
    head = ("Deployment in focus" if ctx.focused else "Recommended deployment") + (
        ", at risk" if d.at_risk else "")  # fmt: skip
    doc.para(f"{head}: " + clean(d.description, 400), 10.5, bold=True)
    if ctx.focused:
        rec_best = pick(ctx.rec, "best") if ctx.rec is not None else None
        doc.para(f"Chosen in the app ({ctx.focus_note}), not the search's recommendation ("
                 + clean(pick(rec_best, "description", default="none"), 400) + ").", 9.5,
                 colour=(170, 40, 0))  # fmt: skip
    warning = pick(ctx.rec, "warning")
    if warning:  # in the headline, not a footnote: the winner is predicted from priors
        doc.para(clean(str(warning), 600), 10.5, bold=True, colour=(170, 40, 0))
    risk = None if ctx.focused else pick(ctx.rec, "at_risk")
    if risk or d.at_risk:  # none meets with confidence: flagged in the headline, never silently
        text = (
            str(risk) if risk else "At risk: " + "; ".join(d.at_risk[:-1]) + f". {d.at_risk[-1]}."
        )
        doc.para(clean(text, 1200), 10.5, bold=True, colour=(170, 40, 0))
    doc.para(d.sentence()[:1].upper() + d.sentence()[1:] + ".", 10)
    if d.headroom is not None:
        doc.para(
            f"Headroom: {d.headroom:.1f}× the offered load before the deployment saturates."
            if d.headroom >= 1
            else f"It saturates at {d.headroom:.1f}× the offered load.",
            9,
        )
    if not d.stable:  # no steady state: no percentile, throughput or cost per token exists
        why = unstable_text(d.unstable_reason)
        doc.bullets([f"{why[:1].upper()}{why[1:]}; its queue grows without bound, so it has no "
                     "latency percentiles, steady throughput or cost per token to quote"])  # fmt: skip
        _explanation(doc, ctx)
        return
    facts = _sla_lines(s, d)
    facts.append(
        f"Throughput {fmt(d.throughput_tok_s, ',.0f', 'output tokens/s')} on "
        + plural(d.gpus if d.gpus is not None else d.tp * d.pp * d.dp, "GPU")
        + (
            f" ({d.throughput_tok_s / d.gpus:,.0f} per GPU)"
            if d.throughput_tok_s and d.gpus
            else ""
        )
        + (
            f", decode batch {decode_batch_seqs(d.running)} per replica"
            if d.running is not None
            else ""
        )  # fmt: skip
    )
    facts.append(f"Cost {fmt(d.usd_per_mtok, ',.3f')} USD per million output tokens "
                 f"({s.cost.mode} pricing)")  # fmt: skip
    doc.bullets(facts)
    _explanation(doc, ctx)


def _explanation(doc: Doc, ctx: Context) -> None:
    """The alternatives that lost and the search's reasons for its pick."""
    expl = pick(ctx.rec, "explanation", default="")
    if ctx.alternatives:
        doc.h2("The top alternatives and why they lost")
        doc.bullets([f"{clean(a, 300)}: {clean(why, 400)}" for a, why in ctx.alternatives], 9)
    if expl:
        unmet = ctx.rec is not None and pick(ctx.rec, "best") is None
        doc.h2("Why no deployment meets the SLA" if unmet
               else "Why the search recommends its pick" if ctx.focused
               else "Why this deployment")  # fmt: skip
        lines = list(expl) if isinstance(expl, list | tuple) else [str(expl)]
        doc.bullets([clean(x, 600) for x in lines[:8]], 9)

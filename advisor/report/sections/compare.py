"""A comparison of scenarios: the ranking (its executive summary), each scenario's inputs and
answer, the overlaid charts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.catalog import accelerators
from advisor.report.context import Context, try_recommend
from advisor.report.document import Doc
from advisor.report.facts import fmt
from advisor.report.sections.charts import embed
from advisor.report.text import clean
from advisor.scenario import Scenario

#: Scenarios a comparison holds at most (the Compare page picks two to four).
COMPARE_LIMIT = 8


@dataclass
class CompareItem:
    label: str
    scenario: Scenario
    focus: Any = None  # a search Deployment put in focus; None = the recommended one


@dataclass
class Answer:
    """One compared scenario: its search result and its row (``search.comparison.Compared``)."""

    label: str
    scenario: Scenario
    rec: Any
    row: Any


def compare_items(compare: Sequence[Any]) -> list[CompareItem]:
    """(label, scenario[, deployment]) items with cleaned, unique labels (charts key on them),
    cut to 60 characters keeping what tells each from the others, as the Compare page's
    charts do (charts.compare_charts.distinct_labels; issue 38: three scenarios sharing a
    63-character prefix all read "default / St. Mary's Hospital clinical assistant, 400
    clini…", then "(2)" and "(3)", with the accelerator that told them apart cut off)."""
    from advisor.charts.compare_charts import distinct_labels

    out: list[CompareItem] = []
    seen: set[str] = set()
    items = list(compare)[:COMPARE_LIMIT]
    labels = distinct_labels([clean(it[0], 400) or "(unnamed)" for it in items], 60, False)
    for item, short in zip(items, labels, strict=True):
        _, sc, *rest = item
        base = clean(short, 60) or "(unnamed)"
        name, n = base, 2
        while name in seen:
            name, n = f"{base} ({n})", n + 1
        seen.add(name)
        out.append(CompareItem(name, sc, rest[0] if rest else None))
    return out


def compare_answers(items: Sequence[CompareItem]) -> list[Answer]:
    """Each item's search result and comparison row, in the ranking's order."""
    from advisor.search import comparison as cmp

    answers = []
    for it in items:
        try:
            rec, _ = try_recommend(it.scenario)
        except Exception:  # noqa: BLE001 - one bad scenario does not sink the report
            rec = None
        answers.append(Answer(it.label, it.scenario, rec,
                               cmp.compared(it.label, it.scenario, rec, it.focus)))  # fmt: skip
    order = {id(r): i for i, r in enumerate(cmp.ranked([a.row for a in answers]))}
    return sorted(answers, key=lambda a: order[id(a.row)])


def compare_section(doc: Doc, ctx: Context, ranking: Sequence[Answer],
                     charts: bool = True) -> None:  # fmt: skip
    """The ranking (the executive summary of a comparison), inputs, answers, overlaid charts."""
    from advisor.search import comparison as cmp
    from advisor.search.budget import monthly_usd

    rows = [a.row for a in ranking]
    doc.h1(f"Executive summary: {len(ranking)} scenarios ranked")
    doc.para(clean(cmp.verdict(rows), 800), 10.5, bold=True)
    gpus = accelerators()
    table = [("#", "Scenario", "Deployment", "GPUs", "USD per M tokens", "USD per month",
              "TTFT / TPOT", "SLA")]  # fmt: skip
    why = []
    for i, a in enumerate(ranking, start=1):
        d, pct = a.row.deployment, a.scenario.sla.percentile
        if d is None:
            table.append((str(i), a.label, "no deployment fits", "", "", "", "", "missed"))
            why.append(f"{a.label}: {clean(a.row.why, 400)}")
            continue
        acc = gpus[d.gpu].name + ("" if a.row.calibrated else " (not calibrated)")
        lat = (f"P{pct} {getattr(d.ttft_ms, f'p{pct}'):,.0f} / "
               f"{getattr(d.tpot_ms, f'p{pct}'):,.1f} ms") if d.stable else "unstable"  # fmt: skip
        table.append((str(i), a.label, f"{cmp.short_shape(d)} on {acc}", str(d.gpus),
                      fmt(d.usd_per_million_tokens, ",.3f"), f"{monthly_usd(a.scenario, d):,.0f}",
                      lat, a.row.sla_word))  # fmt: skip
        if not a.row.meets_sla:
            why.append(f"{a.label}: {clean(a.row.why, 400)}")
    doc.table(table, (6, 30, 56, 11, 17, 17, 27, 14), size=7.5)
    if why:
        doc.h2("Why the others miss their SLA or are at risk")
        doc.bullets(why, 8.5)

    doc.h2("The scenarios")
    rows_in = [("Scenario", "Model and hardware", "Load", "SLA")]
    for a in ranking:
        s, hw, w = a.scenario, a.scenario.hardware, a.scenario.workload
        hardware = ", ".join(gpus[g].name if g in gpus else g for g in hw.gpus)
        nodes = f" ({hw.nodes} nodes of {hw.gpus_per_node})" if hw.nodes > 1 else ""
        rows_in.append((a.label, f"{clean(s.model_spec().name, 120)} on {hw.total_gpus} × {hardware}{nodes}",
                        f"{cmp.load_text(s)}; {w.isl_tokens:,} in / {w.osl_tokens:,} out tokens",
                        s.sla.describe()))  # fmt: skip
    doc.table(rows_in, (40, 58, 46, 34), size=8)

    doc.h2("Each scenario's answer at its own load")
    for start in range(0, len(ranking), 4):
        part = ranking[start : start + 4]
        cells = [cmp.table_rows(a.row) for a in part]
        names = list(dict.fromkeys(k for c in cells for k in c))
        w = (doc.epw - 36) / len(part)
        doc.table([("", *(a.label for a in part)),
                   *((n, *(c.get(n, "") for c in cells)) for n in names)],
                  (36, *([w] * len(part))), size=7.5)  # fmt: skip

    if not charts:
        return
    doc.h2("Overlaid charts (as on the Compare page)")
    from advisor.charts import compare_charts as cc

    results = {a.label: cc.deployment_result(a.row.deployment) for a in ranking}
    sweeps: dict[str, list[dict]] = {}
    for a in ranking:
        try:
            sweeps[a.label] = (cc.deployment_sweep(a.scenario, a.row.deployment)
                               if a.row.deployment is not None else [])  # fmt: skip
        except (ValueError, KeyError):
            sweeps[a.label] = []
    embed(doc, ctx, "Comparison: latency breakdown by scenario",
           lambda: cc.latency_breakdown_figure(results))  # fmt: skip
    embed(doc, ctx, "Comparison: throughput and TPOT against batch size",
           lambda: cc.throughput_vs_batch_figure(sweeps))  # fmt: skip

"""Appendix C: the datasheets and model cards, and the publications behind the calibration for
the accelerators in the report."""

from __future__ import annotations

from advisor.catalog import accelerators, models
from advisor.perf.validation.measurements import source_key
from advisor.report.context import Context, measurement_sources, validation
from advisor.report.document import Doc
from advisor.report.text import clean


def sources_appendix(doc: Doc, ctx: Context) -> None:
    doc.h1("Appendix C: sources")
    s = ctx.scenario
    gpus = accelerators()
    doc.h2("Datasheets and model cards")
    items: list[str] = []
    seen: set[str] = set()
    scenarios = [s, *ctx.compared]
    gpu_ids = list(dict.fromkeys(g for sc in scenarios for g in sc.hardware.gpus))
    entries = [gpus[g] for g in gpu_ids if g in gpus]
    for m in dict.fromkeys(sc.model for sc in scenarios):
        if m in models():
            entries.append(models()[m])
    for e in entries:
        for src in dict.fromkeys((getattr(e, "sources", None) or {}).values()):
            if src in seen:
                continue
            seen.add(src)
            items.append(f"{e.name}: {clean(src, 400)}")
    doc.bullets(items or ["(no catalog sources)"], 8)
    doc.h2("Measurements behind the calibration for these accelerators")
    try:
        rows_used = [r for r in validation()["rows"] if r["gpu"] in gpu_ids]
    except Exception:  # noqa: BLE001
        rows_used = []
    meta = measurement_sources()
    by_source: dict[str, int] = {}
    for r in rows_used:
        # the publication as leave-one-source-out counts it (revisions and sections of one page
        # are one source): three tables of one page were three identical-looking lines
        src = source_key(meta.get(r["id"], {}).get("source", "?"))
        by_source[src] = by_source.get(src, 0) + 1
    # one line per publication; the row ids are in data/measurements*.csv (`advisor validate`)
    items = [f"{n} row{'s' if n != 1 else ''}: {clean(src, 160)}"
             for src, n in sorted(by_source.items(), key=lambda kv: -kv[1])]  # fmt: skip
    if items:
        plural = "s" if len(items) != 1 else ""
        doc.para(f"{len(rows_used):,} published measurements from {len(items)} source{plural}; each "
                 "row, with its id and exact source, is in the data/measurements*.csv files "
                 "shipped with the tool (`python -m advisor validate` lists the errors per row).",
                 8.5)  # fmt: skip
    doc.bullets(items or ["(no measurement rows for these accelerators)"], 7.5)

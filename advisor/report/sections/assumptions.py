"""Assumptions and confidence: the out-of-sample error table, and the sensitivities (the
search re-run with the load, the context and the acceptance rate changed)."""

from __future__ import annotations

import time

from advisor.report.context import Context, recommendation_for, validation
from advisor.report.document import GREY, Doc
from advisor.report.facts import deployment, fmt, pick
from advisor.report.text import clean
from advisor.scenario import Scenario

#: Time the sensitivity re-runs may take in total, seconds (skipped beyond).
SENSITIVITY_BUDGET_S = 4.0


def perturbations(s: Scenario) -> list[tuple[str, Scenario]]:
    w = s.workload
    out = []
    if w.arrival_rate_per_s is not None:
        for f in (0.5, 1.5):
            out.append((f"arrival rate ×{f:g} ({w.arrival_rate_per_s * f:g} requests/s)",
                        s.model_copy(update={"workload": w.model_copy(update={"arrival_rate_per_s": w.arrival_rate_per_s * f})})))  # fmt: skip
    else:
        for f in (0.5, 1.5):
            n = max(1, round(w.concurrent_users * f))
            out.append((f"concurrent users ×{f:g} ({n:,})",
                        s.model_copy(update={"workload": w.model_copy(update={"concurrent_users": n})})))  # fmt: skip
        if w.think_time_s > 0:  # an assumption about people: what if they read twice as fast
            z = w.think_time_s / 2
            out.append((f"think time ×0.5 ({z:g} s)",
                        s.model_copy(update={"workload": w.model_copy(update={"think_time_s": z})})))  # fmt: skip
    out.append((f"context ×2 ({w.isl_tokens * 2:,} input tokens)",
                s.model_copy(update={"workload": w.model_copy(update={"isl_tokens": min(w.isl_tokens * 2, 2_000_000)})})))  # fmt: skip
    o = s.options
    if o.speculative:
        a = max(0.0, o.spec_acceptance - 0.2)
        out.append((f"acceptance rate {o.spec_acceptance:g} → {a:g}",
                    s.model_copy(update={"options": o.model_copy(update={"spec_acceptance": a})})))  # fmt: skip
    return out


def _sensitivity_rows(ctx: Context) -> tuple[list[tuple[str, str, str]], str | None]:
    if ctx.best is None:
        return [], "no recommendation to perturb"
    try:
        import advisor.search.recommend  # noqa: F401
    except ImportError:
        return [], "the recommendation engine is not available"
    rows, start = [], time.perf_counter()
    for label, sc in perturbations(ctx.scenario):
        if time.perf_counter() - start > SENSITIVITY_BUDGET_S:
            rows.append((label, "skipped (time budget)", ""))
            continue
        try:
            r = recommendation_for(sc)
        except Exception as exc:  # noqa: BLE001
            rows.append((label, f"failed: {type(exc).__name__}", ""))
            continue
        b = pick(r, "best")
        if b is None:
            rows.append((label, "no deployment meets the SLA", "yes: infeasible"))
            continue
        d = deployment(b, sc.sla.percentile)
        flips = "no" if d.key() == ctx.best.key() else "yes"
        rows.append((label, f"{d.short()}, {fmt(d.usd_per_mtok, '.3f')} USD/Mtok", flips))
    return rows, None


def assumptions_section(doc: Doc, ctx: Context, sensitivities: bool) -> None:
    doc.h1("Assumptions and confidence")
    doc.h2("How far to trust the predictions: error on measurements the fit never saw")
    try:
        v = validation()
        oos = v.get("out_of_sample")
        if oos:
            rows = [("Held out", "Prediction", "rows", "median |error| %", "p90 |error| %")]
            for r in oos["rows"]:
                if r["held out"] == "one engine at a time":
                    continue  # the two schemes the figures are quoted from
                rows.append((r["held out"].replace(" at a time", ""), r["family"], str(r["rows"]),
                             fmt(r.get("median_ape_pct")), fmt(r.get("p90_ape_pct"))))  # fmt: skip
            doc.table(rows, (40, 50, 18, 35, 35), align="RIGHT")
            doc.para(
                f"Out of sample ({clean(oos['generated_by'], 80)}, {oos['generated_on']}): the "
                "constants are refitted from scratch without one source (a publication) or one "
                "accelerator family, and that group's measurements are predicted. This is the "
                "error to expect for a deployment nobody measured; a prediction the model calls "
                "unstable counts as a 100% error.",
                8.5,
            )
        else:
            doc.para("No out-of-sample table (python -m advisor crossval has not been run).", 9)
    except Exception as exc:  # noqa: BLE001
        doc.para(f"Out-of-sample table unavailable: {type(exc).__name__}", 9)
    doc.para("The fitted constants and the in-sample fit: Appendix A.", 8.5, colour=GREY)

    doc.h2("Sensitivities: what would change the recommendation")
    if not sensitivities:
        doc.para("Not computed for this export.", 9)
        return
    rows, why = _sensitivity_rows(ctx)
    if why:
        doc.para(f"Not computed: {why}.", 9)
        return
    doc.table([("Change", "Recommendation then", "Flips?"), *rows], (58, 100, 20))

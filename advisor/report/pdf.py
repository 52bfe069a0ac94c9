"""The PDF recommendation summary: the document the client takes home (issue 7).

``build_report(scenario, client=..., consultant=..., recommendation=...) -> bytes`` lays out:
cover block, executive summary, the scenario (every input with units), charts (the same figure
builders as the app, PNG at 2x), assumptions and confidence (calibration constants, measured
error per prediction family, sensitivities), article disagreements, sources. Every page has a
branded header and a footer with the page number.

Charts need kaleido and a Chrome/Chromium (``images.charts_status``); without them the PDF still
builds, with the tables, and lists the missing charts and how to enable them.

This module puts the document together; the parts live beside it: the page and its building
blocks (``document``), what the report prints about a deployment (``facts``), what it reads
and carries from section to section (``context``), and one module per section
(``sections/``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from advisor.report import images
from advisor.report.context import Context, try_recommend
from advisor.report.document import Doc
from advisor.report.facts import deployment, pick
from advisor.report.sections.article import article_appendix
from advisor.report.sections.assumptions import assumptions_section
from advisor.report.sections.budget import budget_section, quality_section
from advisor.report.sections.calibration import calibration_appendix
from advisor.report.sections.charts import charts_section, missing_charts_section
from advisor.report.sections.client_profile import client_profile_section
from advisor.report.sections.compare import compare_answers, compare_items, compare_section
from advisor.report.sections.deploy import deploy_appendix
from advisor.report.sections.scenario import scenario_section
from advisor.report.sections.sources import sources_appendix
from advisor.report.sections.summary import alternatives, cover, summary
from advisor.report.text import NAME_LIMIT, NOTES_LIMIT, clean
from advisor.scenario import Scenario


def build_report(
    scenario: Scenario,
    *,
    client: str = "",
    consultant: str = "",
    recommendation: Any = None,
    compare: Sequence[tuple[str, Scenario]] | None = None,
    notes: str = "",
    sensitivities: bool = True,
    charts: bool = True,
    date: _dt.date | None = None,
    focus: Any = None,
    focus_note: str = "",
    client_profile: Mapping[str, Any] | None = None,
) -> bytes:
    """The PDF as bytes. ``recommendation`` defaults to ``recommend(scenario)`` when available.

    ``client``/``consultant`` are truncated to 200 characters, ``notes`` to 2,000, after removing
    control and bidi characters; text is never interpreted as markup. ``compare`` adds a
    comparison over ``(label, scenario)`` or ``(label, scenario, deployment)`` items (a
    deployment put in focus; None = the recommended one): the document then opens with the
    ranking (``search.comparison``: cheapest deployment that meets its SLA first, then those
    that miss, with why), each scenario's answer and the overlaid charts, and details the
    top-ranked scenario (``scenario`` and ``recommendation`` are then not used).
    ``charts=False`` skips the images. ``focus``: the deployment the report describes instead
    of the recommendation (the app's deployment in focus), with ``focus_note`` saying how it
    was chosen (or, without ``focus``, why it cannot run).
    """
    if charts:
        images.prestart()  # the browser starts while the searches and first pages run
    client_t = clean(client, NAME_LIMIT)
    consultant_t = clean(consultant, NAME_LIMIT)
    notes_t = clean(notes, NOTES_LIMIT, multiline=True)
    items = compare_items(compare or [])
    ranking: list[Any] = []
    if items:
        ranking = compare_answers(items)
        top = ranking[0]
        scenario, recommendation = top.scenario, top.rec
    rec, rec_note = recommendation, None
    if rec is None:
        rec, rec_note = try_recommend(scenario)
    best_obj = pick(rec, "best") if rec is not None else None
    if items and ranking[0].row.source == "in focus":
        best_obj = ranking[0].row.deployment
    if focus is not None and not items:
        best_obj = focus
    best = deployment(best_obj, scenario.sla.percentile) if best_obj is not None else None
    alts = alternatives(rec, best) if focus is None or items else []  # "why they lost" to it
    near = pick(rec, "near_misses", default=None) or []
    closest = near[0].deployment if best_obj is None and near else None
    ctx = Context(scenario, rec, rec_note, best, alts, focus_note=clean(focus_note, 800),
                   focused=focus is not None and not items, described=best_obj or closest)  # fmt: skip

    subtitle = clean(client_t or scenario.name, 60)
    doc = Doc(subtitle)
    doc.add_page()
    cover(doc, ctx, client_t, consultant_t, date or _dt.date.today(), items)
    if items:
        ctx.compared = [it.scenario for it in items]
        compare_section(doc, ctx, ranking, charts)
        summary(doc, ctx, f"The top-ranked scenario in detail: {ranking[0].label}")
    else:
        summary(doc, ctx)
    if notes_t:
        doc.h2("Notes")
        doc.para(notes_t, 9.5)
    if (
        client_profile
    ):  # a client calibration profile was used (advisor/perf/calibration/client_profile.py)
        client_profile_section(doc, client_profile)
    if best_obj is not None:
        in_focus = ctx.focused or (bool(items) and ranking[0].row.source == "in focus")
        quality_section(doc, scenario, best_obj)
        budget_section(doc, scenario, best_obj, "in-focus" if in_focus else "recommended")
    scenario_section(doc, ctx)
    if charts:
        charts_section(doc, ctx)
    else:
        ctx.missing_charts.append(("all charts", "charts were switched off for this export"))
    assumptions_section(doc, ctx, sensitivities)
    # reference material a client does not read front to back (issue 38: 2.5 pages of row ids
    # and the article's Llama-2-70B table sat in a hospital's report body)
    calibration_appendix(doc, ctx)
    article_appendix(doc, ctx)
    sources_appendix(doc, ctx)
    if best_obj is not None:
        deploy_appendix(doc, scenario, best_obj)
    if ctx.missing_charts:
        missing_charts_section(doc, ctx)
    out = bytes(doc.output())
    _LAST.clear()
    _LAST.update(pages=doc.page_no(), images=ctx.images, missing_charts=list(ctx.missing_charts),
                 unprintable=list(getattr(doc, "unprintable", {})))  # fmt: skip
    return out


_LAST: dict = {}


def last_build_info() -> dict:
    """Pages, embedded images and missing charts of the last ``build_report`` in this process."""
    return dict(_LAST)


def report_bytes_for_app(
    scenario: Scenario,
    client: str = "",
    consultant: str = "",
    recommendation: Any = None,
    compare: Sequence[tuple] | None = None,
    focus: Any = None,
    focus_note: str = "",
    client_profile: Mapping[str, Any] | None = None,
) -> bytes:
    """For ``st.download_button(data=lambda: report_bytes_for_app(...), on_click="ignore")``."""
    return build_report(
        scenario,
        client=client,
        consultant=consultant,
        recommendation=recommendation,
        compare=compare,
        focus=focus,
        focus_note=focus_note,
        client_profile=client_profile,
    )

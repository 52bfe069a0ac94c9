"""The PDF recommendation summary: the document the client takes home (issue 7).

``build_report(scenario, client=..., consultant=..., recommendation=...) -> bytes`` lays out:
cover block, executive summary, the scenario (every input with units), charts (the same figure
builders as the app, PNG at 2x), assumptions and confidence (calibration constants, measured
error per prediction family, sensitivities), article disagreements, sources. Every page has a
branded header and a footer with the page number.

Charts need kaleido and a Chrome/Chromium (``images.charts_status``); without them the PDF still
builds, with the tables, and lists the missing charts and how to enable them.
"""

from __future__ import annotations

import datetime as _dt
import io
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from fpdf import FPDF
from fpdf.enums import XPos, YPos

import advisor
from advisor.catalog import accelerators, interconnects, models
from advisor.catalog.loader import measurement_rows
from advisor.physics.queueing.results import unstable_text
from advisor.report import fonts, images
from advisor.report.budget_pdf import budget_section, quality_section
from advisor.report.client_profile_pdf import client_profile_section
from advisor.report.deploy_pdf import deploy_appendix
from advisor.report.text import NAME_LIMIT, NOTES_LIMIT, clean, latin1, needs_shaping
from advisor.scenario import Scenario
from advisor.search.budget import plural
from advisor.search.results import decode_batch_seqs

TITLE = "LLM serving recommendation"
BRAND = "Inference Architect"
ACCENT = (0, 114, 178)  # the charts' blue (theme.PALETTE[0])
GREY = (110, 110, 110)
LIGHT = (235, 241, 247)
#: Chart image size in CSS pixels before the 2x scale (aspect of a page-wide figure).
CHART_W, CHART_H = 900, 480
#: Time the sensitivity re-runs may take in total, seconds (skipped beyond).
SENSITIVITY_BUDGET_S = 4.0


# --------------------------------------------------------------------------- data access helpers


def _pick(obj: Any, *names: str, default: Any = None) -> Any:
    """The first attribute or key of ``obj`` among ``names`` that is not None."""
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def _fmt(x: Any, spec: str = ".1f", unit: str = "") -> str:
    v = _num(x)
    if v is None:
        return "n/a"
    return f"{v:{spec}}{(' ' + unit) if unit else ''}"


@dataclass
class Deployment:
    """The facts the report prints about one deployment (from ``search.recommend.Deployment``)."""

    description: str
    gpu: str = "?"
    gpu_name: str = "?"
    gpus: int | None = None
    tp: int = 1
    pp: int = 1
    dp: int = 1
    weights: str = "?"
    kv: str = "?"
    speculative: bool = False
    disaggregated: bool = False
    prefill_pool: dict | None = None
    decode_pool: dict | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    throughput_tok_s: float | None = None
    usd_per_mtok: float | None = None
    running: float | None = None
    headroom: float | None = None
    meets_sla: bool | None = None
    #: False when the offered load makes its queue grow without bound (no percentiles exist).
    stable: bool = True
    unstable_reason: str | None = None
    #: The search's intervals of the SLA percentiles (search/sla.percentile_intervals), or None.
    intervals: dict | None = None
    spare_gpus: int = 0  # of the N+1 spare replica(s), included in gpus
    #: Why it is "at risk" (search/sla.risk_lines; the last line: the measurement), else [].
    at_risk: tuple[str, ...] = ()

    def range_ms(self, label: str) -> tuple[float, float] | None:
        """[low, high] of the predicted percentile of "TTFT", "TPOT" or "E2E", if known."""
        got = (self.intervals or {}).get(f"{label.lower()}_ms")
        if not isinstance(got, list | tuple) or len(got) != 2:
            return None
        lo, hi = _num(got[0]), _num(got[1])
        return None if lo is None or hi is None else (lo, hi)

    def range_text(self, label: str, point_ms: float | None = None) -> str:
        """ " (80% range 12.1-15.3 ms)" or ""; with the estimate, a range that excludes it says
        which way the model errs there (" (80% range 27.7-33.8 ms; the model runs high here)")."""
        from advisor.perf.model.intervals import range_note

        r = self.range_ms(label)
        conf = _num((self.intervals or {}).get("confidence"))
        if r is None or conf is None:
            return ""
        note = range_note(point_ms, r[0], r[1]) if point_ms is not None else ""
        return f" ({conf:.0%} range {r[0]:,.1f}-{r[1]:,.1f} ms{note})"

    def verdict(self, label: str, got: float, target: float) -> str:
        """ "met" / "AT RISK" / "MISSED": by the upper end of the range when there is one, and
        "AT RISK" when the prediction is within the target and the range's upper end is not
        (search/sla.py)."""
        r = self.range_ms(label)
        if (r[1] if r else got) <= target:
            return "met"
        return "AT RISK" if got <= target else "MISSED"

    def sentence(self) -> str:
        spec = "with speculative decoding" if self.speculative else "no speculative decoding"
        n = self.gpus if self.gpus is not None else self.tp * self.pp * self.dp
        if self.disaggregated:
            pre, dec = self.prefill_pool or {}, self.decode_pool or {}
            shape = (
                f"disaggregated: prefill pool {pre.get('dp', '?')} × TP={pre.get('tp', '?')} + "
                f"decode pool {dec.get('dp', '?')} × TP={dec.get('tp', '?')}, PP=1"
            )
            batching = "continuous batching in the decode pool, prompts in the prefill pool"
        else:
            shape = f"{self.dp} replica{'s' if self.dp != 1 else ''} (DP={self.dp}) of TP={self.tp} × PP={self.pp}"
            batching = "continuous batching"
        if self.spare_gpus:
            shape += f" + an N+1 spare replica ({self.spare_gpus} GPU{'s' if self.spare_gpus != 1 else ''})"
        return (
            f"{n} × {self.gpu_name}, {shape}, weights {self.weights}, KV cache {self.kv}, "
            f"{spec}, {batching}"
        )

    def short(self) -> str:
        return self.description

    def key(self) -> tuple:
        return (self.description,)


def deployment(obj: Any, percentile: int = 99) -> Deployment:
    """Read a ``search.recommend.Deployment`` (or a dict with its fields)."""
    gpu = str(_pick(obj, "gpu", default="?"))
    gpus = accelerators()
    kind = str(_pick(obj, "kind", default="aggregated"))

    def pct(name: str) -> float | None:
        p = _pick(obj, name)
        if isinstance(p, dict):
            return _num(p.get(f"p{percentile}"))
        return _num(getattr(p, f"p{percentile}", p))

    meets = _pick(obj, "meets_sla")
    return Deployment(
        description=str(_pick(obj, "description", default=gpu)),
        gpu=gpu,
        gpu_name=gpus[gpu].name if gpu in gpus else gpu,
        gpus=_pick(obj, "gpus"),
        tp=int(_pick(obj, "tp", default=1)),
        pp=int(_pick(obj, "pp", default=1)),
        dp=int(_pick(obj, "dp", default=1)),
        weights=str(_pick(obj, "weights", default="?")),
        kv=str(_pick(obj, "kv", default="?")),
        speculative=bool(_pick(obj, "speculative", default=False)),
        disaggregated=kind == "disaggregated",
        prefill_pool=_pick(obj, "prefill_pool"),
        decode_pool=_pick(obj, "decode_pool"),
        ttft_ms=pct("ttft_ms"),
        tpot_ms=pct("tpot_ms"),
        e2e_ms=pct("e2e_ms"),
        throughput_tok_s=_num(_pick(obj, "throughput_tok_s")),
        usd_per_mtok=_num(_pick(obj, "usd_per_million_tokens")),
        running=_num(_pick(obj, "running_batch")),
        headroom=_num(_pick(obj, "headroom")),
        meets_sla=None if meets is None else bool(meets),
        stable=bool(_pick(obj, "stable", default=True)),
        unstable_reason=_pick(obj, "unstable_reason"),
        intervals=iv if isinstance(iv := _pick(obj, "intervals"), dict) else None,
        spare_gpus=int(_pick(obj, "spare_gpus", default=0) or 0),
        at_risk=tuple(str(x) for x in (_pick(obj, "at_risk", default=()) or ())),
    )


@lru_cache(maxsize=64)
def _recommend_json(scenario_json: str) -> Any:
    from advisor.search.recommend import recommend

    return recommend(Scenario.model_validate_json(scenario_json))


def _recommend(scenario: Scenario) -> Any:
    """``recommend(scenario)``, memoised per scenario (sensitivity re-runs repeat across exports)."""
    return _recommend_json(scenario.model_dump_json())


def _try_recommend(scenario: Scenario) -> tuple[Any, str | None]:
    """``recommend(scenario)`` if the search is installed; (None, why) otherwise."""
    try:
        import advisor.search.recommend  # noqa: F401
    except ImportError:
        return None, "the recommendation engine (advisor.search.recommend) is not available"
    return _recommend(scenario), None


@cache
def _validation() -> dict:
    from advisor.perf.validation.validate import validation_report

    return validation_report()


@cache
def _measurement_sources() -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in measurement_rows()}


def _calibration() -> dict:
    from advisor.perf.model.profiles import _calibration as cal

    return cal()


def _article_claims(scenario: Scenario, rec: Any) -> tuple[list[Any], str | None]:
    try:
        from advisor import article_check
    except ImportError:
        return [], "the article check (advisor.article_check) is not available in this version"
    fn = None
    for name in ("check", "check_claims", "claims", "article_claims", "run"):
        fn = getattr(article_check, name, None)
        if callable(fn):
            break
    if fn is None:
        return [], "advisor.article_check has no check function"
    try:
        return list(fn()), None
    except Exception as exc:  # noqa: BLE001 - a note, never a failed report
        return [], f"the article check failed: {type(exc).__name__}"


# --------------------------------------------------------------------------- the document


class _Doc(FPDF):
    def __init__(self, subtitle: str) -> None:
        super().__init__(orientation="P", unit="mm", format="A4")
        self.family = fonts.register(self)
        self.unicode = self.family == fonts.FAMILY
        self.subtitle = subtitle
        self.set_margins(16, 20, 16)
        self.set_auto_page_break(True, margin=18)
        self.set_title(TITLE)
        self.set_author(BRAND)
        self.set_creator(f"{BRAND} {advisor.__version__}")

    def t(self, text: str) -> str:
        if not self.unicode:
            return latin1(text)
        fonts.cover(self, text)  # CJK/emoji fallbacks when the text needs them
        self.shaping(needs_shaping(text))
        return text

    def shaping(self, on: bool) -> None:
        """HarfBuzz shaping (uharfbuzz) for the text drawn next: Arabic letters joined, right-
        to-left runs in reading order; off otherwise (glyph by glyph, as fast as before)."""
        if on != bool(self.text_shaping):
            self.set_text_shaping(on)

    def header(self) -> None:
        self.set_font(self.family, "B", 9)
        self.set_text_color(*ACCENT)
        self.set_xy(self.l_margin, 8)
        self.cell(self.epw / 2, 6, self.t(BRAND), align="L")
        self.set_font(self.family, "", 8)
        self.set_text_color(*GREY)
        self.cell(self.epw / 2, 6, self.t(self.subtitle), align="R")
        self.set_draw_color(*ACCENT)
        self.set_line_width(0.4)
        self.line(self.l_margin, 14.5, self.w - self.r_margin, 14.5)
        self.set_text_color(0, 0, 0)
        self.set_y(self.t_margin)

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(self.family, "", 8)
        self.set_text_color(*GREY)
        self.cell(self.epw / 2, 6, self.t(f"{BRAND} {advisor.__version__}"), align="L")
        self.cell(self.epw / 2, 6, f"Page {self.page_no()} of {{nb}}", align="R")
        self.set_text_color(0, 0, 0)

    # building blocks
    def h1(self, text: str) -> None:
        if self.get_y() > self.h - 60:  # keep the heading with its first h2 and lines
            self.add_page()
        self.ln(3)
        self.set_font(self.family, "B", 14)
        self.set_text_color(*ACCENT)
        self.multi_cell(0, 7, self.t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")
        self.set_text_color(0, 0, 0)
        self.ln(1)

    def h2(self, text: str) -> None:
        if self.get_y() > self.h - 50:
            self.add_page()
        self.ln(1.5)
        self.set_font(self.family, "B", 11)
        self.multi_cell(0, 6, self.t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")

    def para(self, text: str, size: float = 10, bold: bool = False, colour=(0, 0, 0)) -> None:
        self.set_font(self.family, "B" if bold else "", size)
        self.set_text_color(*colour)
        self.multi_cell(0, size * 0.5, self.t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")
        self.set_text_color(0, 0, 0)
        self.ln(1)

    def bullets(self, items: Sequence[str], size: float = 9.5) -> None:
        self.set_font(self.family, "", size)
        for item in items:
            self.set_x(self.l_margin + 2)
            self.cell(4, size * 0.5, self.t("•"))
            self.multi_cell(
                self.epw - 6,
                size * 0.5,
                self.t(item),
                new_x=XPos.LMARGIN,
                new_y=YPos.NEXT,
                align="L",
            )
        self.ln(1)

    def table(self, rows: Sequence[Sequence[str]], widths: Sequence[float], size: float = 8.5,
              align: str = "LEFT") -> None:  # fmt: skip
        self.set_font(self.family, "", size)
        with super().table(
            col_widths=tuple(widths), width=self.epw, line_height=size * 0.5,
            text_align=align if align != "RIGHT" else ("LEFT",) + ("RIGHT",) * (len(widths) - 1),
            headings_style=_headings(self), cell_fill_color=(248, 250, 252),
            cell_fill_mode="ROWS", borders_layout="HORIZONTAL_LINES", padding=0.8,
        ) as tab:  # fmt: skip
            for r in rows:
                row = tab.row()
                for cell in r:
                    row.cell(self.t(str(cell)))
            # the cells are drawn when the table closes: shaped if any of them needs it
            self.shaping(self.unicode and any(needs_shaping(str(c)) for r in rows for c in r))
        self.ln(2)


def _headings(doc: _Doc):
    from fpdf.fonts import FontFace

    return FontFace(emphasis="BOLD", color=(255, 255, 255), fill_color=ACCENT, family=doc.family)


@dataclass
class _Context:
    scenario: Scenario
    rec: Any
    rec_note: str | None
    best: Deployment | None
    alternatives: list[tuple[str, str]]
    missing_charts: list[tuple[str, str]] = field(default_factory=list)
    images: int = 0
    #: The compared scenarios (their sources are listed too); empty for a single scenario.
    compared: list[Scenario] = field(default_factory=list)
    #: How the app's deployment in focus was chosen when it is not the recommendation.
    focus_note: str = ""
    #: The report describes that deployment (False: it cannot run; the recommendation follows).
    focused: bool = False
    #: The search's Deployment the report describes (the charts are drawn for it); when nothing
    #: meets the SLA and nothing is in focus, the closest near miss, which the summary names.
    described: Any = None

    @property
    def closest_miss(self) -> Any:
        """The near miss the charts draw for want of a recommendation (None if there is one)."""
        return self.described if self.best is None else None


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
    items = _compare_items(compare or [])
    ranking: list[Any] = []
    if items:
        ranking = _compare_answers(items)
        top = ranking[0]
        scenario, recommendation = top.scenario, top.rec
    rec, rec_note = recommendation, None
    if rec is None:
        rec, rec_note = _try_recommend(scenario)
    best_obj = _pick(rec, "best") if rec is not None else None
    if items and ranking[0].row.source == "in focus":
        best_obj = ranking[0].row.deployment
    if focus is not None and not items:
        best_obj = focus
    best = deployment(best_obj, scenario.sla.percentile) if best_obj is not None else None
    alts = _alternatives(rec, best) if focus is None or items else []  # "why they lost" to it
    near = _pick(rec, "near_misses", default=None) or []
    closest = near[0].deployment if best_obj is None and near else None
    ctx = _Context(scenario, rec, rec_note, best, alts, focus_note=clean(focus_note, 800),
                   focused=focus is not None and not items, described=best_obj or closest)  # fmt: skip

    subtitle = clean(client_t or scenario.name, 60)
    doc = _Doc(subtitle)
    doc.add_page()
    _cover(doc, ctx, client_t, consultant_t, date or _dt.date.today(), items)
    if items:
        ctx.compared = [it.scenario for it in items]
        _compare_section(doc, ctx, ranking, charts)
        _summary(doc, ctx, f"The top-ranked scenario in detail: {ranking[0].label}")
    else:
        _summary(doc, ctx)
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
    _scenario_section(doc, ctx)
    if charts:
        _charts_section(doc, ctx)
    else:
        ctx.missing_charts.append(("all charts", "charts were switched off for this export"))
    _assumptions(doc, ctx, sensitivities)
    # reference material a client does not read front to back (issue 38: 2.5 pages of row ids
    # and the article's Llama-2-70B table sat in a hospital's report body)
    _calibration_appendix(doc, ctx)
    _article(doc, ctx)
    _sources(doc, ctx)
    if best_obj is not None:
        deploy_appendix(doc, scenario, best_obj)
    if ctx.missing_charts:
        _missing_charts(doc, ctx)
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


def _alternatives(rec: Any, best: Deployment | None) -> list[tuple[str, str]]:
    """The top two alternatives and why each lost: (description, reason).

    One that is cheaper (or smaller) but misses the SLA (the first near miss, else a Pareto point
    that fails it), and one that meets the SLA at a higher cost (the cost frontier).
    """
    if rec is None or best is None:
        return []
    metric = _pick(rec, "latency_metric", default="latency")
    cheaper: list[tuple[str, str]] = []
    for nm in _pick(rec, "near_misses", default=[]) or []:
        d = _pick(nm, "deployment")
        fails = "; ".join(str(f) for f in (_pick(nm, "fails", default=[]) or []))
        cost = _num(_pick(d, "usd_per_million_tokens"))
        extra = f" (it would cost {cost:,.3f} USD per million tokens)" if cost is not None else ""
        cheaper.append(
            (str(_pick(d, "description", default="?")), f"misses the SLA: {fails}{extra}")
        )
    for p in _pick(rec, "pareto", default=[]) or []:
        if not p.meets_sla and p.description != best.description:
            cheaper.append(
                (
                    p.description,
                    f"{p.gpus} GPUs but misses the SLA: {metric} {p.latency_ms:,.1f} ms",
                )
            )
    dearer: list[tuple[str, str]] = []
    for p in _pick(rec, "pareto_cost", default=[]) or []:
        if p.meets_sla and p.description != best.description:
            b = best.usd_per_mtok or 0.0
            diff = f" ({(p.usd_per_million_tokens / b - 1) * 100:+.0f}%)" if b > 0 else ""
            dearer.append((p.description, f"meets the SLA ({metric} {p.latency_ms:,.1f} ms) but costs "
                           f"{p.usd_per_million_tokens:,.3f} USD per million tokens{diff} on {p.gpus} GPUs"))  # fmt: skip
    out = cheaper[:1] + dearer[:1]
    for extra in cheaper[1:] + dearer[1:]:
        if len(out) >= 2:
            break
        out.append(extra)
    return out[:2]


# --------------------------------------------------------------------------- sections


def _cover(doc: _Doc, ctx: _Context, client: str, consultant: str, date: _dt.date,
           items: Sequence[_CompareItem] = ()) -> None:  # fmt: skip
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


def _summary(doc: _Doc, ctx: _Context, title: str = "Executive summary") -> None:
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
            or str(_pick(ctx.rec, "no_best_reason", default=""))
            or ("no deployment meets the SLA within the hardware")
        )
        doc.para("No recommendation: " + clean(reason, 600), 10.5, bold=True, colour=(170, 40, 0))
        _explanation(doc, ctx)
        return
    head = ("Deployment in focus" if ctx.focused else "Recommended deployment") + (
        ", at risk" if d.at_risk else "")  # fmt: skip
    doc.para(f"{head}: " + clean(d.description, 400), 10.5, bold=True)
    if ctx.focused:
        rec_best = _pick(ctx.rec, "best") if ctx.rec is not None else None
        doc.para(f"Chosen in the app ({ctx.focus_note}), not the search's recommendation ("
                 + clean(_pick(rec_best, "description", default="none"), 400) + ").", 9.5,
                 colour=(170, 40, 0))  # fmt: skip
    warning = _pick(ctx.rec, "warning")
    if warning:  # in the headline, not a footnote: the winner is predicted from priors
        doc.para(clean(str(warning), 600), 10.5, bold=True, colour=(170, 40, 0))
    risk = None if ctx.focused else _pick(ctx.rec, "at_risk")
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
        f"Throughput {_fmt(d.throughput_tok_s, ',.0f', 'output tokens/s')} on "
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
    facts.append(f"Cost {_fmt(d.usd_per_mtok, ',.3f')} USD per million output tokens "
                 f"({s.cost.mode} pricing)")  # fmt: skip
    doc.bullets(facts)
    _explanation(doc, ctx)


def _explanation(doc: _Doc, ctx: _Context) -> None:
    """The alternatives that lost and the search's reasons for its pick."""
    expl = _pick(ctx.rec, "explanation", default="")
    if ctx.alternatives:
        doc.h2("The top alternatives and why they lost")
        doc.bullets([f"{clean(a, 300)}: {clean(why, 400)}" for a, why in ctx.alternatives], 9)
    if expl:
        unmet = ctx.rec is not None and _pick(ctx.rec, "best") is None
        doc.h2("Why no deployment meets the SLA" if unmet
               else "Why the search recommends its pick" if ctx.focused
               else "Why this deployment")  # fmt: skip
        lines = list(expl) if isinstance(expl, list | tuple) else [str(expl)]
        doc.bullets([clean(x, 600) for x in lines[:8]], 9)


def _scenario_rows(s: Scenario) -> list[tuple[str, str, str]]:
    w, h, o, c = s.workload, s.hardware, s.options, s.cost
    gpus = accelerators()
    links = interconnects()
    model = s.model_spec()
    rows = [
        ("Model", f"{clean(model.name, 120)} ({s.model})", ""),
        (
            "Accelerators considered",
            ", ".join(gpus[g].name if g in gpus else g for g in h.gpus),
            "",
        ),
        ("GPUs per node × nodes", f"{h.gpus_per_node} × {h.nodes} = {h.total_gpus}", "GPUs"),
        (
            "Intra-node link",
            links[h.intra_link].name if h.intra_link in links else "each GPU's own",
            "",
        ),
        (
            "Inter-node link",
            links[h.inter_link].name if h.inter_link in links else h.inter_link,
            "",
        ),
        ("Input length (ISL)", f"{w.isl_tokens:,} (CV {w.isl_cv:g})", "tokens"),
        ("Output length (OSL)", f"{w.osl_tokens:,} (CV {w.osl_cv:g})", "tokens"),
    ]
    if w.arrival_rate_per_s is not None:
        rows.append(("Load: Poisson arrival rate", f"{w.arrival_rate_per_s:g}", "requests/s"))
    else:
        rows.append(("Load: concurrent users, whole deployment (closed loop)",
                     f"{w.concurrent_users:,}", "users"))  # fmt: skip
        rows.append(("Think time per user (X = N / (Z + R))", f"{w.think_time_s:g}", "s"))
    rows += [
        ("SLA percentile", f"P{s.sla.percentile}", ""),
        ("SLA time to first token", _opt(s.sla.ttft_ms), "ms"),
        ("SLA time per output token", _opt(s.sla.tpot_ms), "ms"),
        ("SLA end-to-end latency", _opt(s.sla.e2e_ms), "ms"),
        ("Weight dtypes allowed", _weights_words(s), ""),
        ("KV-cache dtypes allowed", ", ".join(o.kv_dtypes), ""),
        ("Serving engine", o.engine, ""),
        ("Max TP / max PP", f"{o.max_tp} / {o.max_pp}", ""),
        ("Speculative decoding", "considered" if o.speculative else "off", ""),
    ]
    if o.speculative:
        rows += [
            ("Draft model", _draft_words(s), ""),
            ("Draft tokens per step (k)", str(o.spec_tokens), "tokens"),
            ("Acceptance rate", f"{o.spec_acceptance:g}", "fraction"),
        ]
    rows.append(("Disaggregated prefill/decode", "considered" if o.disaggregated else "off", ""))
    if o.redundancy == "n+1":
        rows.append(("Redundancy", "N+1 (a spare replica)", ""))
    rows.append(("Pricing", "purchase (data stays on-prem)" if c.on_prem else c.mode, ""))
    if c.mode == "purchase":
        rows += [
            ("GPU price / server without GPUs",
             f"{_opt(c.gpu_price_usd, 'catalog')} / {_opt(c.server_usd, 'catalog')}", "USD"),
        ]  # fmt: skip
        if c.max_capex_usd is not None:
            rows.append(("Budget cap on the purchase", f"{c.max_capex_usd:,.0f}", "USD"))
        rows += [
            ("Amortisation", f"{c.amortisation_years:g}", "years"),
            ("Utilisation", f"{c.utilisation:g}", "fraction of hours"),
            ("PUE", f"{c.pue:g}", ""),
            ("Electricity", f"{c.usd_per_kwh:g}", "USD/kWh"),
            (
                "Hosting (colocation)",
                _opt(c.hosting_usd_per_kw_month, "catalog default"),
                "USD/kW-month",
            ),
        ]
    else:
        rows.append(("GPU-hour price", _opt(c.gpu_hour_usd, "catalog default"), "USD/GPU-hour"))
    rows.append(
        (
            "Ranked by",
            "price per hour (whole servers when bought), then fewest GPUs in use, then "
            "most headroom"
            if s.rank_by == "cost"
            else "fewest GPUs, then price per hour",
            "",
        ),
    )
    return rows


def _opt(v: float | None, none: str = "no target") -> str:
    return none if v is None else f"{v:g}"


def _scenario_section(doc: _Doc, ctx: _Context) -> None:
    if ctx.compared:
        doc.h1(f"Scenario in detail: {clean(ctx.scenario.name or '(unnamed)', 80)}")
    else:
        doc.h1("The scenario")
    rows = [("Input", "Value", "Unit"), *_scenario_rows(ctx.scenario)]
    doc.table(rows, (62, 80, 36))


def _memory_figure(ctx: _Context):
    from advisor.charts import memory_charts as mc
    from advisor.physics.memory import memory_budget

    s = ctx.scenario
    d = ctx.best or (deployment(ctx.described, s.sla.percentile) if ctx.described else None)
    model = s.model_spec()
    gid = d.gpu if d else s.hardware.gpus[0]
    gpu = accelerators()[gid]
    tp, pp = (d.tp, d.pp) if d else (1, 1)
    wd = d.weights if d else s.options.weight_dtypes[0]
    kd = d.kv if d else s.options.kv_dtypes[0]
    context = s.workload.isl_tokens + s.workload.osl_tokens
    b = memory_budget(
        model, gpu, tp=tp, pp=pp, weights_dtype=wd, kv_dtype=kd, context_tokens=context
    )
    paged = mc.paged_kv_bytes_per_sequence_per_gpu(model, kd, context, 16, tp, pp)
    # the decode batch every view shows (search/results.decode_batch), as the Memory page
    n = decode_batch_seqs(d.running) if d and d.running is not None else b.max_concurrent_sequences
    stack = mc.memory_stack(gpu.name, b, paged, max(1, n))
    return mc.memory_stack_figure([stack], mc.memory_stack_title(model.name, gpu.name, tp, pp))


def _figure_builders(ctx: _Context) -> list[tuple[str, Callable[[], Any]]]:
    out: list[tuple[str, Callable[[], Any]]] = [
        ("Memory and KV budget per GPU", lambda: _memory_figure(ctx))
    ]
    rec = ctx.rec
    out.append(("Latency breakdown", lambda: _chart_from("latency", rec, ctx)))
    out.append(("Pareto frontier: cost against latency", lambda: _chart_from("pareto", rec, ctx)))
    return out


def _chart_from(kind: str, rec: Any, ctx: _Context):
    """The app's figure for ``kind`` built from the recommendation (None if unavailable)."""
    from advisor.report import figures

    if kind == "latency":  # the deployment the summary describes (the focused one, if any)
        return figures.latency_figure(rec, ctx.scenario, ctx.described)
    return figures.figure(kind, rec, ctx.scenario)


def _embed(doc: _Doc, ctx: _Context, title: str, build: Callable[[], Any]) -> bool:
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


def _charts_section(doc: _Doc, ctx: _Context) -> None:
    if images.charts_status()[0] and doc.get_y() + 16 + doc.epw * CHART_H / CHART_W > (
        doc.h - doc.b_margin
    ):
        doc.add_page()  # the heading goes with its first chart, never alone at a page's foot
    doc.h1(f"Charts: {clean(ctx.scenario.name, 80)}" if ctx.compared else "Charts")
    if ctx.closest_miss is not None:
        doc.para("No deployment meets the SLA: the charts show the closest miss, "
                 + clean(ctx.closest_miss.description, 400) + ".", 9.5, colour=GREY)  # fmt: skip
    embedded = [_embed(doc, ctx, title, build) for title, build in _figure_builders(ctx)]
    if not any(embedded):
        doc.para("No chart could be embedded; see 'Missing charts' at the end.", 9.5, colour=GREY)


#: Scenarios a comparison holds at most (the Compare page picks two to four).
COMPARE_LIMIT = 8


@dataclass
class _CompareItem:
    label: str
    scenario: Scenario
    focus: Any = None  # a search Deployment put in focus; None = the recommended one


@dataclass
class _Answer:
    """One compared scenario: its search result and its row (``search.comparison.Compared``)."""

    label: str
    scenario: Scenario
    rec: Any
    row: Any


def _compare_items(compare: Sequence[Any]) -> list[_CompareItem]:
    """(label, scenario[, deployment]) items with cleaned, unique labels (charts key on them)."""
    out: list[_CompareItem] = []
    seen: set[str] = set()
    for item in list(compare)[:COMPARE_LIMIT]:
        label, sc, *rest = item
        base = clean(label, 60) or "(unnamed)"
        name, n = base, 2
        while name in seen:
            name, n = f"{base} ({n})", n + 1
        seen.add(name)
        out.append(_CompareItem(name, sc, rest[0] if rest else None))
    return out


def _compare_answers(items: Sequence[_CompareItem]) -> list[_Answer]:
    """Each item's search result and comparison row, in the ranking's order."""
    from advisor.search import comparison as cmp

    answers = []
    for it in items:
        try:
            rec, _ = _try_recommend(it.scenario)
        except Exception:  # noqa: BLE001 - one bad scenario does not sink the report
            rec = None
        answers.append(_Answer(it.label, it.scenario, rec,
                               cmp.compared(it.label, it.scenario, rec, it.focus)))  # fmt: skip
    order = {id(r): i for i, r in enumerate(cmp.ranked([a.row for a in answers]))}
    return sorted(answers, key=lambda a: order[id(a.row)])


def _compare_section(doc: _Doc, ctx: _Context, ranking: Sequence[_Answer],
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
                      _fmt(d.usd_per_million_tokens, ",.3f"), f"{monthly_usd(a.scenario, d):,.0f}",
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
    _embed(doc, ctx, "Comparison: latency breakdown by scenario",
           lambda: cc.latency_breakdown_figure(results))  # fmt: skip
    _embed(doc, ctx, "Comparison: throughput and TPOT against batch size",
           lambda: cc.throughput_vs_batch_figure(sweeps))  # fmt: skip


def _perturbations(s: Scenario) -> list[tuple[str, Scenario]]:
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


def _sensitivity_rows(ctx: _Context) -> tuple[list[tuple[str, str, str]], str | None]:
    if ctx.best is None:
        return [], "no recommendation to perturb"
    try:
        import advisor.search.recommend  # noqa: F401
    except ImportError:
        return [], "the recommendation engine is not available"
    rows, start = [], time.perf_counter()
    for label, sc in _perturbations(ctx.scenario):
        if time.perf_counter() - start > SENSITIVITY_BUDGET_S:
            rows.append((label, "skipped (time budget)", ""))
            continue
        try:
            r = _recommend(sc)
        except Exception as exc:  # noqa: BLE001
            rows.append((label, f"failed: {type(exc).__name__}", ""))
            continue
        b = _pick(r, "best")
        if b is None:
            rows.append((label, "no deployment meets the SLA", "yes: infeasible"))
            continue
        d = deployment(b, sc.sla.percentile)
        flips = "no" if d.key() == ctx.best.key() else "yes"
        rows.append((label, f"{d.short()}, {_fmt(d.usd_per_mtok, '.3f')} USD/Mtok", flips))
    return rows, None


def _assumptions(doc: _Doc, ctx: _Context, sensitivities: bool) -> None:
    doc.h1("Assumptions and confidence")
    doc.h2("How far to trust the predictions: error on measurements the fit never saw")
    try:
        v = _validation()
        oos = v.get("out_of_sample")
        if oos:
            rows = [("Held out", "Prediction", "rows", "median |error| %", "p90 |error| %")]
            for r in oos["rows"]:
                if r["held out"] == "one engine at a time":
                    continue  # the two schemes the figures are quoted from
                rows.append((r["held out"].replace(" at a time", ""), r["family"], str(r["rows"]),
                             _fmt(r.get("median_ape_pct")), _fmt(r.get("p90_ape_pct"))))  # fmt: skip
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


def _collective_text(ctx: _Context) -> str:
    """Each kernel-bound fabric's in-engine collective efficiency, and the one the described
    deployment's TP link uses (``profiles.collective_efficiency``, as its estimate)."""
    from advisor.perf.model.profiles import FABRIC_NAMES, collective_efficiency
    from advisor.perf.model.replica import ReplicaConfig, tp_link_for
    from advisor.physics.collectives import kernel_bound

    links = interconnects()
    fabrics = {x.kind: x for x in links.values() if kernel_bound(x)}
    parts = []
    for kind, link in sorted(fabrics.items()):
        ce = collective_efficiency(link)
        flag = "" if ce.calibrated else "uncalibrated: "
        parts.append(f"over {FABRIC_NAMES[kind]} at {ce.value:.2f} ({flag}{ce.note})")
    text = ("all-reduces / all-to-alls at a fraction of their nccl-tests speed: "
            + "; ".join(parts) + "; over PCIe at that speed (the link sets it).")  # fmt: skip
    spec = _pick(ctx.described, "spec") if ctx.described is not None else None
    gpus, hw = accelerators(), ctx.scenario.hardware
    if spec is None or spec.tp == 1 or spec.gpu not in gpus:
        return text
    cfg = ReplicaConfig(model=ctx.scenario.model_spec(), gpu=gpus[spec.gpu], tp=spec.tp,
                        pp=spec.pp, weights=spec.weights, kv=spec.kv,
                        intra_link=links.get(hw.intra_link or ""),
                        inter_link=links.get(hw.inter_link or ""),
                        gpus_per_node=hw.gpus_per_node)  # fmt: skip
    link = tp_link_for(cfg, links)
    ce = collective_efficiency(link)
    return text + (f" The deployment described (TP {spec.tp} over {clean(link.name, 80)}) uses "
                   f"{ce.value:.2f}{'' if ce.calibrated else ' (uncalibrated)'}.")  # fmt: skip


def _calibration_appendix(doc: _Doc, ctx: _Context) -> None:
    doc.h1("Appendix A: calibration")
    cal = _calibration()
    doc.h2("Calibration constants (data/calibration.yaml)")
    if cal:
        doc.para(
            f"Fitted by '{clean(cal.get('generated_by', '?'), 80)}' on "
            f"{clean(cal.get('generated_on', '?'), 40)} from {clean(cal.get('source', '?'), 120)}. "
            "η = achieved fraction of datasheet memory bandwidth / dense tensor peak.",
            8.5,
        )
        from advisor.perf.model.profiles import ENGINES, engine_profile, moe_efficiency

        # fp8/fp4 routed experts: the value the model uses (profiles.moe_efficiency), labelled
        # where the family has none of its own and the 16-bit experts' one serves
        rows = [("GPU family", "η memory", "η compute 16-bit", "η compute fp8",
                 "fp8/fp4 MoE kernels ×")]  # fmt: skip
        for fam, v in (cal.get("families") or {}).items():
            own = "" if "moe_efficiency_lowp" in v else " (16-bit)"
            rows.append((fam, _fmt(v.get("eta_mem"), ".3f"), _fmt(v.get("eta_compute_16"), ".3f"),
                         _fmt(v.get("eta_compute_fp8"), ".3f"),
                         _fmt(moe_efficiency(True, fam), ".3f") + own))  # fmt: skip
        doc.table(rows, (34, 34, 38, 36, 36), align="RIGHT")

        rows = [("Engine", "step overhead μs", "per-layer μs", "per-sequence μs",
                 "per-request ms", "prefill dispatch μs/kernel", "× compute",
                 "× memory")]  # fmt: skip
        for eng in ENGINES:  # the profiles the model uses (fitted values, else defaults)
            pr = engine_profile(eng)
            mark = " (this scenario)" if eng == ctx.scenario.options.engine else ""
            mark += "" if pr.fitted else " (defaults)"
            rows.append((eng + mark, _fmt(pr.step_overhead_s * 1e6, ".0f"),
                         _fmt(pr.layer_overhead_s * 1e6, ".1f"),
                         _fmt(pr.seq_overhead_s * 1e6, ".2f"),
                         _fmt(pr.request_overhead_s * 1e3, ".1f"),
                         _fmt(pr.kernel_dispatch_s * 1e6, ".1f"),
                         _fmt(pr.efficiency, ".3f"), _fmt(pr.mem_efficiency, ".3f")))  # fmt: skip
        doc.table(rows, (36, 22, 20, 22, 22, 22, 17, 17), align="RIGHT")
        g = cal.get("global") or {}
        doc.para(
            "Every engine: attention kernels at "
            f"{_fmt(g.get('attention_efficiency'), '.2f')} of the GEMM efficiency, routed-expert "
            f"(MoE) kernels at {_fmt(g.get('moe_efficiency'), '.2f')} with 16-bit experts (with "
            "fp8/fp4 experts, the family's value in the table above), and " + _collective_text(ctx),
            8.5,
        )
    else:
        doc.para("No calibration file: the model uses its prior efficiencies.", 9)

    doc.h2("In sample: the fitted rows themselves (second to the out-of-sample table)")
    try:
        v = _validation()
        rows = [("Prediction", "rows", "median |error| %", "p90 |error| %", "bias %")]
        for fam, r in v["families"].items():
            rows.append((fam, str(r.get("rows", 0)), _fmt(r.get("median_ape_pct")),
                         _fmt(r.get("p90_ape_pct")), _fmt(r.get("bias_pct"), "+.1f")))  # fmt: skip
        doc.table(rows, (58, 22, 34, 32, 32), align="RIGHT")
        doc.para(
            f"{v['rows_used']} of {v['rows_total']} rows of data/measurements*.csv predicted "
            f"({v['rows_skipped']} cannot be represented); the constants were fitted on these "
            "same rows. Bias = median of predicted / measured − 1.",
            8.5,
        )
    except Exception as exc:  # noqa: BLE001
        doc.para(f"Validation unavailable: {type(exc).__name__}", 9)


def _claim_text(c: Any) -> tuple[str, str, str]:
    claim = clean(_pick(c, "claim", "title", "rule", "text", default=str(c)), 300)
    computed = clean(_pick(c, "recomputed", "computed", default=""), 300)
    verdict = _pick(c, "verdict", "status", "agrees", default="")
    if isinstance(verdict, bool):
        verdict = "agrees" if verdict else "disagrees"
    return claim, computed, clean(verdict, 40)


def _article(doc: _Doc, ctx: _Context) -> None:
    doc.h1("Appendix B: where the article's rules of thumb disagree")
    from advisor.search.decision_matrix import ARTICLE_CLAIM, ARTICLE_NAME

    doc.para(clean(f"The article is {ARTICLE_NAME}; {ARTICLE_CLAIM}.", 600), 8.5, colour=GREY)
    dm = _pick(ctx.rec, "decision_matrix") if ctx.rec is not None else None
    if dm is not None:
        doc.h2(f"Decision matrix ({clean(_pick(dm, 'row', default='?'), 40)} parameters)")
        agrees = _pick(dm, "agrees")
        verdict = {True: "agrees with", False: "differs from", None: "cannot be compared with"}[
            agrees
        ]
        shape = clean(_pick(dm, "article_shape", default=""), 120)
        doc.para(f"The article's rule for this model size, '{clean(_pick(dm, 'article_answer', default='?'), 200)}'"
                 + (f" (read as {shape} per replica)" if shape else "")
                 + f", {verdict} the computed recommendation.", 9)  # fmt: skip
        note = clean(_pick(dm, "note", default="") or "", 400)
        if note:
            doc.para(note, 8.5, colour=GREY)
        diffs = [clean(x, 400) for x in (_pick(dm, "differences", default=[]) or [])]
        if diffs:
            doc.bullets(diffs, 8.5)
        doc.h2("The article's other figures, recomputed")
    claims, why = _article_claims(ctx.scenario, ctx.rec)
    if why:
        doc.para(why + ".", 9, colour=GREY)
        return
    rows = [_claim_text(c) for c in claims]
    disagree = [r for r in rows if r[2] and r[2].lower() not in ("agrees", "ok", "holds")]
    if not disagree:
        doc.para(f"All {len(rows)} checked rules of thumb agree with the computed answer.", 9)
        return
    doc.table([("Article", "Recomputed here", "Verdict"), *disagree], (78, 76, 24), size=8)


def _sources(doc: _Doc, ctx: _Context) -> None:
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
        rows_used = [r for r in _validation()["rows"] if r["gpu"] in gpu_ids]
    except Exception:  # noqa: BLE001
        rows_used = []
    meta = _measurement_sources()
    by_source: dict[str, int] = {}
    for r in rows_used:
        src = meta.get(r["id"], {}).get("source", "?")
        by_source[src] = by_source.get(src, 0) + 1
    # one line per publication; the row ids are in data/measurements*.csv (`advisor validate`)
    items = [f"{n} row{'s' if n != 1 else ''}: {clean(src, 160)}"
             for src, n in sorted(by_source.items(), key=lambda kv: -kv[1])]  # fmt: skip
    if items:
        doc.para(f"{len(rows_used):,} published measurements from {len(items)} sources; each "
                 "row, with its id and exact source, is in the data/measurements*.csv files "
                 "shipped with the tool (`python -m advisor validate` lists the errors per row).",
                 8.5)  # fmt: skip
    doc.bullets(items or ["(no measurement rows for these accelerators)"], 7.5)


def _missing_charts(doc: _Doc, ctx: _Context) -> None:
    doc.h1("Missing charts")
    doc.bullets([f"{t}: {why}" for t, why in ctx.missing_charts], 9)
    if not images.charts_status()[0]:
        doc.para(f"To enable charts: {images.ENABLE_HINT}.", 9)


def _draft_words(s) -> str:
    """The draft the search ran, in words ("DeepSeek-R1's own MTP head"), or why none."""
    from advisor.catalog.drafts import draft_name
    from advisor.search.space import scenario_draft

    draft, why = scenario_draft(s)
    return draft_name(s.model_spec(), draft) if draft else f"none ({why})"


def _weights_words(s) -> str:
    """The weight dtypes the search tried, the model's released precision marked."""
    from advisor.search.space import search_weights

    released = s.model_spec().released_weights
    return ", ".join(w + (" (released)" if w == released else "") for w in search_weights(s))

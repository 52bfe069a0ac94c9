"""Recommendation: the best deployment for the sidebar scenario, why, the near misses, the Pareto
frontiers and the article's decision-matrix answer beside it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES
from advisor.charts.recommend_charts import pareto_figure
from advisor.physics.queueing.results import unstable_text
from advisor.scenario import RANKING_TEXT
from advisor.search.capacity import capacity_rows, capacity_text
from advisor.search.decision_matrix import ARTICLE_NAME
from advisor.search.recommend import unmet_head
from advisor.search.results import decode_batch_seqs
from ui.budget_view import budget_section
from ui.cache import keys, profile_fallback, recommend_for, scenario_key
from ui.client_profile import pdf_kw
from ui.focus import BY_HAND, InFocus, choose, show_focus
from ui.format import (
    interval_text,
    latency,
    md_escape,
    percentile_points_ms,
    plural,
    sig3,
    sla_answer,
    usd,
)
from ui.intro import intro
from ui.pdf import pdf_download
from ui.quality_view import quality_section
from ui.scenarios import flash
from ui.state import current, guarded

SS = st.session_state
PICK, CHART, HAND = "focus.pick", "focus.pareto", "focus.hand"


def _ms(x_ms: float) -> str:
    return latency(x_ms)


def _target_ms(scenario, metric: str) -> float | None:
    for word, value in (("TTFT", scenario.sla.ttft_ms), ("TPOT", scenario.sla.tpot_ms),
                        ("E2E", scenario.sla.e2e_ms)):  # fmt: skip
        if word in metric:
            return value
    return None


def _after_headline(reason: str, scenario) -> str:
    """The search's reason without the words the headline already says, as a sentence:
    "no deployment meets <SLA> at the offered load; closest: X (...)" -> "Closest: X (...). "."""
    said = unmet_head(scenario.sla.describe())
    rest = reason[len(said) :].lstrip("; ") if reason.startswith(said) else reason
    rest = rest.strip().rstrip(".")
    return f"{rest[:1].upper()}{rest[1:]}. " if rest else ""


def best_section(rec, scenario) -> None:
    pct = scenario.sla.percentile
    b = rec.best
    cap = scenario.cost.max_capex_usd
    if b is None and cap is not None and "budget" in (rec.no_best_reason or ""):
        st.error(
            f"**No deployment that meets the SLA ({md_escape(rec.sla)}) fits the "
            f"{md_escape(f'${cap:,.0f}')} budget.** "
            f"{md_escape(_after_headline(rec.no_best_reason.split('; ', 1)[-1], scenario))}"
            "The deployments over the budget are listed below with their purchase price: raise "
            "the budget cap in the sidebar (Cost), or relax the SLA."
        )
        return
    if b is None:
        st.error(
            f"**No deployment meets the SLA ({md_escape(rec.sla)}) at the offered load.** "
            f"{md_escape(_after_headline(rec.no_best_reason or '', scenario))}"
            "The closest misses are listed below: relax the target, add GPUs or allow other "
            "dtypes in the sidebar."
        )
        return
    if rec.warning:  # an uncalibrated winner is said in the headline, not in a footnote
        st.warning(md_escape(rec.warning))
    if rec.at_risk:  # none meets with confidence: the cheapest whose predictions meet, flagged
        st.warning(f"**Recommended, at risk:** {md_escape(b.description)}\n\n"
                   f"{md_escape(rec.at_risk)}")  # fmt: skip
    else:
        st.success(f"**Recommended:** {b.description}")
    c = st.columns(5)
    c[0].metric("GPUs", f"{b.gpus:,}", help=plural(b.nodes, "node"))
    c[1].metric(f"P{pct} TTFT", _ms(b.ttft_ms.at(pct)))
    c[2].metric(f"P{pct} TPOT", _ms(b.tpot_ms.at(pct)))
    c[3].metric("Tokens/s per GPU", sig3(b.throughput_per_gpu_tok_s),
                help="Output tokens/s per GPU at the offered load")  # fmt: skip
    c[4].metric("USD per M tokens", usd(b.usd_per_million_tokens),
                help=f"Per million output tokens at the offered load; {usd(b.usd_per_hour)} per "
                "hour for the deployment")  # fmt: skip
    if ranges := interval_text(b.intervals, percentile_points_ms(b, pct)):
        st.caption(ranges)
    st.caption(
        f"SLA {rec.sla}; P{pct} end to end {_ms(b.e2e_ms.at(pct))}; "
        f"decode batch {decode_batch_seqs(b.running_batch)} per replica (its step: a request "
        "and the others decoding beside it, on average); the deployment "
        f"saturates at {sig3(b.max_rate_req_s)} requests/s ({b.headroom:.1f}× the offered load)"
        f"{_spare(b, scenario)}."
    )


def _spare(b, scenario) -> str:
    """ "; 7 of the server's 8 GPUs spare for other work" for bought servers it leaves GPUs of
    (the tie-break prefers fewer GPUs on the same servers: search/ranking.py)."""
    bought = b.nodes * scenario.hardware.gpus_per_node
    if scenario.cost.mode != "purchase" or bought <= b.gpus:
        return ""
    whose = "the server's" if b.nodes == 1 else f"the {b.nodes} servers'"
    return f"; {bought - b.gpus:,} of {whose} {bought:,} GPUs spare for other work"


def why_section(rec) -> None:
    if not rec.explanation:
        return
    over = rec.near_misses and rec.near_misses[0].deployment.over_budget
    head = "Why" if rec.best is not None else (
        "Why none is recommended" if over else "Why no deployment meets the SLA")  # fmt: skip
    st.markdown(f"**{head}**\n\n" + "\n".join(f"- {md_escape(x)}" for x in rec.explanation))


def matrix_section(rec) -> None:
    dm = rec.decision_matrix
    st.subheader("The reference article's decision matrix")
    st.markdown(
        f"Model size **{dm.model_params_b:,.1f} B** parameters → row **{dm.row}**: "
        f"“{dm.article_answer}”"
        + (f" (read as {dm.article_shape} per replica)." if dm.article_shape else ".")
    )
    if dm.agrees is None:
        st.info("Agreement: not applicable (nothing to compare).")
    elif dm.agrees:
        st.success("Agreement: the search agrees with the article.")
    else:
        st.warning(f"Agreement: the search disagrees with {ARTICLE_NAME}.")
    # plain text: two prices in one line ("$24.09/h ... its $1.015/M") read as LaTeX math
    for d in dm.differences:
        st.markdown(f"- {md_escape(d)}")
    if dm.note:
        st.caption(md_escape(dm.note))
    if dm.article_shaped is not None:
        a = dm.article_shaped
        verdict = (
            {"yes": "meets the SLA", "no": "misses the SLA"}.get(sla_answer(a), sla_answer(a))
            + f", {usd(a.usd_per_million_tokens)} per million tokens"
            if a.stable
            else f"misses the SLA: {unstable_text(a.unstable_reason)}"
        )
        st.caption(
            md_escape(
                f"The article's shape as evaluated: {a.description}: {plural(a.gpus, 'GPU')}, "
                f"{verdict}."
            )
        )


def near_misses_section(rec, pct: int) -> None:
    if not rec.near_misses:
        return
    st.subheader("Near misses")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "deployment": m.deployment.description,
                    "misses by": "; ".join(m.fails),
                    "GPUs": m.deployment.gpus,
                    f"P{pct} TTFT": _ms(m.deployment.ttft_ms.at(pct)),
                    f"P{pct} TPOT": _ms(m.deployment.tpot_ms.at(pct)),
                    "USD per M tokens": usd(m.deployment.usd_per_million_tokens),
                }
                for m in rec.near_misses
            ]
        ),
        hide_index=True,
        width="stretch",
    )


def details_section(rec) -> None:
    if rec.capacity is not None:
        cap = rec.capacity
        st.subheader("Capacity planning")
        st.caption(md_escape(capacity_text(cap)))
        st.dataframe(pd.DataFrame(capacity_rows(cap)), hide_index=True)
    with st.expander("Search details and assumptions"):
        st.markdown(
            f"{rec.candidates_evaluated:,} deployments evaluated, {rec.feasible:,} meet the SLA, "
            + (
                f"{rec.at_risk_count:,} at risk (their predictions meet it), "
                if rec.at_risk
                else ""
            )
            + f"in {rec.elapsed_ms:,.0f} ms."
        )
        if rec.rejected:
            st.markdown(
                "**Rejected before evaluation:**\n\n"
                + "\n".join(f"- {n:,} × {why}" for why, n in rec.rejected.items())
            )
        st.markdown("**Cost basis:**\n\n" + "\n".join(f"- {c}" for c in rec.cost_basis))
        st.markdown("**Assumptions:**\n\n" + "\n".join(f"- {a}" for a in rec.assumptions))


def page() -> None:
    scenario, view = current()
    st.caption(
        "The deployment of the sidebar's hardware that meets the latency target at the offered "
        f"load, ranked by {RANKING_TEXT[scenario.rank_by]} (GPUs, TP, PP, data-parallel "
        "replicas, dtypes, disaggregation and speculative decoding as the sidebar allows)."
    )
    sj, _ = keys(scenario, view)
    rec = recommend_for(sj)
    if rec is None:
        st.error("The recommendation search is not available in this version.")
        return
    f = show_focus(scenario)
    why = profile_fallback(rec.best)
    if why:
        st.info(f"Client profile not applied to the recommended deployment: {md_escape(why)}; "
                "its figures use the shipped calibration (the profile prices only the "
                "candidates inside its range).", icon=":material/tune:")  # fmt: skip
    guarded("Recommendation", best_section, rec, scenario)
    guarded("Quality", quality_section, scenario, f.deployment)
    left, right = st.columns([3, 2], gap="large")
    with left:
        guarded("Why", why_section, rec)
    with right:
        guarded("Decision matrix", matrix_section, rec)
    if rec.pareto or rec.pareto_cost:
        fig = pareto_figure(
            rec.pareto, rec.pareto_cost, latency_metric=rec.latency_metric,
            sla_ms=_target_ms(scenario, rec.latency_metric),
            best=rec.best.description if rec.best else None,
            focus=None if f.recommended else _point(rec, scenario, f),
        )  # fmt: skip
        st.plotly_chart(
            fig, width="stretch", key=CHART, selection_mode="points",
            on_select=lambda: _clicked(scenario_key(scenario)),
        )  # fmt: skip
        st.caption("Click a point to put that deployment in focus on every page.")
    guarded("Deployment in focus", focus_section, rec, scenario, f)
    guarded("Budget", budget_section, scenario, f.deployment,
            "recommended" if f.recommended else f"in-focus ({f.origin})")  # fmt: skip
    guarded("Near misses", near_misses_section, rec, scenario.sla.percentile)
    guarded("Details", details_section, rec)
    guarded("PDF summary", pdf_section, scenario, rec, f)


def _point(rec, scenario, f: InFocus):
    """The deployment in focus as a Pareto point (None when it does not run)."""
    from advisor.search.results import ParetoPoint

    d = f.deployment
    name = rec.latency_metric.split()[-1].lower()  # "P99 TPOT" -> tpot
    if d is None or not d.stable or name not in ("ttft", "tpot", "e2e"):
        return None
    return ParetoPoint(
        description=d.description, gpus=d.gpus, throughput_per_gpu_tok_s=d.throughput_per_gpu_tok_s,
        usd_per_million_tokens=d.usd_per_million_tokens, meets_sla=d.meets_sla, spec=d.spec,
        sla_verdict=d.sla_verdict,
        latency_ms=getattr(d, f"{name}_ms").at(scenario.sla.percentile),
        over_budget=d.over_budget,
    )  # fmt: skip


def alternatives(rec) -> dict[str, tuple[str, str]]:
    """Deployment text -> (label in the picker, origin on the banners), first label wins."""
    out: dict[str, tuple[str, str]] = {}

    def add(d, label: str, origin: str) -> None:
        if d is not None and d.spec is not None:
            out.setdefault(str(d.spec), (f"{label}: {d.spec.describe()}", origin))

    add(rec.best, "Recommended", "recommended")
    add(rec.lowest_latency, "Lowest latency", "the lowest-latency alternative")
    add(rec.decision_matrix.article_shaped, "The article's shape", "the article's shape")
    for i, m in enumerate(rec.near_misses, 1):
        add(m.deployment, f"Near miss {i} ({'; '.join(m.fails)})", "a near miss")
    for p in sorted(rec.pareto + rec.pareto_cost, key=lambda p: p.latency_ms):
        over = ", over the budget" if p.over_budget else ""
        add(p, f"Pareto point ({rec.latency_metric} {_ms(p.latency_ms)}, "
               f"{usd(p.usd_per_million_tokens)}/M tokens{over})", "a Pareto point")  # fmt: skip
    return out


def _picked(key: str, options: dict[str, tuple[str, str]], best: str | None) -> None:
    text = SS[PICK]
    choose(key, None if text == best else text, options.get(text, ("", BY_HAND))[1])


def _clicked(key: str) -> None:
    """A click on a Pareto point: its customdata[0] is the deployment's text form
    (``recommend_charts.point_id``)."""
    from advisor.search.deployment_spec import DeploymentSpecError, parse_spec

    points = (SS.get(CHART) or {}).get("selection", {}).get("points", [])
    for p in points:
        try:
            text = str(parse_spec(str((p.get("customdata") or [""])[0])))
        except DeploymentSpecError:  # the star or the frontier line: no deployment
            continue
        choose(key, text, "a Pareto point (clicked)")
        return


def focus_section(rec, scenario, f: InFocus) -> None:
    st.subheader("Deployment in focus")
    key = scenario_key(scenario)
    options = alternatives(rec)
    best = str(rec.best.spec) if rec.best is not None else None
    current_text = str(f.spec)
    if current_text not in options:
        options[current_text] = (f"{f.origin.capitalize()}: {f.spec.describe()}", f.origin)
    SS[PICK] = current_text
    st.selectbox(
        "Shown on Memory, Latency, Interconnect, Speculative and in the PDF", list(options),
        format_func=lambda k: options[k][0], key=PICK, on_change=_picked,
        args=(key, options, best),
    )  # fmt: skip
    d, pct = f.deployment, scenario.sla.percentile
    if not f.recommended and d is not None:
        c = st.columns(5)
        c[0].metric("GPUs", f"{d.gpus:,}")
        c[1].metric(f"P{pct} TTFT", _ms(d.ttft_ms.at(pct)))
        c[2].metric(f"P{pct} TPOT", _ms(d.tpot_ms.at(pct)))
        c[3].metric("USD per M tokens", usd(d.usd_per_million_tokens))
        c[4].metric("Meets the SLA", sla_answer(d))
    with st.expander("Set a deployment by hand"):
        hand_form(scenario, f)


def hand_form(scenario, f: InFocus) -> None:
    s = f.spec
    gpus = list(dict.fromkeys([*scenario.hardware.gpus, s.gpu]))
    seed = {"gpu": s.gpu, "tp": s.tp, "pp": s.pp, "dp": s.dp, "weights": s.weights, "kv": s.kv,
            "speculative": s.speculative, "disaggregated": s.disaggregated,
            "ptp": s.prefill_tp or 1, "pdp": s.prefill_dp or 1, "ep": s.ep > 1,
            "dpa": s.dpa > 1, "pep": s.prefill_ep > 1, "pdpa": s.prefill_dpa > 1}  # fmt: skip
    for name, value in seed.items():
        SS[f"{HAND}.{name}"] = value
    with st.form(HAND, border=False):
        c = st.columns(6)
        c[0].selectbox("Accelerator", gpus, key=f"{HAND}.gpu")
        c[1].number_input("TP", 1, 1024, step=1, key=f"{HAND}.tp")
        c[2].number_input("PP", 1, 128, step=1, key=f"{HAND}.pp")
        c[3].number_input("DP (replicas)", 1, 100_000, step=1, key=f"{HAND}.dp")
        c[4].selectbox("Weights", list(WEIGHT_DTYPES), key=f"{HAND}.weights")
        c[5].selectbox("KV cache", list(KV_DTYPES), key=f"{HAND}.kv")
        c = st.columns([2, 2, 1, 1])
        c[0].checkbox("Speculative decoding (the scenario's draft, k, acceptance)",
                      key=f"{HAND}.speculative")  # fmt: skip
        c[1].checkbox("Disaggregated: TP/DP above are the decode pool", key=f"{HAND}.disaggregated")
        c[2].number_input("Prefill TP", 1, 1024, step=1, key=f"{HAND}.ptp")
        c[3].number_input("Prefill DP", 1, 100_000, step=1, key=f"{HAND}.pdp")
        c = st.columns(4)  # MoE layouts over each replica's TP GPUs (advisor/search/space.py)
        c[0].checkbox("Expert parallel (EP = TP)", key=f"{HAND}.ep")
        c[1].checkbox("Attention data parallel (= TP)", key=f"{HAND}.dpa")
        c[2].checkbox("Prefill pool: EP", key=f"{HAND}.pep")
        c[3].checkbox("Prefill pool: attention DP", key=f"{HAND}.pdpa")
        st.form_submit_button("Put in focus", on_click=_hand_set, args=(scenario_key(scenario),))
    err = SS.pop(f"{HAND}.error", None)
    if err:
        st.error(err)


def _hand_set(key: str) -> None:
    from pydantic import ValidationError

    from advisor.search.deployment_spec import DeploymentSpec

    v = {name: SS[f"{HAND}.{name}"] for name in
         ("gpu", "tp", "pp", "dp", "weights", "kv", "speculative", "disaggregated", "ptp", "pdp")}  # fmt: skip
    disagg = v.pop("disaggregated")
    ptp, pdp = v.pop("ptp"), v.pop("pdp")
    v.update(ep=v["tp"] if SS.get(f"{HAND}.ep") else 1, dpa=v["tp"] if SS.get(f"{HAND}.dpa") else 1)
    pre = {"prefill_tp": ptp, "prefill_dp": pdp, "prefill_ep": ptp if SS.get(f"{HAND}.pep") else 1,
           "prefill_dpa": ptp if SS.get(f"{HAND}.pdpa") else 1}  # fmt: skip
    try:
        spec = DeploymentSpec(**v, **(pre if disagg else {}))
    except ValidationError as exc:
        SS[f"{HAND}.error"] = "Not put in focus: " + "; ".join(
            e["msg"].removeprefix("Value error, ") for e in exc.errors()
        )
        return
    choose(key, str(spec), BY_HAND)


def pdf_section(scenario, rec, f: InFocus) -> None:
    """Client-facing PDF of this recommendation, describing the deployment in focus."""
    from advisor.report.pdf import report_bytes_for_app

    # the session's client profile, named in the PDF (or why it did not price the deployment
    # the PDF describes: the one in focus when it is not the recommended one)
    d = f.deployment if not f.recommended and f.deployment is not None else rec.best
    kw = pdf_kw(profile_fallback(d))
    if not f.recommended:
        note = f"{f.spec.describe()}, {f.origin}" + (f": {f.problem}" if f.problem else "")
        kw |= {"focus": f.deployment, "focus_note": note}
    pdf_download(
        "PDF summary for the client", "Download PDF summary", "pdf",
        "inference-architect-recommendation.pdf",
        lambda client, consultant: report_bytes_for_app(scenario, client, consultant, rec, **kw),
    )  # fmt: skip


st.title("Recommendation")
guarded("Introduction", intro)
flash()
guarded("Recommendation", page)

"""Compare: two to four scenarios (the sidebar, saved ones, examples) side by side: inputs,
the sidebar deployment's estimate, the recommendation's best, overlaid charts."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from advisor.catalog import accelerators, interconnects
from advisor.charts import compare_charts as cc
from advisor.scenario import ScenarioError
from advisor.store import StoreError
from ui.cache import estimate_for, keys, recommend_for, sweep_for
from ui.format import md_escape
from ui.pdf import pdf_download
from ui.scenarios import (
    Choice,
    examples,
    open_store,
    view_from,
)
from ui.state import current, guarded

SS = st.session_state
SIDEBAR = "The sidebar scenario (now)"


def choices() -> tuple[dict[str, Choice], list[str]]:
    """Every pickable scenario by label, and the problems met while reading the saved ones."""
    scenario, view = current()
    out = {SIDEBAR: Choice(SIDEBAR, scenario, view)}
    problems: list[str] = []
    store, err = open_store()
    if err:
        problems.append(err)
    if store is not None:
        try:
            for eng in store.engagements():
                for row in store.list(eng):
                    label = f"{eng} / {row.name}"
                    try:
                        saved = store.load(eng, row.name)
                    except (ScenarioError, StoreError) as exc:
                        problems.append(f"“{label}” skipped: {exc}")
                        continue
                    out[label] = Choice(label, saved.scenario, view_from(saved.view))
        except StoreError as exc:
            problems.append(str(exc))
    for ex in examples():
        out[f"Example: {ex.label}"] = Choice(f"Example: {ex.label}", ex.scenario, ex.view)
    return out, problems


def _ms(x: float | None) -> str:
    if x is None:
        return "—"
    return "unbounded (overloaded)" if math.isinf(x) else f"{x:,.1f} ms"


def inputs_table(picked: list[Choice]) -> pd.DataFrame:
    gpus, links = accelerators(), interconnects()
    cols = {}
    for c in picked:
        s, hw, w = c.scenario, c.scenario.hardware, c.scenario.workload
        intra = links[hw.intra_link or gpus[hw.gpus[0]].scale_up_link].name
        cols[c.label] = {
            "Model": s.model_spec().name,
            "Accelerator": ", ".join(gpus[g].name for g in hw.gpus),
            "GPUs": f"{hw.nodes} node(s) × {hw.gpus_per_node} = {hw.total_gpus}",
            "Links": f"{intra} inside; {links[hw.inter_link].name} between nodes",
            "Engine": s.options.engine,
            "Weights / KV dtypes": f"{', '.join(s.options.weight_dtypes)} / "
            f"{', '.join(s.options.kv_dtypes)}",
            "Tokens in / out": f"{w.isl_tokens:,} / {w.osl_tokens:,}",
            "Load": f"{w.arrival_rate_per_s:g} requests/s"
            if w.arrival_rate_per_s is not None
            else f"{w.concurrent_users:,} concurrent users",
            "SLA": s.sla.describe(),
            "Sidebar deployment": f"TP={c.view.tp}, PP={c.view.pp}, "
            f"{s.options.weight_dtypes[0]} weights, {s.options.kv_dtypes[0]} KV",
        }
    return pd.DataFrame(cols)


def outputs(picked: list[Choice]) -> tuple[pd.DataFrame, dict[str, dict]]:
    results, cols = {}, {}
    for c in picked:
        sj, vj = keys(c.scenario, c.view)
        try:
            r = estimate_for(sj, vj)
        except (ValueError, KeyError) as exc:
            r = {"fits": False, "reasons": [str(exc)], "breakdown": {}}
        results[c.label] = r
        pct = c.scenario.sla.percentile
        p = r.get("percentiles") or {}
        col = {
            "Fits in memory": "yes" if r.get("fits") else "no: " + "; ".join(r.get("reasons", [])),
            "GPUs used": f"{r['gpus']}" if "gpus" in r else "—",
            "TTFT (mean)": _ms(r.get("ttft_ms")),
            f"TTFT P{pct}": _ms(p.get("ttft_ms", {}).get(f"p{pct}")),
            "TPOT (mean)": _ms(r.get("tpot_ms")),
            f"TPOT P{pct}": _ms(p.get("tpot_ms", {}).get(f"p{pct}")),
            "End to end (mean)": _ms(r.get("e2e_ms")),
            "Throughput": f"{r.get('throughput_tok_s', 0):,.0f} tokens/s "
            f"({r.get('throughput_tok_s_per_gpu', 0):,.0f} per GPU)",
            "Max sequences per replica (KV)": f"{r['max_concurrency']:,}"
            if "max_concurrency" in r
            else "—",
        }
        if r.get("fits") and r.get("reasons"):  # overloaded
            col["Fits in memory"] = "yes, but " + "; ".join(r["reasons"])
        rec = recommend_for(sj) if _search_available() else None
        if rec is not None:
            b = rec.best
            col["Recommended (search)"] = (
                f"{b.description}: {b.gpus} GPUs, P{pct} TPOT {getattr(b.tpot_ms, f'p{pct}'):,.1f} ms, "
                f"{b.usd_per_million_tokens:,.2f} USD per million tokens"
                if b is not None
                else f"nothing meets the SLA: {rec.no_best_reason or ''}"
            )
        cols[c.label] = col
    return pd.DataFrame(cols), results


def _search_available() -> bool:
    try:
        import advisor.search.recommend  # noqa: F401
    except ImportError:
        return False
    return True


def page() -> None:
    options, problems = choices()
    for msg in problems:
        st.warning(f"Saved scenarios: {md_escape(msg)}")
    labels = list(options)
    default = [lab for lab in labels if lab.startswith("Example:")][:2]
    if "cmp.pick" not in SS:
        SS["cmp.pick"] = [SIDEBAR] + default[:1]
    SS["cmp.pick"] = [lab for lab in SS["cmp.pick"] if lab in options]
    picked_labels = st.multiselect(
        "Scenarios to compare (two to four)", labels, key="cmp.pick", max_selections=4,
        help="The sidebar as it is now, scenarios saved on the Scenarios page (engagement / "
        "name), and the built-in examples.",
    )  # fmt: skip
    if len(picked_labels) < 2:
        st.info("Pick at least two scenarios.")
        return
    picked = [options[lab] for lab in picked_labels]
    st.subheader("Inputs")
    st.dataframe(inputs_table(picked), width="stretch")
    st.subheader("Outputs")
    st.caption(
        "Each scenario's sidebar deployment (first accelerator, first dtypes, TP and PP as "
        "saved, as many data-parallel replicas as the GPUs allow) under the scenario's load; "
        "the last row is the recommendation search's best deployment when it is available."
    )
    with st.spinner("Estimating…"):
        table, results = outputs(picked)
    st.dataframe(table, width="stretch")
    st.plotly_chart(cc.latency_breakdown_figure(results), width="stretch")
    sweeps = {}
    for c in picked:
        try:
            sweeps[c.label] = sweep_for(*keys(c.scenario, c.view))
        except (ValueError, KeyError):
            sweeps[c.label] = []
    st.plotly_chart(cc.throughput_vs_batch_figure(sweeps), width="stretch")
    st.caption(
        "Batch sweep: one replica of each sidebar deployment with a fixed number of running "
        "sequences (powers of two up to what its KV cache holds)."
    )
    guarded("PDF summary", pdf_section, picked)


def pdf_section(picked: list[Choice]) -> None:
    """Comparison PDF (the first scenario's recommendation in detail, the overlaid charts)."""
    from advisor.report.pdf import report_bytes_for_app

    first = picked[0]
    items = [(c.label, c.scenario, c.view.tp, c.view.pp) for c in picked]
    rec = recommend_for(keys(first.scenario, first.view)[0]) if _search_available() else None
    pdf_download(
        "PDF comparison for the client", "Download PDF comparison", "cmp.pdf",
        "inference-architect-comparison.pdf",
        lambda client, consultant: report_bytes_for_app(
            first.scenario, client, consultant, rec, compare=items
        ),
    )  # fmt: skip


st.title("Compare scenarios")
guarded("Compare", page)

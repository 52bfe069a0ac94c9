"""Compare: two to four scenarios (the sidebar, saved ones, examples) side by side: inputs, each
one's recommended (or focused) deployment at its own load, the ranking, overlaid charts."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor.catalog import accelerators, interconnects
from advisor.charts import compare_charts as cc
from advisor.scenario import Scenario, ScenarioError
from advisor.search import comparison as cmp
from advisor.search.space import search_weights_text
from advisor.store import StoreError
from ui.cache import deployment_sweep_for as sweep_for
from ui.cache import keys, recommend_for
from ui.format import md_escape, plural
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


def default_picks(options: dict[str, Choice]) -> list[str]:
    """What the page opens with: what the user has, never a stray example, up to four. The
    saved scenarios of the engagement open on the Scenarios page first, then the others, most
    recently saved first; before them the sidebar (the scenario in focus), under its saved name
    when it is saved (not as "The sidebar scenario (now)" beside its own copy), and left out
    while it is the untouched default of a fresh session (a Llama 3.1 70B the user never chose,
    issue 38) and there are saved ones to compare."""
    from ui.scenarios import ENGAGEMENT_KEY

    def inputs(label: str) -> dict:
        return options[label].scenario.model_dump(exclude={"name"})

    here = inputs(SIDEBAR)
    saved = [lab for lab in options if lab != SIDEBAR and not lab.startswith("Example: ")]
    open_eng = f"{SS.get(ENGAGEMENT_KEY, 'default')} / "
    saved.sort(key=lambda lab: not lab.startswith(open_eng))  # stable: keeps the store's order
    copies = [lab for lab in saved if inputs(lab) == here]
    others = [lab for lab in saved if inputs(lab) != here]
    untouched = here == Scenario().model_dump(exclude={"name"})
    first = copies[:1] if copies else [] if untouched and others else [SIDEBAR]
    return [*first, *others][:4]


def inputs_table(picked: list[Choice]) -> pd.DataFrame:
    gpus, links = accelerators(), interconnects()
    cols = {}
    for c in picked:
        s, hw, w = c.scenario, c.scenario.hardware, c.scenario.workload
        intra = links[hw.intra_link or gpus[hw.gpus[0]].scale_up_link].name
        cols[c.label] = {
            "Model": s.model_spec().name,
            "Accelerator": ", ".join(gpus[g].name for g in hw.gpus),
            "GPUs": f"{plural(hw.nodes, 'node')} × {hw.gpus_per_node} = {hw.total_gpus}",
            "Links": f"{intra} inside; {links[hw.inter_link].name} between nodes",
            "Engine": s.options.engine,
            "Weights / KV dtypes": f"{search_weights_text(s)} / {', '.join(s.options.kv_dtypes)}",
            "Tokens in / out": f"{w.isl_tokens:,} / {w.osl_tokens:,}",
            "Load": cmp.load_text(s),
            "SLA": s.sla.describe(),
        }
    return pd.DataFrame(cols)


def focused(c: Choice):
    """The deployment the user put in focus for this scenario, if the app has one (None: the
    recommended one)."""
    from ui.focus import focused_deployment

    return focused_deployment(c.scenario)


def answers(picked: list[Choice]) -> list[cmp.Compared]:
    """Each picked scenario's deployment (in focus, else recommended) at its own load."""
    out = []
    for c in picked:
        sj, _ = keys(c.scenario, c.view)
        rec = recommend_for(sj)
        out.append(cmp.compared(c.label, c.scenario, rec, focused(c)))
    return out


def outputs_table(rows: list[cmp.Compared]) -> pd.DataFrame:
    """One column per scenario, in the ranking's order (cheapest that meets its SLA first)."""
    order = cmp.ranked(rows)
    cols = {f"{i}. {c.label}": cmp.table_rows(c) for i, c in enumerate(order, start=1)}
    return pd.DataFrame(cols).fillna("")


def shown(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` for st.table, which renders markdown: every label and cell escaped (scenario
    names are user text)."""
    out = df.map(md_escape)
    out.index = [md_escape(i) for i in out.index]
    out.columns = [md_escape(c) for c in out.columns]
    return out


def page() -> None:
    options, problems = choices()
    for msg in problems:
        st.warning(f"Saved scenarios: {md_escape(msg)}")
    labels = list(options)
    if "cmp.pick" not in SS:
        SS["cmp.pick"] = default_picks(options)
    SS["cmp.pick"] = [lab for lab in SS["cmp.pick"] if lab in options]
    picked_labels = st.multiselect(
        "Scenarios to compare (two to four)", labels, key="cmp.pick", max_selections=4,
        help="The sidebar as it is now, scenarios saved on the Scenarios page (engagement / "
        "name), and the built-in examples.",
    )  # fmt: skip
    if len(picked_labels) < 2:
        st.info(
            "Pick at least two scenarios. Save the ones you want to weigh on the Scenarios "
            "page (they are picked here when the page opens), or add a built-in example."
        )
        return
    picked = [options[lab] for lab in picked_labels]
    st.subheader("Inputs")
    st.table(shown(inputs_table(picked)))
    st.subheader("Answers, ranked")
    with st.spinner("Searching each scenario…"):
        rows = answers(picked)
    st.markdown(md_escape(cmp.verdict(rows)))
    st.caption(
        "Each scenario's recommended deployment (or the one put in focus) at that scenario's "
        "own load; columns in the ranking's order: those that meet their SLA by cost per "
        "million output tokens, then those that miss, by how far."
    )
    st.table(shown(outputs_table(rows)))
    order = cmp.ranked(rows)
    results = {c.label: cc.deployment_result(c.deployment) for c in order}
    st.plotly_chart(cc.latency_breakdown_figure(results), width="stretch")
    sweeps = {}
    for c in order:
        try:
            sweeps[c.label] = (
                sweep_for(c.scenario, c.deployment) if c.deployment is not None else []
            )
        except (ValueError, KeyError):
            sweeps[c.label] = []
    st.plotly_chart(cc.throughput_vs_batch_figure(sweeps), width="stretch")
    st.caption(
        "Batch sweep: one replica of each scenario's deployment (a disaggregated one's decode "
        "pool) with a fixed number of running sequences (powers of two up to what its KV cache "
        "holds)."
    )
    guarded("PDF summary", pdf_section, picked, rows)


def pdf_section(picked: list[Choice], rows: list[cmp.Compared]) -> None:
    """Comparison PDF: the ranking first, then the best scenario in detail."""
    from advisor.report.pdf import report_bytes_for_app

    items = [(c.label, c.scenario, r.deployment if r.source == "in focus" else None)
             for c, r in zip(picked, rows, strict=True)]  # fmt: skip
    pdf_download(
        "PDF comparison for the client", "Download PDF comparison", "cmp.pdf",
        "inference-architect-comparison.pdf",
        lambda client, consultant: report_bytes_for_app(
            picked[0].scenario, client, consultant, None, compare=items
        ),
    )  # fmt: skip


st.title("Compare scenarios")
guarded("Compare", page)

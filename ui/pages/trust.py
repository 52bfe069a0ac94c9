"""Trust: the model's predictions against the published measurements, with their sources."""

from __future__ import annotations

import streamlit as st

from advisor.charts.trust_charts import trust_scatter
from advisor.perf.overlay import shipped_only
from advisor.perf.trust import (
    error_table,
    filter_rows,
    skipped_rows,
    trust_rows,
)
from advisor.perf.validate import FAMILIES, validation_report
from ui.cache import out_of_sample_cached
from ui.state import guarded


@st.cache_data(show_spinner="Predicting every published measurement…")
def report() -> tuple[dict, list[dict], list[dict]]:
    with shipped_only():  # the published check is of the shipped calibration, whatever the session
        rep = validation_report()
    return rep, trust_rows(rep), skipped_rows()


def out_of_sample_section() -> None:
    """The figures to quote: error on rows the fit never saw (leave one source out first)."""
    oos = out_of_sample_cached()
    st.subheader("Out of sample: error on measurements the fit never saw")
    if oos is None:
        st.info("No cross-validation table (run `bench/crossval.py --write`).")
        return
    st.caption(
        f"From `{oos['generated_by']}` ({oos['generated_on']}): the constants are refitted "
        "without one source (a publication: repository + path), then without one accelerator "
        "family, then without one engine, and the held-out rows are predicted. A prediction the "
        "model calls unstable counts as a 100% error. This is the error to expect for a "
        "deployment nobody measured."
    )
    st.dataframe(oos["rows"], hide_index=True)


# A fragment: the filters change only this page's body, so their reruns skip the sidebar and
# the recommendation (the page reads nothing of the scenario).
@st.fragment
def body() -> None:
    rep, rows, skipped = report()
    out_of_sample_section()
    st.subheader("In sample: every measurement against the fitted model")
    st.caption(
        f"{rep['rows_used']} of {rep['rows_total']} published measurements predicted "
        f"({rep['rows_skipped']} not representable, listed below). Error = predicted / measured "
        "− 1. The model's efficiency constants were fitted on these same rows (data/"
        "calibration.yaml): an in-sample check, second to the out-of-sample table above."
    )
    c = st.columns(4)
    opts = {k: sorted({r[k] for r in rows if r[k]}) for k in ("gpu", "engine", "model")}
    fams = c[0].multiselect("Metric family", list(FAMILIES), placeholder="all", key="trust.fam")
    gpus = c[1].multiselect("GPU", opts["gpu"], placeholder="all", key="trust.gpu")
    engines = c[2].multiselect("Engine", opts["engine"], placeholder="all", key="trust.engine")
    models = c[3].multiselect("Model", opts["model"], placeholder="all", key="trust.model")
    sel = filter_rows(rows, gpus, engines, models, fams)
    if not sel:
        st.warning("No measurement matches these filters.")
        return
    title = f"Predicted vs measured: {len(sel)} measurements"
    st.plotly_chart(trust_scatter(sel, title, list(FAMILIES)), width="stretch")
    st.subheader("Error per metric family")
    st.dataframe(error_table(sel, FAMILIES), hide_index=True)
    with st.expander(f"Every row with its source ({len(sel)})"):
        st.dataframe(
            [{"id": r["id"], "family": r["family"], "model": r["model_name"],
              "gpu": r["gpu_name"], "engine": r["engine"], "published": r["published"],
              "measured": f"{r['measured']:.4g} {r['unit']}",
              "predicted": f"{r['predicted']:.4g} {r['unit']}", "error %": round(r["error_pct"], 1),
              "source": r["source"]} for r in sel],
            hide_index=True,
        )  # fmt: skip
    with st.expander(f"Rows not representable ({len(skipped)})"):
        st.dataframe(skipped, hide_index=True)


st.title("Trust: predictions against published measurements")
guarded("Validation", body)

"""Trust: the model's predictions against the published measurements, with their sources."""

from __future__ import annotations

import streamlit as st

from advisor.perf.validation.trust import error_table, filter_rows
from advisor.perf.validation.validate import FAMILIES
from ui.cache import (
    crossval_mtime_ns,
    interval_coverage,
    out_of_sample_cached,
    percentile_check,
    trust_figure,
    trust_report,
)
from ui.state import guarded


def out_of_sample_section() -> None:
    """The figures to quote: error on rows the fit never saw (leave one source out first)."""
    oos = out_of_sample_cached()
    st.subheader("Out of sample: error on measurements the fit never saw")
    if oos is None:
        st.info("No cross-validation table (run `python -m advisor crossval`).")
        return
    st.caption(
        f"From `{oos['generated_by']}` ({oos['generated_on']}): the constants are refitted "
        "from scratch (not from the full fit) without one source (a publication: repository + "
        "path), then without one accelerator family, then without one engine, and the held-out "
        "rows are predicted. A prediction the model calls unstable counts as a 100% error. This "
        "is the error to expect for a deployment nobody measured."
    )
    st.dataframe([_readable(r) for r in oos["rows"]], hide_index=True)
    coverage_section()


#: Column names of the error tables, for people.
COLUMNS = {
    "median_ape_pct": "median |error| %",
    "p90_ape_pct": "P90 |error| %",
    "bias_pct": "bias %",
    "failures": "failures (counted as 100%)",
}


def _readable(row: dict) -> dict:
    return {COLUMNS.get(k, k): (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()}


def coverage_section() -> None:
    """Do the ranges shown next to every answer hold on measurements the fit never saw?"""
    st.subheader("Do the ranges hold?")
    cov = {c: interval_coverage(c, crossval_mtime_ns()) for c in (0.5, 0.8, 0.9)}
    if not cov[0.8]:
        st.info("No held-out rows in data/crossval.yaml: no ranges to check.")
        return
    st.caption(
        "Every answer carries a range at the SLA's confidence (80% by default), built from the "
        "out-of-sample errors above for its kind, engine and accelerator family, among models "
        "of its class (mixture-of-experts or dense), from levels with at least 10 rows of 3 "
        "sources (advisor/perf/model/intervals.py). Here each held-out measurement is scored against "
        "the range built without its source, as for your deployment, which the table has never "
        "seen: at 80% confidence, 70-90% of them should fall inside."
    )
    kinds = [k for k in cov[0.8] if k != "uncalibrated" or cov[0.8][k]["rows"] >= 10]
    st.dataframe(
        [
            {"predictions": k, "rows": cov[0.8][k]["rows"],
             **{f"inside the {c:.0%} range": f"{cov[c][k]['inside_pct']:.1f}%"
                for c in cov if k in cov[c]}}
            for k in kinds
        ],
        hide_index=True,
    )  # fmt: skip


def percentiles_section() -> None:
    """The P50/P99 the SLA verdicts use, against published percentiles."""
    rep = percentile_check()
    st.subheader("Percentiles: P50 and P99 against published serving runs")
    st.caption(
        f"{rep['rows_used']} of {rep['rows_total']} published median/P99 rows predicted at the "
        "row's own load (max concurrency N: a closed loop of N clients; a request rate: Poisson "
        f"arrivals at the requested rate); {rep['rows_skipped']} not representable. The engine "
        "constants were fitted to rows that include these runs' medians, so the P50/P99 errors "
        "are in sample for the mean; the P99/P50 ratio (the shape of the tail) does not depend "
        "on that fit. A run the model calls unstable counts as a 100% error."
    )
    head = rep["by_percentile"]["headline"]
    st.dataframe(
        [_readable({"percentile, load": k, **v}) for k, v in head.items()], hide_index=True
    )
    st.markdown("**Tail shape: predicted P99/P50 against measured P99/P50**")
    st.dataframe(
        [_readable({"metric": k, **v}) for k, v in rep["tail_ratio"].items()], hide_index=True
    )
    st.caption(
        "ITL is compared with the model's inter-token gap: plain decode steps mixed with steps "
        "that carry another request's prefill (or a chunk of it), in the share the load gives. "
        "Its P99 is a step stalled by a prefill once more than 1% of the gaps carry one. Where "
        "the benchmark run is replayed request by request (the lengths and send times its "
        "client drew), its gaps are the replay's own: which prefill stalled which answers is "
        "then the run's, and an estimate for a steady service, which uses the mixture, is looser "
        "under load (bench/percentiles.py --steady)."
    )
    cov = rep["range_coverage"]
    if "P99" in cov:
        per = ", ".join(
            f"{m} {cov[f'P99 {m}']['inside_pct']:.0f}%"
            for m in ("TTFT", "TPOT", "ITL", "E2E")
            if f"P99 {m}" in cov
        )
        p50 = (
            f" and {cov['P50']['inside_pct']:.0f}% of the {cov['P50']['rows']} P50s"
            if "P50" in cov
            else ""
        )
        steady = rep.get("range_coverage_steady") or {}
        verdict = (
            f" The steady-service range an SLA verdict reads (from the held-out errors of means "
            f"and medians at the load) held {steady['P99']['inside_pct']:.0f}% of the "
            f"{steady['P99']['rows']} published TTFT, TPOT and E2E P99s (TTFT "
            f"{steady.get('P99 TTFT', {}).get('inside_pct', float('nan')):.0f}%): published "
            "P99 TTFTs of benchmark runs carry start-up waves and cold first requests that a "
            "warm service does not pay, so the verdict reads the steady range and the answer "
            "shows the benchmark-run range beside it."
            if "P99" in steady
            else ""
        )
        st.caption(
            "The benchmark-run range shown beside a predicted percentile (from the held-out "
            "errors of that percentile where there are enough rows, else of the means and "
            f"medians) held {cov['P99']['inside_pct']:.0f}% of these {cov['P99']['rows']} "
            f"published P99s ({per}){p50}: a tail misses by more than a mean, so read a P99 range "
            "as narrower than the tail's own uncertainty." + verdict
        )
    ttft99 = rep["by_percentile"]["by_metric"].get("TTFT P99 low")
    if ttft99 and ttft99["bias_pct"] < -20:
        st.warning(
            f"P99 TTFT: the model's P99 is {-ttft99['bias_pct']:.0f}% below the published P99 "
            f"at low load (median of {ttft99['rows']} runs). Much of a published TTFT tail is "
            "the benchmark's start: the clients' first round, replayed here where the run's "
            "length and prompt lengths are stated, and the server's warm-up (first requests "
            "that compile kernels), which no model here has and a steady service does not see. "
            "Treat a predicted P99 TTFT as a lower bound and keep headroom under a P99 TTFT "
            "target."
        )


def repeats_section() -> None:
    """How far two runs of one published benchmark differ: no prediction is nearer to both."""
    from advisor.perf.validation.repeats import shipped_summary

    rows = shipped_summary()  # data/repeats.json, the measurement files' summary (tested)
    if not rows:
        return
    st.subheader("How repeatable are the measurements?")
    st.caption(
        "Some publications ran one benchmark twice: the same model architecture, accelerators, "
        "engine version, prompts and clients (sgl-cookbook re-ran Qwen3-235B on 8 x B200 with "
        "the Instruct-2507 weights, MiniMax-M2 on 8 x MI300X with M2.1). For each statistic, the "
        "floor is the least error one prediction can have on both runs, (larger - smaller) / "
        "(larger + smaller): a model that is exactly right on average still shows it. Throughput, "
        "TPOT, ITL and E2E repeat within a few per cent; first tokens do not, and a P99 TTFT "
        "target tighter than its floor cannot be met on these runs by any model."
    )
    st.dataframe(
        [{"statistic": r["statistic"], "repeated benchmarks": r["benchmarks"],
          "runs": r["runs"], "median floor %": round(r["median_floor_pct"], 1),
          "largest floor %": round(r["largest_floor_pct"], 1), "largest": r["largest"]}
         for r in rows],
        hide_index=True,
    )  # fmt: skip


# A fragment: the filters change only this page's body, so their reruns skip the sidebar and
# the recommendation (the page reads nothing of the scenario).
@st.fragment
def body() -> None:
    rep, rows, skipped = trust_report()
    out_of_sample_section()
    guarded("Percentile check", percentiles_section)
    guarded("Repeated runs", repeats_section)
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
    st.plotly_chart(trust_figure(*map(tuple, (gpus, engines, models, fams))), width="stretch")
    st.subheader("Error per metric family")
    st.dataframe([_readable(r) for r in error_table(sel, FAMILIES)], hide_index=True)
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

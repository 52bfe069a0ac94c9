"""Calibrate to your cluster: the client's own benchmark files -> a client profile for the session."""

from __future__ import annotations

import streamlit as st

from advisor.catalog import (
    KV_DTYPES,
    WEIGHT_DTYPES,
    accelerators,
    get_accelerator,
    interconnects,
    models,
)
from advisor.perf.calibration.client_profile import (
    MAX_PROFILE_BYTES,
    ProfileError,
    ProfileRefused,
    deployment_problem,
    dump,
    fit_profile,
    parse_profile,
    signing_key_path,
)
from advisor.perf.importers import BenchmarkFileError, Deployment, load_bytes
from advisor.perf.model.profiles import ENGINES
from advisor.store import DEFAULT_ENGAGEMENT, StoreError
from ui.client_profile import KEY, NAME, SS, active_text, session_profile
from ui.focus import in_focus
from ui.format import md_escape
from ui.scenarios import ENGAGEMENT_KEY, open_store
from ui.state import current, guarded

MAX_UPLOADS = 20
#: Session key: the points of the last refused fit (shown so the refusal can be read point by point).
REFUSED = "calib.refused_points"
#: Session key: each run of the last refused fit, held out (advisor/perf/calibration/client_holdout.py).
REFUSED_RUNS = "calib.refused_runs"


def fit_uploads(
    files: list[tuple[str, bytes]], dep: Deployment, name: str
) -> tuple[dict | None, list[str]]:
    """(profile document or None, problems): each file imported, then the fit. A refused fit's
    points (error before, after, left out) are kept in the session for the table."""
    imported, problems = [], []
    for fname, data in files[:MAX_UPLOADS]:
        try:
            imported.append(load_bytes(data, fname, dep))
        except BenchmarkFileError as exc:
            problems.append(str(exc))
    if len(files) > MAX_UPLOADS:
        problems.append(f"only the first {MAX_UPLOADS} files were read")
    if not imported:
        return None, problems or ["no file"]
    try:
        fit = fit_profile(imported, dep, name)
    except ProfileRefused as exc:
        SS[REFUSED], SS[REFUSED_RUNS] = exc.points, exc.runs
        return None, [*problems, f"No profile: {exc}"]
    SS.pop(REFUSED, None)
    SS.pop(REFUSED_RUNS, None)
    return fit.doc, problems + [f"Note: {n}" for n in fit.notes]


def points_table(doc: dict) -> list[dict]:
    return [
        {"measurement": p["id"], "kind": p["kind"], "measured": f"{p['measured']:.4g} {p['unit']}",
         "error before % (shipped)": p["before_pct"], "error after % (profile)": p["after_pct"],
         "error % with its run left out": p.get("loo_pct"),
         "flagged (not fitted)": p["flagged"]}
        for p in doc["points"]
    ]  # fmt: skip


def runs_table(runs: list[dict]) -> list[dict]:
    """Each run left out in turn: its error with the shipped calibration and with the profile
    fitted to the other runs (mean |error| of its figures), and the verdict on it."""
    return [
        {"run (held out)": r["run"], "figures": r["points"],
         "error % shipped": r["shipped_pct"], "error % profile fitted without it": r["held_out_pct"],
         "change (pp)": r["change_pp"], "verdict": r["verdict"]}
        for r in runs
    ]  # fmt: skip


def inter_links(gpu_id: str) -> list[str]:
    """Inter-node links that can connect this accelerator (the catalog's vendor/scope rule)."""
    g = get_accelerator(gpu_id)
    return sorted(k for k, v in interconnects().items() if v.mismatch(g, "inter_node") is None)


def fit_section() -> None:
    st.subheader("Fit a profile to benchmark files")
    files = st.file_uploader(
        "Benchmark result files (vllm bench throughput/serve JSON, SGLang bench_serving JSONL, "
        "GenAI-Perf/AIPerf export, trtllm-bench report or console output, nccl-tests "
        "all_reduce_perf output)",
        accept_multiple_files=True, key="calib.files",
    )  # fmt: skip
    st.caption("The deployment the files measured (first shown: the deployment in focus, the "
               "one a client would measure to check the recommendation):")  # fmt: skip
    sc, _ = current()
    spec = in_focus(sc).spec  # a disaggregated one: its decode pool's replica
    model_ids, gpu_ids = sorted(models()), sorted(accelerators())

    def first(options: list[str], want: str) -> int:
        return options.index(want) if want in options else 0

    c = st.columns(4)
    model = c[0].selectbox("Model", model_ids, index=first(model_ids, sc.model), key="calib.model")
    gpu = c[1].selectbox("Accelerator", gpu_ids, index=first(gpu_ids, spec.gpu), key="calib.gpu")
    engine = c[2].selectbox(
        "Engine", list(ENGINES), index=first(list(ENGINES), sc.options.engine), key="calib.engine"
    )
    name = c[3].text_input("Profile name", value="client-profile", max_chars=120, key="calib.name")
    c = st.columns(6)
    tp = c[0].number_input("TP", 1, 1024, min(spec.tp, 1024), key="calib.tp")
    pp = c[1].number_input("PP", 1, 1024, min(spec.pp, 1024), key="calib.pp")
    weights = c[2].selectbox("Weights", list(WEIGHT_DTYPES),
                             index=first(list(WEIGHT_DTYPES), spec.weights), key="calib.weights")  # fmt: skip
    kv = c[3].selectbox("KV cache", list(KV_DTYPES), index=first(list(KV_DTYPES), spec.kv),
                        key="calib.kv")  # fmt: skip
    isl = c[4].number_input(
        "Input tokens (if the file lacks them)", 0, 2_000_000, 0, key="calib.isl"
    )
    osl = c[5].number_input(
        "Output tokens (if the file lacks them)", 0, 2_000_000, 0, key="calib.osl"
    )
    c = st.columns(3)
    ep = c[0].checkbox("Expert parallel (EP = TP)", value=spec.ep > 1, key="calib.ep",
                       help="the runs kept whole experts per GPU (MoE models): vLLM "
                       "--enable-expert-parallel, SGLang --ep-size, TensorRT-LLM --ep")  # fmt: skip
    dpa = c[1].checkbox("Attention data parallel", value=spec.dpa > 1, key="calib.dpa",
                        help="each GPU ran the attention of its own sequences (MoE models): "
                        "SGLang --enable-dp-attention, TensorRT-LLM enable_attention_dp, vLLM "
                        "--data-parallel-size with EP")  # fmt: skip
    links = inter_links(gpu)
    inter = st.selectbox(
        "Link between hosts (for nccl-tests files whose ranks span several hosts)", links,
        index=links.index("ib-ndr") if "ib-ndr" in links else 0, key="calib.inter_link",
    )  # fmt: skip
    if not st.button("Fit profile", disabled=not files, key="calib.fit"):
        return
    dep = Deployment(model=model, gpu=gpu, tp=int(tp), pp=int(pp), weights=weights, kv=kv,
                     engine=engine, isl=float(isl) or None, osl=float(osl) or None,
                     inter_link=inter or None, ep=bool(ep), dp_attention=bool(dpa))  # fmt: skip
    why = deployment_problem(dep)
    if why:
        st.error(md_escape(why))
        return
    doc, problems = fit_uploads(
        [(f.name, f.getvalue()) for f in files], dep, name.strip() or "client-profile"
    )
    for p in problems:
        (st.info if p.startswith("Note: ") else st.error)(md_escape(p))
    if doc is None and SS.get(REFUSED_RUNS):
        st.caption("Each run held out, as the refusal judged it (nothing was written):")
        st.dataframe(runs_table(SS[REFUSED_RUNS]), hide_index=True)
    if doc is None and SS.get(REFUSED):
        st.caption("The points of the refused fit (nothing was written):")
        st.dataframe(points_table({"points": SS[REFUSED]}), hide_index=True)
    if doc is not None:
        SS[KEY] = dump(doc)
        SS[NAME] = f"{doc['name']}.yaml"
        st.success(f"Profile {md_escape(doc['name'])} fitted and active for this session.")


def load_section() -> None:
    st.subheader("Or load a profile")
    # No type filter: the content is validated (a wrong file is refused naming the field), and a
    # filter only hides files saved under another extension.
    up = st.file_uploader("Client profile (YAML from `advisor calibrate --from`)", key="calib.profile")  # fmt: skip
    st.caption(
        "A profile carries a digest (catches accidental edits and truncated copies) and a "
        "signature made with this installation's secret key "
        f"({md_escape(str(signing_key_path()))}): a profile edited by hand, even with its digest "
        "recomputed, or fitted by another installation is refused unless both share that key file."
    )
    if up is not None and st.button("Use this profile", key="calib.use"):
        data = up.getvalue()
        if len(data) > MAX_PROFILE_BYTES:
            st.error(f"{md_escape(up.name)}: larger than the {MAX_PROFILE_BYTES:,}-byte limit")
            return
        text = data.decode("utf-8", errors="replace")
        try:
            parse_profile(text, up.name)
        except ProfileError as exc:
            st.error(md_escape(str(exc)))
            return
        SS[KEY], SS[NAME] = text, up.name
        st.rerun()


def current_section() -> None:
    doc = session_profile()
    if doc is None:
        st.info(
            "No client profile: every prediction uses the shipped calibration (data/calibration.yaml)."
            " Where an answer's range is wider than 3x its prediction (the Recommendation and "
            "Latency pages and `estimate` say which), three runs of that deployment with the "
            "engine's serving benchmark (at that load, a lower and a higher one), fitted above, "
            "narrow it: a profile is accepted only if, each run held out, it predicts that run "
            "better and none of its figures (TTFT, TPOT, latency, throughput) worse, and the "
            "profile fitted to all of them predicts none of them, nor any of their figures, "
            "worse; it applies over the range the runs span. P99s are not judged."
        )
        return
    st.success(active_text(doc))
    raw = doc.model_dump(by_alias=True)
    st.write(
        "Fitted: " + (md_escape(", ".join(doc.fitted)) or "nothing") + ". Held at the shipped "
        "calibration: "
        + (md_escape("; ".join(f"{k} ({v})" for k, v in doc.held.items())) or "none")
        + "."
    )
    loo, shipped = doc.summary.loo_median_ape_pct, doc.summary.median_ape_before_pct
    if loo is not None and shipped is not None:
        st.metric(
            "Out of sample (each run predicted by the profile fitted to the others)",
            f"{loo:.1f}% median error",
            delta=f"{loo - shipped:+.1f} pts vs shipped {shipped:.1f}%",
            delta_color="inverse",
        )
    st.markdown("**Verdict, judged on runs held out:** " + md_escape(doc.holdout.verdict) + ".")
    st.dataframe(runs_table(raw["holdout"]["runs"]), hide_index=True)
    st.markdown(
        "**Applies over** " + md_escape(doc.domain().text()) + ". Outside that range (another "
        "deployment, length or load) predictions use the shipped calibration, and the answer says so."
    )
    st.dataframe(points_table(raw), hide_index=True)
    st.caption(
        "Files: "
        + md_escape(", ".join(f"{f.name} ({f.format}, sha256 {f.sha256[:12]})" for f in doc.files))
    )
    c = st.columns(2)
    c[0].download_button("Download profile (YAML)", SS[KEY], file_name=SS.get(NAME, "profile.yaml"),
                         mime="application/yaml", key="calib.download")  # fmt: skip
    if c[1].button("Stop using this profile", key="calib.remove"):
        SS.pop(KEY, None)
        st.rerun()
    store, why = open_store()
    if store is None:
        st.caption(f"Cannot keep it with the engagement: {md_escape(why)}")
        return
    engagement = SS.get(ENGAGEMENT_KEY) or DEFAULT_ENGAGEMENT
    if st.button(f"Keep with engagement “{md_escape(engagement)}”", key="calib.keep"):
        try:
            name = store.save_profile(engagement, SS[KEY])
            st.success(f"Kept profile {md_escape(name)} with engagement {md_escape(engagement)}.")
        except StoreError as exc:
            st.error(md_escape(str(exc)))


def kept_section() -> None:
    store, _why = open_store()
    if store is None:
        return
    engagement = SS.get(ENGAGEMENT_KEY) or DEFAULT_ENGAGEMENT
    names = store.profiles(engagement)
    if not names:
        return
    st.subheader(f"Profiles kept with engagement “{md_escape(engagement)}”")
    pick = st.selectbox("Profile", names, key="calib.kept")
    if st.button("Use the kept profile", key="calib.use_kept"):
        try:
            SS[KEY] = store.load_profile(engagement, pick)
            SS[NAME] = f"{pick}.yaml"
            st.rerun()
        except StoreError as exc:
            st.error(md_escape(str(exc)))


st.title("Calibrate to your cluster")
st.caption(
    "Run the engine's own benchmark on one node of the client's cluster, drop the result files "
    "here and state the deployment they came from: the tool fits the constants those files can "
    "identify (the others stay at the shipped calibration) and uses them, for that accelerator "
    "and engine, on every page and in the PDF for this session. Save serving runs with "
    "`--save-detailed` (vLLM) or `--output-details` (SGLang): a run of a few prompts per client "
    "is then replayed on its own request lengths, start-up wave included."
)
guarded("Client profile", current_section)
guarded("Fit", fit_section)
guarded("Load", load_section)
guarded("Kept profiles", kept_section)

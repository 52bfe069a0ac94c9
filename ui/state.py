"""The shared scenario sidebar: widgets <-> Scenario/View, session state and the URL.

Every widget has an explicit key (``w.<url key>``), so its value survives page switches (the
sidebar is drawn on every run by app.py). On the first run of a session the URL's query
parameters seed the widgets (``ui.url.scenario_from_params``: bad values are listed in a
warning and keep their defaults); after each run ``sync_url`` writes the current scenario back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st
from pydantic import ValidationError

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES, accelerators, interconnects, models
from advisor.perf.model.profiles import ENGINES
from advisor.scenario import (
    AMORTISATION_RANGE_YEARS,
    CAPEX_RANGE_USD,
    E2E_RANGE_MS,
    ISL_CV_HELP,
    ISL_CV_MAX,
    OSL_CV_HELP,
    OSL_CV_MAX,
    RATE_RANGE_PER_S,
    SLA,
    TPOT_RANGE_MS,
    TTFT_RANGE_MS,
    UTILISATION_RANGE,
    Cost,
    Hardware,
    Options,
    Scenario,
    Workload,
)
from ui.focus import PENDING, apply_pending, url_value
from ui.format import display_name, md_escape
from ui.url import (
    DEP_KEY,
    URL_KEYS,
    View,
    dep_from_params,
    scenario_from_params,
    scenario_to_params,
)

SS = st.session_state
_K = {path: f"w.{key}" for path, key in URL_KEYS.items()}  # field path -> widget key
UPLOAD_KEY = "w.upload"
LOAD_MODE_KEY = "w.loadmode"
RATE, USERS = "arrival rate (requests/s)", "concurrent users"
AMBIGUITY_NOTE = (
    "“100 ms” alone is ambiguous: is it the time to the first token (TTFT), the time per "
    "output token (TPOT) or the whole response (E2E)? At 256 output tokens and 10 ms per "
    "token the response takes 2.6 s end to end. Set the latency each target bounds."
)
THINK_TIME_HELP = (
    "Seconds a user spends reading an answer before sending the next request (0 = back to "
    "back, like a benchmark client). Default 15 s: NVIDIA AIPerf docs, 'User-Centric Timing' "
    "(a chatbot user reads the response in ~15 s); TPC-W's emulated browsers think 7 s. The "
    "load is X = N / (think time + response time) (interactive response-time law, Lazowska "
    "et al., Quantitative System Performance, ch. 3)."
)
OWN = "own"  # the intra-link choice "each GPU's own link" (None in the Scenario)
PAGE_LOCAL = ("view.block_size", "view.concurrency", "view.max_model_len")
#: Sidebar widget keys. Some are drawn only in one mode (arrival rate or users; bought or rented
#: GPUs): Streamlit drops the state of a widget not drawn in a run, so their values are kept
#: here between runs and put back before the sidebar is drawn (``_restore_hidden``).
SIDEBAR_KEYS = tuple(k for p, k in _K.items() if p not in PAGE_LOCAL)
KEPT = "_sidebar_kept"


@contextmanager
def advisor_errors(where: str) -> Iterator[None]:
    """Show bad input as an st.error with its message, and anything else as a short one."""
    try:
        yield
    except (ValueError, KeyError) as exc:  # ValidationError, UnknownIdError, HFConfigError...
        st.error(f"{where}: {md_escape(exc)}")
    except Exception as exc:  # noqa: BLE001 - no traceback on the projector
        st.error(f"{where}: unexpected error ({type(exc).__name__}): {md_escape(str(exc)[:300])}")


def guarded(where: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one page section; on error show the message (``advisor_errors``) and return None."""
    with advisor_errors(where):
        return fn(*args, **kwargs)
    return None


def _seed(scenario: Scenario, view: View) -> None:
    """Put scenario/view values into the widget keys (used once per session, from the URL)."""
    doc = {**scenario.model_dump(), "view": view.model_dump()}
    for path, wkey in _K.items():
        value: Any = doc
        for part in path.split("."):
            value = value[part]
        SS[wkey] = value
    if SS[_K["hardware.intra_link"]] is None:
        SS[_K["hardware.intra_link"]] = OWN
    # The slider shows percent; the Scenario holds a fraction.
    SS[_K["sla.confidence"]] = round(scenario.sla.confidence * 100)
    SS["_view_local"] = {p.split(".")[1]: doc["view"][p.split(".")[1]] for p in PAGE_LOCAL}
    SS[LOAD_MODE_KEY] = USERS if scenario.workload.concurrent_users is not None else RATE
    if SS[_K["workload.arrival_rate_per_s"]] is None:
        SS[_K["workload.arrival_rate_per_s"]] = Workload().arrival_rate_per_s
    if SS[_K["workload.concurrent_users"]] is None:
        SS[_K["workload.concurrent_users"]] = 32


def init_from_url() -> None:
    """First run of a session: seed the widgets from the URL (defaults where it is silent)."""
    if SS.get("_seeded"):
        return
    params = {k: st.query_params.get(k, "") for k in st.query_params}
    scenario, view, warnings = scenario_from_params(params)
    dep, why = dep_from_params(params)
    if why:
        warnings.append(why)
    SS[PENDING] = dep
    _seed(scenario, view)
    SS["_url_warnings"] = warnings
    SS["_seeded"] = True


def _section(name: str, build: Any, fallback: Any) -> Any:
    """Validate one sidebar section; on failure show the message under it, use the fallback."""
    try:
        return build()
    except ValidationError as exc:
        from advisor.scenario import format_validation_error

        st.error(f"{name}: {md_escape(format_validation_error(exc))}")
    except ValueError as exc:
        st.error(f"{name}: {md_escape(exc)}")
    SS.setdefault("_invalid_sections", []).append(name)
    return fallback


@st.cache_data(max_entries=32, show_spinner=False)
def _parse_upload(data: bytes) -> tuple[dict | None, str | None, str]:
    """(config dict, model id, error message) for uploaded config.json bytes."""
    try:
        from advisor.catalog.hf import (
            HFConfigError,
            load_hf_config_bytes,
            model_from_hf_config,
        )
    except ImportError:
        return None, None, "config.json import is not available in this version"
    try:
        cfg = load_hf_config_bytes(data)
        if isinstance(cfg, dict) and isinstance(cfg.get("_name_or_path"), str):
            # The display name reaches captions, chart titles and the PDF: plain characters only.
            cfg = {**cfg, "_name_or_path": display_name(cfg["_name_or_path"])}
        spec = model_from_hf_config(cfg)
    except HFConfigError as exc:
        return None, None, md_escape(exc)
    return cfg, spec.id, ""


def _model_inputs() -> tuple[str, dict | None]:
    cat = models()
    upload = SS.get(UPLOAD_KEY)
    cfg, uploaded_id, err = (None, None, "")
    if upload is not None:
        cfg, uploaded_id, err = _parse_upload(upload.getvalue())
    st.selectbox(
        "Model",
        list(cat),
        key=_K["model"],
        format_func=lambda m: cat[m].name,
        disabled=cfg is not None,
        help="Catalog model; an uploaded config.json (below) takes precedence.",
    )
    st.file_uploader(
        "…or upload a Hugging Face config.json", type=["json"], key=UPLOAD_KEY,
        help="Architecture only (no weights). Limit 2 MB. Not carried in shared links.",
    )  # fmt: skip
    if err:
        st.error(err)
    if cfg is not None:
        st.success(f"Using the uploaded model `{uploaded_id}`; remove the file to use the catalog.")
        return uploaded_id or "uploaded", cfg
    return SS[_K["model"]], None


def _hardware_inputs() -> Hardware:
    gpus, links = accelerators(), interconnects()
    st.multiselect(
        "Accelerators (the search chooses among them)",
        list(gpus), key=_K["hardware.gpus"], format_func=lambda g: gpus[g].name,
    )  # fmt: skip
    c1, c2 = st.columns(2)
    c1.number_input("GPUs per node", 1, 72, step=1, key=_K["hardware.gpus_per_node"])
    c2.number_input("Nodes", 1, 1024, step=1, key=_K["hardware.nodes"])
    first = SS[_K["hardware.gpus"]][0] if SS[_K["hardware.gpus"]] else None
    own = f"GPU's own ({links[gpus[first].scale_up_link].name})" if first else "GPU's own"
    intra = [OWN] + [i for i, lk in links.items() if lk.scope == "intra_node"]
    st.selectbox(
        "Intra-node link", intra, key=_K["hardware.intra_link"],
        format_func=lambda i: own if i == OWN else links[i].name,
    )  # fmt: skip
    inter = [i for i, lk in links.items() if lk.scope == "inter_node"]
    st.selectbox(
        "Inter-node link", inter, key=_K["hardware.inter_link"],
        format_func=lambda i: links[i].name,
    )  # fmt: skip
    return _section(
        "Hardware",
        lambda: Hardware(
            gpus=SS[_K["hardware.gpus"]],
            gpus_per_node=SS[_K["hardware.gpus_per_node"]],
            nodes=SS[_K["hardware.nodes"]],
            intra_link=None
            if SS[_K["hardware.intra_link"]] == OWN
            else SS[_K["hardware.intra_link"]],
            inter_link=SS[_K["hardware.inter_link"]],
        ),
        Hardware(),
    )


SPEC_HELP = (
    "A draft proposes tokens; the target checks them in one step (Leviathan et al. 2023). The "
    "draft is the model's own MTP head where it ships one (DeepSeek-V3/R1, GLM-4.5), else a "
    "smaller model with the same tokenizer. The search then also tries each shape with "
    "speculative decoding (not with disaggregated pools) and keeps it where it is cheaper "
    "within the target."
)


def _released_precision(model_id: str, cfg: dict | None) -> str | None:
    """The model's released weight dtype when it was published quantized (ModelSpec)."""
    target = _draft_target(model_id, cfg)
    return target.released_weights if target is not None else None


def _draft_target(model_id: str, cfg: dict | None):
    target = models().get(model_id)
    if target is None and cfg is not None:
        from advisor.catalog.hf import model_from_hf_config

        target = model_from_hf_config(cfg)
    return target


def _draft_choices(model_id: str, cfg: dict | None) -> list[str]:
    """Drafts that share the target's tokenizer: its own MTP head first, then smaller catalog
    models (a draft with another vocabulary is never offered: advisor/catalog/drafts.py)."""
    from advisor.perf.model.speculative_sweep import compatible_drafts

    target = _draft_target(model_id, cfg)
    return [] if target is None else compatible_drafts(target)


def _set_pair_acceptance(model_id: str) -> None:
    """Draft changed: its acceptance rate becomes the pair's published figure (or the default)."""
    from advisor.catalog.drafts import MTP, default_spec_tokens
    from advisor.catalog.spec_acceptance import default_acceptance

    draft = SS[_K["options.draft_model"]]
    SS[_K["options.spec_acceptance"]] = default_acceptance(model_id, draft).acceptance
    if draft == MTP:  # the head drafts as many tokens as it has layers
        SS[_K["options.spec_tokens"]] = default_spec_tokens(model_id, draft)


def _speculative_inputs(model_id: str, cfg: dict | None) -> None:
    from advisor.catalog.spec_acceptance import default_acceptance

    on = st.toggle("Speculative decoding", key=_K["options.speculative"], help=SPEC_HELP)
    if not on:
        from advisor.catalog.drafts import has_own_head

        target = _draft_target(model_id, cfg)
        if target is not None and has_own_head(target):  # `recommend` searches it by default
            st.caption(f"{md_escape(target.name)} ships its own MTP draft head: switch "
                       "speculative decoding on to search it (the command line does by default).")  # fmt: skip
        return
    from advisor.catalog.drafts import draft_name, tokenizer_problem

    drafts = _draft_choices(model_id, cfg)
    key = _K["options.draft_model"]
    if SS.get(key) not in drafts:  # None (the default), or a draft for another target
        old, target = SS.get(key), _draft_target(model_id, cfg)
        if old in models() and target is not None:  # a link's draft with another tokenizer
            why = tokenizer_problem(target, models()[old])
            if why:
                st.caption(f"Draft {md_escape(old)} not used: {md_escape(why)}.")
        SS[key] = drafts[0] if drafts else None
        if drafts:
            _set_pair_acceptance(model_id)
    if not drafts:
        st.caption("No draft shares this model's tokenizer (no MTP head of its own, no smaller "
                   "catalog model with its vocabulary).")  # fmt: skip
        return
    target = _draft_target(model_id, cfg)
    st.selectbox(
        "Draft model", drafts, key=key, on_change=_set_pair_acceptance, args=(model_id,),
        format_func=lambda d: draft_name(target, d),
    )  # fmt: skip
    c1, c2 = st.columns(2)
    c1.number_input("Draft tokens", 1, 16, step=1, key=_K["options.spec_tokens"],
                    help="Tokens the draft proposes per step (k).")  # fmt: skip
    c2.number_input("Acceptance", 0.0, 1.0, step=0.05, format="%.2f",
                    key=_K["options.spec_acceptance"],
                    help="Probability that the target accepts one drafted token.")  # fmt: skip
    ref = default_acceptance(model_id, SS[key])
    if ref.published:
        st.caption(f"Published for this pair: {ref.acceptance:.2f} ({md_escape(ref.source)}).")
    else:
        st.caption(f"Acceptance default {ref.acceptance:.2f}: {md_escape(ref.source)}.")


def _serving_inputs(model_id: str, cfg: dict | None) -> Options:
    st.selectbox(
        "Serving engine", list(ENGINES), key=_K["options.engine"],
        format_func=lambda e: {"generic": "generic (PyTorch)", "trtllm": "TensorRT-LLM",
                               "trtllm-trt": "TensorRT-LLM < 1.0 (TRT engines)",
                               "vllm": "vLLM", "vllm-v0": "vLLM < 0.8 (V0 engine)",
                               "sglang": "SGLang"}[e],
    )  # fmt: skip
    released = _released_precision(model_id, cfg)
    if released:
        st.checkbox(
            f"Serve the released {released} weights only", key=_K["options.released_weights"],
            help=f"The model is published in {released}: that is the reference model. Untick to "
            "search the dtypes below instead (a re-quantization of the release).",
        )  # fmt: skip
    st.multiselect(
        "Allowed weight dtypes",
        list(WEIGHT_DTYPES), key=_K["options.weight_dtypes"],
        disabled=bool(released and SS.get(_K["options.released_weights"])),
    )  # fmt: skip
    st.multiselect(
        "Allowed KV-cache dtypes",
        list(KV_DTYPES), key=_K["options.kv_dtypes"],
    )  # fmt: skip
    _speculative_inputs(model_id, cfg)
    st.selectbox(
        "Redundancy", ["none", "n+1"], key=_K["options.redundancy"],
        format_func=lambda r: {"none": "none", "n+1": "N+1 (a spare replica)"}[r],
        help="N+1: every deployment carries one spare replica (one per pool, disaggregated), "
        "bought and powered but not counted in the capacity, so one GPU or replica failure "
        "keeps the SLA.",
    )  # fmt: skip
    st.caption(
        "The detail pages show one deployment: the recommended one, or another chosen on the "
        "Recommendation page."
    )
    spec = ("speculative", "draft_model", "spec_tokens", "spec_acceptance", "redundancy")
    return _section(
        "Serving",
        lambda: Options(
            engine=SS[_K["options.engine"]],
            weight_dtypes=SS[_K["options.weight_dtypes"]],
            kv_dtypes=SS[_K["options.kv_dtypes"]],
            released_weights=SS[_K["options.released_weights"]],
            **{f: SS[_K[f"options.{f}"]] for f in spec},
        ),
        Options(),
    )


def _workload_inputs() -> Workload:
    c1, c2 = st.columns(2)
    c1.number_input("Input tokens", 1, 2_000_000, step=256, key=_K["workload.isl_tokens"])
    c2.number_input("Output tokens", 1, 200_000, step=64, key=_K["workload.osl_tokens"])
    s1, s2 = st.columns(2)
    s1.number_input("Prompt-length spread (CV)", 0.0, ISL_CV_MAX, step=0.1, format="%g",
                    key=_K["workload.isl_cv"], help=ISL_CV_HELP)  # fmt: skip
    s2.number_input("Answer-length spread (CV)", 0.0, OSL_CV_MAX, step=0.1, format="%g",
                    key=_K["workload.osl_cv"], help=OSL_CV_HELP)  # fmt: skip
    mode = st.radio("Load given as", [RATE, USERS], key=LOAD_MODE_KEY, horizontal=True)
    if mode == RATE:
        st.number_input(
            "Arrival rate (requests/s)", *RATE_RANGE_PER_S, step=0.5, format="%.3g",
            key=_K["workload.arrival_rate_per_s"],
        )  # fmt: skip
    else:
        u1, u2 = st.columns(2)
        u1.number_input(
            "Concurrent users",
            1,
            1_000_000,
            step=1,
            key=_K["workload.concurrent_users"],
            help="users over the whole deployment (all its DP replicas), each sending a "
            "request, waiting for the answer, then thinking",
        )
        u2.number_input("Think time (s)", 0.0, 3600.0, step=5.0, format="%g",
                        key=_K["workload.think_time_s"], help=THINK_TIME_HELP)  # fmt: skip
    return _section(
        "Workload",
        lambda: Workload(
            isl_tokens=SS[_K["workload.isl_tokens"]],
            osl_tokens=SS[_K["workload.osl_tokens"]],
            isl_cv=SS[_K["workload.isl_cv"]],
            osl_cv=SS[_K["workload.osl_cv"]],
            arrival_rate_per_s=SS[_K["workload.arrival_rate_per_s"]] if mode == RATE else None,
            concurrent_users=SS[_K["workload.concurrent_users"]] if mode == USERS else None,
            think_time_s=SS[_K["workload.think_time_s"]],
        ),
        Workload(),
    )


def _sla_inputs() -> SLA:
    st.selectbox(
        "Percentile", [50, 90, 95, 99], key=_K["sla.percentile"], format_func=lambda p: f"P{p}"
    )
    for path, label, bounds in (
        ("sla.ttft_ms", "TTFT: time to first token (ms)", TTFT_RANGE_MS),
        ("sla.tpot_ms", "TPOT: time per output token (ms)", TPOT_RANGE_MS),
        ("sla.e2e_ms", "E2E: whole response (ms)", E2E_RANGE_MS),
    ):
        st.number_input(label, *bounds, value=None, step=10.0, format="%g",
                        placeholder="no target", key=_K[path])  # fmt: skip
    st.caption(AMBIGUITY_NOTE)
    st.slider(
        "Confidence (%)", 50, 99, step=1, key=_K["sla.confidence"],
        help="A target is met only when the upper end of the predicted percentile's range at "
        "this confidence is within it. The range comes from the model's out-of-sample error on "
        "published measurements (leave one source out), among models of the same class, and is "
        "wider for uncalibrated accelerators and engines and for mixture-of-experts models, "
        "where the model misses by more, so they need more headroom to win.",
    )  # fmt: skip
    return _section(
        "SLA",
        lambda: SLA(
            percentile=SS[_K["sla.percentile"]],
            ttft_ms=SS[_K["sla.ttft_ms"]],
            tpot_ms=SS[_K["sla.tpot_ms"]],
            e2e_ms=SS[_K["sla.e2e_ms"]],
            confidence=SS[_K["sla.confidence"]] / 100,
        ),
        SLA(),
    )


def _on_prem_changed() -> None:
    if SS[_K["cost.on_prem"]]:  # nothing is rented: the mode radio is hidden, bought it is
        SS[_K["cost.mode"]] = "purchase"


def _cost_inputs() -> Cost:
    on_prem = st.checkbox(
        "Data must stay on-prem", key=_K["cost.on_prem"], on_change=_on_prem_changed,
        help="Bought GPUs only: rental prices are hidden everywhere (pages, PDF); the cost is "
        "purchase + power + hosting.",
    )  # fmt: skip
    if on_prem:
        SS[_K["cost.mode"]] = "purchase"  # a link may say both: on-prem wins
        mode = "purchase"
    else:
        mode = st.radio(
            "GPU cost", ["purchase", "hourly"], key=_K["cost.mode"], horizontal=True,
            format_func=lambda m: {"purchase": "bought (amortised)", "hourly": "rented"}[m],
        )  # fmt: skip
    if mode == "purchase":
        st.number_input("Price per GPU (USD)", 0.0, 1e7, value=None, step=1000.0,
                        placeholder="catalog default", key=_K["cost.gpu_price_usd"])  # fmt: skip
        st.number_input("Server without GPUs (USD)", 0.0, 1e7, value=None, step=1000.0,
                        placeholder="catalog default", key=_K["cost.server_usd"],
                        help="Chassis, CPUs, memory, NICs: bought once per server. Default "
                        "$32,010: SemiAnalysis' DGX H100 bill of materials (data/prices.yaml). "
                        "Deployments are bought as whole servers.")  # fmt: skip
        st.number_input("Budget cap on the purchase (USD)", *CAPEX_RANGE_USD, value=None,
                        step=10_000.0, placeholder="no cap", key=_K["cost.max_capex_usd"],
                        help="Deployments whose servers cost more are listed with the reason, "
                        "not recommended.")  # fmt: skip
        c1, c2 = st.columns(2)
        c1.number_input("Amortisation (years)", *AMORTISATION_RANGE_YEARS, step=0.5,
                        key=_K["cost.amortisation_years"])  # fmt: skip
        c2.number_input("Utilisation (0-1)", *UTILISATION_RANGE, step=0.05, key=_K["cost.utilisation"])  # fmt: skip
        c1.number_input("PUE", 1.0, 5.0, step=0.05, key=_K["cost.pue"])
        c2.number_input("Electricity (USD/kWh)", 0.0, 10.0, step=0.01, key=_K["cost.usd_per_kwh"])  # fmt: skip
        st.number_input("Hosting (USD per kW-month)", 0.0, 10_000.0, value=None, step=10.0,
                        placeholder="catalog default", key=_K["cost.hosting_usd_per_kw_month"],
                        help="Colocation per kW of GPU power per month, power billed "
                        "separately. Default $195.94: CBRE North America Data Center Trends "
                        "H2 2025 (data/prices.yaml).")  # fmt: skip
    else:
        st.number_input("Rental (USD per GPU-hour)", 0.0, 10_000.0, value=None, step=0.25,
                        placeholder="catalog default", key=_K["cost.gpu_hour_usd"])  # fmt: skip
    return _section(
        "Cost",
        lambda: Cost(**{p.split(".")[1]: SS[_K[p]] for p in _K if p.startswith("cost.")}),
        Cost(),
    )


def _restore_hidden() -> None:
    """Put back the values of sidebar widgets that were not drawn in the last run.

    Without this, switching the load to users and back reset the arrival rate to its minimum,
    and a rented-GPU cost read the missing purchase fields (KeyError on every later run).
    """
    kept = SS.get(KEPT, {})
    for wkey in SIDEBAR_KEYS:
        if wkey not in SS and wkey in kept:
            SS[wkey] = kept[wkey]


def _keep_values() -> None:
    SS[KEPT] = {**SS.get(KEPT, {}), **{k: SS[k] for k in SIDEBAR_KEYS if k in SS}}


def sidebar() -> tuple[Scenario, View]:
    """Draw the scenario sidebar; store and return the validated Scenario and View."""
    init_from_url()
    _restore_hidden()
    SS["_invalid_sections"] = []
    with st.sidebar:
        st.header("Scenario")
        st.text_input("Scenario name", key=_K["name"], max_chars=200,
                      help="Shown in page headers, the PDF title and saved scenarios.")  # fmt: skip
        with st.expander("Model", expanded=True):
            model_id, cfg = _model_inputs()
        with st.expander("Hardware", expanded=True):
            hardware = _hardware_inputs()
        with st.expander("Serving", expanded=True):
            options = _serving_inputs(model_id, cfg)
        with st.expander("Workload", expanded=True):
            workload = _workload_inputs()
        with st.expander("Latency target (SLA)", expanded=True):
            sla = _sla_inputs()
        with st.expander("Cost", expanded=False):
            cost = _cost_inputs()
    fields = dict(name=SS[_K["name"]] or Scenario.model_fields["name"].default,
                  model=model_id, model_config_json=cfg, hardware=hardware, workload=workload,
                  sla=sla, options=options, cost=cost)  # fmt: skip
    try:
        scenario = Scenario(**fields)
    except ValidationError as exc:
        from advisor.scenario import format_validation_error

        # the message echoes what was typed (a name): shown as text, never as a link
        st.sidebar.error(f"Scenario: {md_escape(format_validation_error(exc))}")
        # only the fields at fault fall back (a bad name kept the rest: it reset every input)
        bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
        try:
            scenario = Scenario(**{k: v for k, v in fields.items() if k not in bad})
        except ValidationError:
            scenario = Scenario()
    _keep_values()
    apply_pending(scenario)
    view = view_now()
    SS["scenario"], SS["view"] = scenario, view
    return scenario, view


def current() -> tuple[Scenario, View]:
    """The scenario and view of this run (defaults when a page runs without the sidebar)."""
    return SS.get("scenario") or Scenario(), view_now()


def view_now() -> View:
    """The View: the page-local values last set on a page."""
    local = SS.get("_view_local", {})
    try:
        return View(**local)
    except ValidationError:
        return View()


def local_key(field: str) -> str:
    """Widget key of a page-local View field, restored after a page switch; pass it as key=."""
    key = _K[f"view.{field}"]
    if key not in SS:
        SS[key] = SS.get("_view_local", {}).get(field, View.model_fields[field].default)
    return key


def remember_local(field: str) -> None:
    """Store a page-local widget's value so it survives page switches and reaches the URL."""
    SS.setdefault("_view_local", {})[field] = SS[_K[f"view.{field}"]]


def show_url_warnings() -> None:
    """The warning about ignored link parameters, on the page (until the user closes the tab)."""
    warnings = SS.get("_url_warnings") or []
    if warnings:
        st.warning(
            "Some values in the link were ignored; their defaults are used instead:\n\n"
            + "\n".join(f"- {md_escape(w)}" for w in warnings)  # values come from the link
        )
    if SS.get("_invalid_sections"):
        st.warning(
            "Invalid sidebar input (see the message in the sidebar); defaults are used for: "
            + ", ".join(SS["_invalid_sections"])
        )


def sync_url() -> None:
    """Mirror the current scenario into the URL (only when it changed)."""
    scenario: Scenario | None = SS.get("scenario")
    if scenario is None:
        return
    params = scenario_to_params(scenario, view_now())
    dep = url_value(scenario)
    if dep is not None:
        params[DEP_KEY] = dep
    current = {k: st.query_params.get(k) for k in st.query_params}
    if current != params:
        st.query_params.from_dict(params)

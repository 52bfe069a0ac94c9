"""The scenario: everything a user states about a deployment question, in one versioned model.

It is the sidebar's state in the app, the ``--scenario FILE.json`` format of the CLI and the
saved-scenario format. ``schema_version`` is bumped on any incompatible change; ``load_scenario``
upgrades older versions or says exactly why it cannot.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from advisor.catalog import accelerators, interconnects, models
from advisor.catalog.drafts import DEFAULT_SPEC_TOKENS
from advisor.catalog.files import (
    MAX_JSON_DEPTH,
    loads_json,
    no_duplicate_keys,
    object_depth,
    scan_json_depth,
)
from advisor.catalog.quoting import echo, field_path, visible_name
from advisor.catalog.specs import ModelSpec

SCHEMA_VERSION = 1
#: Largest scenario JSON accepted (a scenario is a few kB; an imported config.json ~ 1-5 kB).
MAX_SCENARIO_BYTES = 1_000_000
#: Unknown keys refused; NaN/Infinity refused in every float field ("should be a finite number").
_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

Percentile = Literal[50, 90, 95, 99]
#: Serving-engine profiles (advisor.perf.model.profiles.ENGINES): "vllm" is the newest vLLM family (V1
#: engine), "vllm-v0" releases before 0.8; "trtllm" TensorRT-LLM's PyTorch backend (1.0 on),
#: "trtllm-trt" its TensorRT-engine builds.
Engine = Literal["generic", "trtllm", "trtllm-trt", "vllm", "vllm-v0", "sglang"]
#: The engine a scenario assumes unless told: vLLM (newest family), because it is what private
#: deployments run most often (issue 12), and its profile is fitted on hundreds of batched rows
#: (static batches 1-256 and offline runs, data/calibration.yaml engines.vllm.rows_batched).
#: Its serving-under-load rows (fixed concurrency, request rates) are few: answers say so
#: (EngineProfile.calibrated_under_load); the queueing model itself is validated on TensorRT-LLM
#: and SGLang load rows. "generic" (the former default) is fitted on batch-1 gpt-fast rows only.
DEFAULT_ENGINE: Engine = "vllm"
WDType = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4"]
KDType = Literal["fp16", "bf16", "fp8", "int8"]
#: How the search orders the deployments (Scenario.rank_by; search/ranking.py rank_order), in the
#: words every view uses: the Recommendation page, the PDF's scenario table, ``recommend --rank-by``.
RANKING_TEXT: dict[str, str] = {
    "cost": "price per hour (whole servers when bought), then fewest GPUs in use, then most "
    "headroom, then lowest latency",
    "gpus": "fewest GPUs in use, then price per hour, then most headroom, then lowest latency",
}
#: Default think time of a concurrent user, s (Workload.think_time_s says where it comes from).
THINK_TIME_DEFAULT_S = 15.0
#: Default P99 time to first token, ms (SLA.ttft_ms says where it comes from).
TTFT_DEFAULT_MS = 2000.0
#: Ranges shared by the Scenario, the app's sidebar widgets (ui/state.py) and the CLI's flags, so
#: a value one accepts the others accept too. The lower bounds are the widgets' (a link with
#: rate=0.0005 or capex=0.5 was accepted by the Scenario, then silently raised or dropped by the
#: widget; recommend --qps 1e-320 priced tokens at "$inf", --ttft-p99-ms 1e-320 missed by "+inf%").
RATE_RANGE_PER_S = (0.001, 1e6)
TTFT_RANGE_MS = (0.001, 3.6e6)
TPOT_RANGE_MS = (0.001, 6e4)
E2E_RANGE_MS = (0.001, 3.6e7)
AMORTISATION_RANGE_YEARS = (0.5, 20.0)
UTILISATION_RANGE = (0.01, 1.0)
CAPEX_RANGE_USD = (1.0, 1e10)


class Hardware(BaseModel):
    model_config = _STRICT

    gpus: Annotated[list[str], Field(min_length=1, max_length=16)] = ["h100-sxm"]
    gpus_per_node: Annotated[int, Field(ge=1, le=72)] = 8
    nodes: Annotated[int, Field(ge=1, le=1024)] = 1
    #: Scale-up link inside a node; None = each GPU's own (NVLink, Infinity Fabric or PCIe).
    intra_link: str | None = None
    inter_link: str = "ib-ndr"

    @model_validator(mode="after")
    def _ids(self) -> Hardware:
        known = accelerators()
        bad = [g for g in self.gpus if g not in known]
        if bad:
            raise ValueError(
                f"unknown accelerator {echo(bad[0])}; allowed: {', '.join(sorted(known))}"
            )
        links = interconnects()
        for name, link in (("intra_link", self.intra_link), ("inter_link", self.inter_link)):
            if link is not None and link not in links:
                raise ValueError(
                    f"{name}: unknown interconnect {echo(link)}; allowed: {', '.join(sorted(links))}"
                )
        if len(set(self.gpus)) != len(self.gpus):
            raise ValueError(f"gpus lists an accelerator twice: {self.gpus}")
        for name, link_id, scope in (("intra_link", self.intra_link, "intra_node"),
                                     ("inter_link", self.inter_link, "inter_node")):  # fmt: skip
            for g in self.gpus if link_id is not None else ():
                why = links[link_id].mismatch(known[g], scope)
                if why:
                    raise ValueError(f"{name}: {why}")
        return self

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes


#: Upper bound of a length's coefficient of variation: a log-normal with CV 3 already puts its
#: P99 at about 8x the mean (advisor/physics/queueing/), beyond any prompt mix we have seen.
ISL_CV_MAX = 3.0
ISL_CV_HELP = (
    "Spread of the prompt lengths: their coefficient of variation (standard deviation / mean) "
    "around the mean input tokens, drawn log-normal. 0 = every prompt the same length; 1 = "
    "lengths as spread as their mean (a few prompts several times longer). Longer prompts "
    "take longer prefills and hold more KV cache: the TTFT percentiles grow with it. Range 0 "
    f"to {ISL_CV_MAX:g}."
)
#: The same bound for the answers' lengths (a gamma with CV 3 puts its P99 at ~14x the mean).
OSL_CV_MAX = 3.0
OSL_CV_HELP = (
    "Spread of the answer lengths: their coefficient of variation around the mean output "
    "tokens, drawn gamma (a chat service's answers vary: 0.5-1 is common; a benchmark's fixed "
    "--random-output-len is 0). Longer answers decode for longer: the E2E percentiles grow with "
    "it (within 5% of the project's simulator from light load to 90% utilisation). The P99 "
    "TPOT then reads low: very short answers' per-token time is noisier than the model carries "
    "(0.83-1.10x of the simulator's at CV 0.5, 0.64-0.85x at CV 1). Range 0 to "
    f"{OSL_CV_MAX:g}."
)


class Workload(BaseModel):
    model_config = _STRICT

    isl_tokens: Annotated[int, Field(ge=1, le=2_000_000)] = 1024
    osl_tokens: Annotated[int, Field(ge=1, le=200_000)] = 256
    #: Spread of the lengths as a coefficient of variation (0 = fixed lengths); help in ISL_CV_HELP.
    isl_cv: Annotated[float, Field(ge=0, le=ISL_CV_MAX)] = 0.0
    #: Spread of the answers' lengths (0 = fixed); help in OSL_CV_HELP.
    osl_cv: Annotated[float, Field(ge=0, le=OSL_CV_MAX)] = 0.0
    #: Poisson arrival rate, requests/s; or a fixed number of concurrent users (closed loop).
    arrival_rate_per_s: (
        Annotated[float, Field(ge=RATE_RANGE_PER_S[0], le=RATE_RANGE_PER_S[1])] | None
    ) = 2.0
    concurrent_users: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    #: Think time Z of each concurrent user, s: the time between reading an answer and sending
    #: the next request (used only with ``concurrent_users``). Default 15 s: NVIDIA AIPerf docs,
    #: "User-Centric Timing for KV Cache Benchmarking" (a chatbot user "reads the response
    #: (takes ~15 seconds)"); TPC-W's emulated browsers think 7 s on average (exponential, capped
    #: at 70 s). Range 0 s (back-to-back requests, as benchmark clients send them) to 3600 s.
    #: The load is the interactive response-time law X = N / (Z + R) (Denning & Buzen 1978;
    #: Lazowska et al., "Quantitative System Performance", 1984, ch. 3).
    think_time_s: Annotated[float, Field(ge=0, le=3600)] = THINK_TIME_DEFAULT_S

    @model_validator(mode="after")
    def _load(self) -> Workload:
        if (self.arrival_rate_per_s is None) == (self.concurrent_users is None):
            raise ValueError(
                "give exactly one of arrival_rate_per_s and concurrent_users "
                f"(got {self.arrival_rate_per_s} and {self.concurrent_users})"
            )
        return self


class SLA(BaseModel):
    """Latency targets in ms at one percentile; each is optional, none means 'cheapest'."""

    model_config = _STRICT

    percentile: Percentile = 99
    #: Default P99 TTFT 2 s: the MLPerf Inference (v4.0 on) Llama 2 70B server-scenario bound
    #: (P99 TTFT <= 2 s, TPOT <= 200 ms; mlcommons/inference_policies, inference_rules.adoc).
    #: Without it the default question was answered with a 4.7 s TTFT no client would accept.
    ttft_ms: Annotated[float, Field(ge=TTFT_RANGE_MS[0], le=TTFT_RANGE_MS[1])] | None = (
        TTFT_DEFAULT_MS
    )
    tpot_ms: Annotated[float, Field(ge=TPOT_RANGE_MS[0], le=TPOT_RANGE_MS[1])] | None = 50.0
    e2e_ms: Annotated[float, Field(ge=E2E_RANGE_MS[0], le=E2E_RANGE_MS[1])] | None = None
    #: A target counts as met only when the upper end of the interval of the predicted
    #: percentile at this confidence is within it (advisor/perf/model/intervals.py).
    confidence: Annotated[float, Field(ge=0.5, le=0.99)] = 0.8

    def describe(self) -> str:
        parts = [
            f"{label} ≤ {v:,g} ms"
            for label, v in (("TTFT", self.ttft_ms), ("TPOT", self.tpot_ms), ("E2E", self.e2e_ms))
            if v is not None
        ]
        if not parts:
            return "no latency target"
        return f"P{self.percentile} " + ", ".join(parts) + f" at {self.confidence:.0%} confidence"


class Options(BaseModel):
    model_config = _STRICT

    weight_dtypes: Annotated[list[WDType], Field(min_length=1, max_length=8)] = [
        "fp16",
        "fp8",
        "int8",
        "int4",
    ]
    kv_dtypes: Annotated[list[KDType], Field(min_length=1, max_length=4)] = ["fp16", "fp8"]
    #: A model released quantized (gpt-oss's MXFP4 experts, DeepSeek/Kimi/MiniMax block FP8;
    #: ModelSpec.released_weights) is searched in that precision only: serving the checkpoint
    #: as published is the reference model, while any other dtype re-quantizes it. False: search
    #: ``weight_dtypes`` (re-quantizing is then the user's explicit choice). No effect on a model
    #: released in 16 bits (advisor/search/space.search_weights).
    released_weights: bool = True
    engine: Engine = DEFAULT_ENGINE
    max_tp: Annotated[int, Field(ge=1, le=1024)] = 64
    max_pp: Annotated[int, Field(ge=1, le=128)] = 16
    speculative: bool = False
    #: The speculative draft: a catalog model with the target's tokenizer, "mtp" (the target's
    #: own multi-token-prediction head), or None for the target's default (its own head, else
    #: the smallest catalog model with its tokenizer; advisor/catalog/drafts.py).
    draft_model: str | None = None
    spec_tokens: Annotated[int, Field(ge=1, le=16)] = DEFAULT_SPEC_TOKENS
    spec_acceptance: Annotated[float, Field(ge=0, le=1)] = 0.7
    disaggregated: bool = True
    #: Highest utilisation (offered rate / sustainable rate) a deployment may run at. Latency
    #: percentiles explode as utilisation nears 1 (Kingman: wait ~ rho / (1 - rho)) and real
    #: traffic is burstier than Poisson, so a plan without headroom fails in production.
    max_utilisation: Annotated[float, Field(gt=0.1, le=1.0)] = 0.85
    #: "n+1": every deployment carries one spare replica (one per pool, disaggregated) that is
    #: bought and powered but not counted in the capacity, so losing a replica (a GPU or server
    #: failure, a rolling upgrade) keeps the SLA. "none": no spare.
    redundancy: Literal["none", "n+1"] = "none"

    @model_validator(mode="after")
    def _draft(self) -> Options:
        from advisor.catalog.drafts import MTP

        if self.draft_model not in (None, MTP) and self.draft_model not in models():
            raise ValueError(
                f"draft_model {echo(self.draft_model)} is not a catalog model; allowed: {MTP} "
                f"(the model's own head), {', '.join(sorted(models()))}"
            )
        return self


class Cost(BaseModel):
    """How a GPU-hour is priced: amortised purchase plus power, or a rental rate."""

    model_config = _STRICT

    mode: Literal["purchase", "hourly"] = "purchase"
    #: Price per GPU (with its share of the GPU baseboard), USD; None = catalog default.
    gpu_price_usd: Annotated[float, Field(ge=0, le=10_000_000)] | None = None
    #: The host server around the GPUs (chassis, CPUs, memory, NICs), USD per server, bought
    #: once per server; None = catalog default (data/prices.yaml ``server``).
    server_usd: Annotated[float, Field(ge=0, le=10_000_000)] | None = None
    amortisation_years: Annotated[
        float, Field(ge=AMORTISATION_RANGE_YEARS[0], le=AMORTISATION_RANGE_YEARS[1])
    ] = 4.0
    utilisation: Annotated[float, Field(ge=UTILISATION_RANGE[0], le=UTILISATION_RANGE[1])] = 0.7
    pue: Annotated[float, Field(ge=1, le=5)] = 1.3
    usd_per_kwh: Annotated[float, Field(ge=0, le=10)] = 0.12
    #: Rental price per GPU-hour, USD; None = catalog default.
    gpu_hour_usd: Annotated[float, Field(ge=0, le=10_000)] | None = None
    #: Colocation of bought GPUs, USD per kW of GPU TDP per month (power billed separately);
    #: None = catalog default (data/prices.yaml hosting: CBRE H2 2025 asking rate).
    hosting_usd_per_kw_month: Annotated[float, Field(ge=0, le=10_000)] | None = None
    #: The data must stay on the client's premises: no rented (cloud) GPUs anywhere; costs are
    #: purchase, power and operations (hosting) only.
    on_prem: bool = False
    #: Most a deployment may cost to buy (whole servers), USD; above it a deployment is a
    #: result that says so, not the recommendation. None = no cap. Bought GPUs only.
    max_capex_usd: Annotated[float, Field(ge=CAPEX_RANGE_USD[0], le=CAPEX_RANGE_USD[1])] | None = (
        None
    )

    @model_validator(mode="after")
    def _on_prem(self) -> Cost:
        if self.on_prem and self.mode == "hourly":
            raise ValueError(
                "on_prem is true but mode is 'hourly' (rented GPUs): data that must stay on-prem "
                "runs on bought GPUs; set mode to 'purchase' or on_prem to false"
            )
        return self


class Scenario(BaseModel):
    """One deployment question: model, hardware, workload, SLA, options, cost."""

    model_config = _STRICT

    schema_version: Literal[1] = SCHEMA_VERSION
    name: Annotated[str, Field(max_length=200)] = "Untitled scenario"
    model: str = "llama-3.1-70b"
    #: An imported config.json (the raw dict); when set, ``model`` is its id.
    model_config_json: dict[str, Any] | None = None
    hardware: Hardware = Hardware()
    workload: Workload = Workload()
    sla: SLA = SLA()
    options: Options = Options()
    cost: Cost = Cost()
    rank_by: Literal["cost", "gpus"] = "cost"

    @field_validator("name", mode="after")
    @classmethod
    def _visible_name(cls, value: str) -> str:
        # a name printed in the PDF, the terminal and Compare: what it shows is what it is
        return visible_name(value, "name", 200, allow_empty=True)

    @model_validator(mode="after")
    def _model(self) -> Scenario:
        if self.model_config_json is None and self.model not in models():
            raise ValueError(
                f"unknown model {echo(self.model)}; allowed: {', '.join(sorted(models()))} "
                "(or an imported config.json)"
            )
        if self.model_config_json is not None:  # refused now, not when a page first uses it
            from advisor.catalog.hf import HFConfigError

            depth = object_depth(self.model_config_json)
            if depth > MAX_JSON_DEPTH:  # the limit a standalone config.json has
                raise ValueError(
                    f"model_config_json: nesting of {depth} levels is deeper than the "
                    f"{MAX_JSON_DEPTH} allowed in any config.json"
                )

            try:
                self.model_spec()
            except HFConfigError as exc:
                raise ValueError(f"model_config_json: {exc}") from None
        return self

    def model_spec(self) -> ModelSpec:
        """The model this scenario is about (catalog entry or imported config)."""
        if self.model_config_json is not None:
            from advisor.catalog.hf import model_from_hf_config

            return model_from_hf_config(self.model_config_json, model_id=self.model)
        return models()[self.model]


class ScenarioError(ValueError):
    """A scenario file that cannot be loaded; the message says where and why."""


def _upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    version = doc.get("schema_version")
    if version is None:
        raise ScenarioError("scenario has no schema_version (expected 1)")
    if type(version) is int and version == SCHEMA_VERSION:  # not 1.0, not true
        return doc
    if type(version) is int and version > SCHEMA_VERSION:
        raise ScenarioError(
            f"scenario schema_version {version} is newer than this app supports "
            f"({SCHEMA_VERSION}); update the app"
        )
    raise ScenarioError(f"scenario schema_version {echo(version)} is not supported (expected 1)")


#: Longest message kept per problem (a validator's message may quote a list of allowed ids).
MSG_CHARS = 600


def allowed_range(model: type[BaseModel], loc: Sequence[object]) -> str:
    """The range of the number field at ``loc`` under ``model``, as the CLI's flags say it
    (``1..2000000``, ``[0.001, 1e+06]``); "" for a field that is not a bounded number.

    >>> allowed_range(Scenario, ["workload", "isl_tokens"]), allowed_range(Scenario, ["sla", "tpot_ms"])
    ('1..2000000', '[0.001, 60000]')
    >>> allowed_range(Scenario, ["model"]), allowed_range(Scenario, ["nope", 3])
    ('', '')
    """
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return ""
        kinds = [field.annotation, *typing.get_args(field.annotation)]
        nested = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        if nested:
            model = nested[0]
            continue
        meta = list(field.metadata)
        for k in kinds:
            for m in getattr(k, "__metadata__", ()):
                meta += getattr(m, "metadata", [m])
        b = {a: getattr(m, a) for m in meta for a in ("ge", "gt", "le", "lt") if hasattr(m, a)}
        lo, hi = b.get("ge", b.get("gt")), b.get("le", b.get("lt"))
        if lo is None or hi is None:
            return ""
        bases = {typing.get_args(k)[0] if hasattr(k, "__metadata__") else k for k in kinds}
        if int in bases and isinstance(lo, int) and isinstance(hi, int):
            return f"{lo}..{hi}"
        return f"{'(' if 'gt' in b else '['}{lo:g}, {hi:g}{')' if 'lt' in b else ']'}"
    return ""


#: The scenario's models by the title pydantic gives their errors.
_MODELS: dict[str, type[BaseModel]] = {
    m.__name__: m for m in (Scenario, Hardware, Workload, SLA, Options, Cost)
}


def format_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """One readable line per problem: ``field.path: message (got value; allowed range)``."""
    lines = []
    model = _MODELS.get(exc.title)
    for err in exc.errors()[:10]:
        loc = field_path(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")[:MSG_CHARS]
        if not loc:  # a cross-field check: its message names the fields and values
            lines.append(f"{prefix}{msg}")
            continue
        got = err.get("input")
        shown = echo(got) if not isinstance(got, dict | list) else type(got).__name__
        rng = allowed_range(model, err["loc"]) if model is not None else ""
        lines.append(f"{prefix}{loc}: {msg} (got {shown}{f'; allowed {rng}' if rng else ''})")
    return "; ".join(lines)


def load_scenario(data: dict[str, Any] | str | bytes) -> Scenario:
    """Validate a scenario from a dict or JSON text; raises ScenarioError with a clear message."""
    if isinstance(data, bytes | str):
        if len(data) > MAX_SCENARIO_BYTES:
            raise ScenarioError(
                f"scenario file is {len(data):,} bytes; the limit is {MAX_SCENARIO_BYTES:,}"
            )
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            # one level more than a config.json: the scenario wraps an imported config
            too_deep, _ = scan_json_depth(text, MAX_JSON_DEPTH + 1)
            if too_deep is not None:
                raise ScenarioError(
                    f"scenario JSON is nested deeper than {MAX_JSON_DEPTH + 1} levels (at "
                    f"character {too_deep}); an embedded config.json may have {MAX_JSON_DEPTH}"
                )
            doc = loads_json(text.removeprefix("\ufeff"), object_pairs_hook=_no_duplicates)
        except UnicodeDecodeError:
            raise ScenarioError("scenario file is not UTF-8 text") from None
        except RecursionError:
            raise ScenarioError("scenario JSON is nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                f"scenario is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
        except ValueError as exc:  # ScenarioError (duplicate key) or an integer of > 4300 digits
            if isinstance(exc, ScenarioError):
                raise
            raise ScenarioError(f"scenario JSON has an unreadable number: {exc}") from None
    else:
        doc = data
    if not isinstance(doc, dict):
        raise ScenarioError(f"scenario must be a JSON object, got {type(doc).__name__}")
    doc = _upgrade(doc)
    try:  # strict: "1024" or true is not an integer in a file (the app's widgets give numbers)
        return Scenario.model_validate(doc, strict=True)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc)) from None


_no_duplicates = no_duplicate_keys(
    lambda key: ScenarioError(f"scenario JSON has the key {echo(key)} twice")
)


def dump_scenario(s: Scenario) -> str:
    return s.model_dump_json(indent=2)

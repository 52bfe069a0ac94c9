"""Client profiles: the shipped calibration refitted to a client's own benchmark files.

``fit_profile(imported, deployment)`` takes the cases imported from the client's files
(advisor/perf/importers), all from one deployment (model, accelerator, TP/PP, dtypes, engine),
and fits at most four constants of an :class:`~advisor.perf.model.overlay.Overlay` for that
accelerator and engine, holding everything else at data/calibration.yaml:

- ``mem_factor``: multiplier on the achieved HBM bandwidth (decode speed);
- ``compute_factor``: multiplier on the achieved tensor throughput (prefill, large batches);
- ``step_overhead_s``: the engine's fixed time per iteration;
- ``request_overhead_s``: the engine's time per request on the first token.

Identifiability (which constants the files can pin down): the constants are tried in order of
the effect a plausible change has on the predictions (10% on a factor, the shipped value, at least
1 ms, on an overhead; largest first); one is fitted only if it leaves a run to spare (k
constants need k + 1 runs, the first needs one; the TTFT, TPOT and throughput of one run count
as one run, since they share its conditions; a single run is counted by its points) and the
sensitivities of the predictions to the chosen constants stay independent (Jacobian of
log(predicted) at the shipped values, columns normalised, smallest singular value at least
``MIN_SINGULAR`` of the largest). Each constant held is listed with the reason.

Guard: a point the hardware cannot produce (faster than the roofline at the datasheet bandwidth
and peak with no overheads) is flagged with the figures and left out of the fit.

The fit minimises the sum of squared log(predicted / measured) (scipy least_squares). The
profile written records the files (name, format, SHA-256), the deployment, the constants, the
error of each point before (shipped calibration) and after, and two checks of its own content:

- ``digest``: SHA-256 of the content. Anyone can recompute it, so it detects accidents (a hand
  edit, a truncated copy, a bad merge), not tampering;
- ``signature``: HMAC-SHA256 of the same content under this installation's secret key
  (``profile-signing.key`` in the user data folder, 32 random bytes made on first use, readable
  by the user only; :func:`signing_key_path`). An edit with the digest recomputed is refused,
  and so is a profile fitted by another installation, unless the two share that key file
  (copying it is how a team trusts each other's profiles).

Accepted only if it only helps, as far as the client's runs can show (advisor/perf/calibration/
client_holdout.py): at least three runs; each run left out in turn and predicted by the profile
fitted to the others; the median of those errors at most ``required_ratio(runs)`` of the shipped
calibration's on the same points, and no run, nor any figure of a run, predicted worse than by
it by more than 2 percentage points, held out or by the profile written; no fitted constant at
its bound. Otherwise :class:`ProfileRefused` says why
in one line (with each run's figures) and nothing is written. The profile applies only inside
the deployment and the load/length ranges of its runs (advisor/perf/model/profile_range.py); outside,
predictions use the shipped calibration and say so. Duplicates (the same file twice, the same
run in two files) are counted once.

Intervals where a profile applies (its accelerator and engine): each side of the interval is
narrowed in log space by f = median |error| leaving each point out / median |error| shipped on the
client's points, clipped to [0.5, 1] (never more than halved), and never below the
largest |error| after the fit on those points: ``|ln b'| = min(|ln b|, max(f |ln b|, ln(1 + max
APE after)))``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import math
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from advisor.catalog import get_accelerator, get_model
from advisor.catalog.files import FileReadError, read_bounded
from advisor.catalog.quoting import echo, field_path
from advisor.catalog.yaml_input import YamlInputError, load_bounded_yaml
from advisor.perf.calibration.client_holdout import (
    TOLERANCE_PP,
    hurts_its_own_runs,
    judge,
    required_ratio,
    run_of,
    run_table,
    too_few_runs,
    worse_figures,
)
from advisor.perf.importers import Deployment, Imported
from advisor.perf.model.layout import layout_text
from advisor.perf.model.overlay import Overlay, active, set_global
from advisor.perf.model.profile_range import Domain, modes_of
from advisor.perf.model.profiles import (
    ENGINES,
    attention_efficiency,
    engine_profile,
    family_efficiency,
    moe_efficiency,
)
from advisor.perf.model.replica import tensor_rate
from advisor.perf.validation.measurements import Case

SCHEMA = "inference-architect/client-profile/1"
CONSTANTS = ("mem_factor", "compute_factor", "step_overhead_s", "request_overhead_s")
#: (lower, upper) of each constant; factors are fitted in log space.
BOUNDS = {
    "mem_factor": (0.25, 4.0),
    "compute_factor": (0.25, 4.0),
    "step_overhead_s": (0.0, 0.05),
    "request_overhead_s": (0.0, 0.5),
}
MIN_SINGULAR = 0.05
MAX_PROFILE_BYTES = 4 * 2**20
#: A profile is a mapping of mappings and lists of mappings: 3 levels (points.N.field); 8 is room.
MAX_PROFILE_DEPTH = 8
#: Values in a profile: about 9 per point and at most 100,000 points, plus the fixed fields.
MAX_PROFILE_NODES = 1_000_000
#: Case kinds whose measurement is a rate (higher = faster); the others are times.
RATE_KINDS = {"decode_b1", "offline", "static", "conc_tput", "load_tput"}
#: Relative closeness (in log space for the factors) at which a fitted constant sits at its bound.
AT_BOUND = 0.005


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the field."""


class ProfileRefused(ValueError):
    """Files whose points cannot make a profile better than the shipped calibration; the one-line
    message says why (nothing is written). ``points``: each point's error before, after and with
    its run left out, when the fit got that far (the app shows them)."""

    def __init__(
        self, message: str, points: list[dict] | None = None, runs: list[dict] | None = None
    ) -> None:
        super().__init__(message)
        self.points = points or []
        self.runs = runs or []  # client_holdout.run_table: each run's error shipped and held out


_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
Pct = Annotated[float, Field(ge=-1e6, le=1e6, allow_inf_nan=False)]


class DeploymentDoc(BaseModel):
    model_config = _STRICT
    model: Annotated[str, Field(min_length=1, max_length=100)]
    gpu: Annotated[str, Field(min_length=1, max_length=100)]
    gpu_family: Annotated[str, Field(min_length=1, max_length=100)]
    tp: Annotated[int, Field(ge=1, le=1024)]
    pp: Annotated[int, Field(ge=1, le=1024)]
    weights: Annotated[str, Field(min_length=1, max_length=20)]
    kv: Annotated[str, Field(min_length=1, max_length=20)]
    engine: Annotated[str, Field(min_length=1, max_length=40)]
    #: the runs' MoE layout (absent in profiles written before 2026-12-07: plain TP)
    ep: bool = False
    dp_attention: bool = False

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        if v not in ENGINES:
            raise ValueError(f"engine {v!r}; allowed: {', '.join(ENGINES)}")
        return v


class FileDoc(BaseModel):
    model_config = _STRICT
    name: Annotated[str, Field(min_length=1, max_length=300)]
    format: Annotated[str, Field(min_length=1, max_length=100)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    points: Annotated[int, Field(ge=0, le=1_000_000)]


class ConstantsDoc(BaseModel):
    model_config = _STRICT
    mem_factor: Annotated[float, Field(ge=0.25, le=4.0, allow_inf_nan=False)]
    compute_factor: Annotated[float, Field(ge=0.25, le=4.0, allow_inf_nan=False)]
    step_overhead_s: Annotated[float, Field(ge=0.0, le=0.05, allow_inf_nan=False)] | None
    request_overhead_s: Annotated[float, Field(ge=0.0, le=0.5, allow_inf_nan=False)] | None


class PointDoc(BaseModel):
    model_config = _STRICT
    id: Annotated[str, Field(min_length=1, max_length=400)]
    kind: Annotated[str, Field(min_length=1, max_length=40)]
    measured: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    unit: Annotated[str, Field(max_length=60)]
    before_pct: Pct | None
    after_pct: Pct | None
    flagged: Annotated[str, Field(max_length=400)] = ""
    #: error of the profile fitted without this point (leave one out); None: flagged, not fitted
    loo_pct: Pct | None = None


class SummaryDoc(BaseModel):
    model_config = _STRICT
    points: Annotated[int, Field(ge=0)]
    median_ape_before_pct: Pct | None
    median_ape_after_pct: Pct | None
    max_ape_after_pct: Pct | None
    #: median |error| of each point predicted by the profile fitted without it (out of sample)
    loo_median_ape_pct: Pct | None = None


Span = Annotated[list[Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)]],
                 Field(min_length=2, max_length=2)]  # fmt: skip


class ModeDoc(BaseModel):
    model_config = _STRICT
    mode: Literal["concurrency", "request rate", "static batch", "offline"]
    isl: Span
    osl: Span
    load: Span


class RunDoc(BaseModel):
    model_config = _STRICT
    run: Annotated[str, Field(min_length=1, max_length=400)]
    points: Annotated[int, Field(ge=1)]
    shipped_pct: Pct | None
    held_out_pct: Pct | None
    change_pp: Pct | None
    verdict: Literal["better", "within tolerance", "worse"]


class HoldoutDoc(BaseModel):
    """The acceptance verdict (advisor/perf/calibration/client_holdout.py): each run predicted by the
    profile fitted to the others, against the shipped calibration; and the bar it passed."""

    model_config = _STRICT
    runs: Annotated[list[RunDoc], Field(min_length=1, max_length=100_000)]
    required_ratio: Annotated[float, Field(gt=0, le=1)]
    tolerance_pp: Annotated[float, Field(ge=0, le=100)]
    verdict: Annotated[str, Field(min_length=1, max_length=2000)]


class CollectivesDoc(BaseModel):
    model_config = _STRICT
    rows: Annotated[int, Field(ge=0)]
    median_ape_pct: Pct | None
    note: Annotated[str, Field(max_length=400)]


class ProfileDoc(BaseModel):
    model_config = _STRICT
    schema_: Literal["inference-architect/client-profile/1"] = Field(alias="schema")
    name: Annotated[str, Field(min_length=1, max_length=120)]
    created: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    deployment: DeploymentDoc
    files: Annotated[list[FileDoc], Field(min_length=1, max_length=100)]
    constants: ConstantsDoc
    fitted: list[Literal["mem_factor", "compute_factor", "step_overhead_s", "request_overhead_s"]]
    held: dict[str, Annotated[str, Field(max_length=400)]]
    points: Annotated[list[PointDoc], Field(max_length=100_000)]
    summary: SummaryDoc
    collectives: CollectivesDoc | None = None
    #: where the profile applies: the deployment above and, per load mode and length class, these
    #: spans (advisor/perf/model/profile_range.py)
    range: Annotated[list[ModeDoc], Field(min_length=1, max_length=10_000)]
    holdout: HoldoutDoc
    digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    #: "hmac-sha256:" + hex; checked by parse_profile (None here so its message can say why)
    signature: Annotated[str, Field(pattern=r"^hmac-sha256:[0-9a-f]{64}$")] | None = None

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str) -> str:
        if not v.isprintable():  # it is printed on terminals and in reports: one plain line
            raise ValueError("must be printable text (no line breaks or control characters)")
        return v

    def domain(self) -> Domain:
        d = self.deployment
        modes = tuple((m.mode, tuple(m.isl), tuple(m.osl), tuple(m.load)) for m in self.range)
        return Domain(
            d.model,
            d.tp,
            d.pp,
            d.weights,
            d.kv,
            modes,  # type: ignore[arg-type]
            d.ep,
            d.dp_attention,
        )

    def overlay(self) -> Overlay:
        c = self.constants
        return Overlay(c.mem_factor, c.compute_factor, c.step_overhead_s, c.request_overhead_s,
                       domain=self.domain())  # fmt: skip


def _body(doc: dict) -> bytes:
    body = {k: v for k, v in doc.items() if k not in ("digest", "signature")}
    return json.dumps(body, sort_keys=True).encode("utf-8")


def _digest(doc: dict) -> str:
    return hashlib.sha256(_body(doc)).hexdigest()


SIGNING_KEY_FILE = "profile-signing.key"


def signing_key_path() -> Path:
    """Where this installation's profile-signing key lives (the user data folder)."""
    from advisor.catalog.user_data import data_dir

    return data_dir() / SIGNING_KEY_FILE


def _signing_key(create: bool) -> bytes | None:
    """The installation's key (made on first use when ``create``); ProfileError if unusable."""
    path = signing_key_path()
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not create:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secrets.token_hex(32) + "\n")
        except FileExistsError:  # another process made it first: use theirs
            pass
        except OSError as exc:
            raise ProfileError(
                f"cannot create the profile-signing key {path}: {exc.strerror or exc}"
            ) from None
        return _signing_key(create=False)
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read the profile-signing key {path}: {exc}") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise ProfileError(
            f"the profile-signing key {path} is damaged (expected 64 hex digits); remove it to "
            "make a new one (profiles signed with the old key are then refused)"
        )
    return key


def _hmac(doc: dict, key: bytes) -> str:
    return "hmac-sha256:" + hmac.new(key, _body(doc), hashlib.sha256).hexdigest()


def seal(doc: dict) -> dict:
    """Set ``doc``'s digest and this installation's signature (the key is made on first use)."""
    doc["digest"] = _digest(doc)
    doc["signature"] = _hmac(doc, _signing_key(create=True))  # type: ignore[arg-type]
    return doc


# --- fitting --------------------------------------------------------------------------------


def _predict(items: Sequence[Case], gpu: str, engine: str, ov: Overlay | None) -> np.ndarray:
    from advisor.perf.validation.validate import predict_cases

    with active(gpu, engine, ov):
        return predict_cases(list(items))


def _roofline_overlay(dep: Deployment) -> Overlay:
    """Datasheet bandwidth and peak (every efficiency 1), no per-step or per-request overhead.

    One factor on compute and one on memory, so each is divided by the smallest efficiency
    any kernel of the deployment runs at: its GEMM paths (16-bit, and fp8 or fp4 where its
    weights use those tensor cores), the attention kernels' fraction and, for a MoE model, the
    routed experts'. Every kernel then runs at or above its datasheet rate: a bound. With the
    attention fraction left in, a refit that lowered it (0.80 -> 0.74, late 2026-12-06) put
    TensorRT-LLM's own Llama-3.1-8B FP8 row E0660 on one H100 (13,850 tok/s) above the "bound".
    """
    gpu = get_accelerator(dep.gpu)
    fam = family_efficiency(gpu.family)
    eng = engine_profile(dep.engine)
    rate = tensor_rate(dep.weights, gpu)
    etas = [fam.eta_compute_16, fam.eta_compute_fp8]
    if rate == "fp4":
        etas.append(fam.eta_compute_fp4)
    kernels = [attention_efficiency()]
    if get_model(dep.model).is_moe:
        kernels += [moe_efficiency(False, gpu.family), moe_efficiency(True, gpu.family)]
    k = min(1.0, *kernels)
    return Overlay(
        1 / (fam.eta_mem * eng.mem_efficiency * k), 1 / (min(etas) * eng.efficiency * k), 0.0, 0.0
    )


def deployment_problem(dep: Deployment) -> str | None:
    """Why the stated deployment cannot have run at all (its weights and activation reserve do
    not fit the GPUs: ``physics.memory.memory_budget`` at the files' sequence length, else one
    token; or a MoE layout the model cannot take), or None. Files said to come from it are
    mislabelled: nothing is fitted to them."""
    from advisor.physics.memory import (
        expert_parallel_blocker,
        memory_budget,
        moe_spread_blocker,
    )

    model = get_model(dep.model)
    if dep.ep or dep.dp_attention:
        spread = moe_spread_blocker(model, dep.tp)
        blocker = spread or (expert_parallel_blocker(model, dep.tp) if dep.ep else None)
        if blocker:
            what = "expert parallel" if dep.ep else "attention data parallel"
            return f"{what} over TP={dep.tp} cannot apply to {dep.model}: {blocker}"
    tokens = max(1, int((dep.isl or 0) + (dep.osl or 0)))
    b = memory_budget(
        model, get_accelerator(dep.gpu), tp=dep.tp, pp=min(dep.pp, model.num_hidden_layers),
        weights_dtype=dep.weights, kv_dtype=dep.kv, context_tokens=tokens, suggest=False,
        attention_dp=dep.dp_attention, engine=dep.engine,
    )  # fmt: skip
    if b.fits:
        return None
    layout = layout_text(dep.tp, dep.ep, dep.dp_attention)
    return (f"{dep.model} on {dep.tp * dep.pp} x {dep.gpu} ({layout}, PP={dep.pp}, "
            f"{dep.weights} weights) cannot run: {'; '.join(b.reasons)}")  # fmt: skip


def impossible(items: Sequence[Case], dep: Deployment) -> dict[str, str]:
    """Case id -> why the hardware cannot produce it (faster than the roofline bound)."""
    bound = _predict(items, dep.gpu, dep.engine, _roofline_overlay(dep))
    out = {}
    for c, b in zip(items, bound, strict=True):
        if not np.isfinite(b):
            continue
        # Under Poisson load below capacity the model's throughput is the offered load itself,
        # which a finite run's randomness can beat by a few percent.
        slack = 1.1 if c.kind == "load_tput" else 1.0
        if c.kind in RATE_KINDS and c.measured > b * slack:
            out[c.id] = (f"{c.measured:,.4g} measured is above the roofline bound {b:,.4g} "
                         "(datasheet bandwidth and peak, no overheads)")  # fmt: skip
        elif c.kind not in RATE_KINDS and c.measured < b:
            out[c.id] = (f"{c.measured:.4g} s measured is below the roofline bound {b:.4g} s "
                         "(datasheet bandwidth and peak, no overheads)")  # fmt: skip
    return out


def _vector_overlay(names: Sequence[str], x: np.ndarray, base: Overlay) -> Overlay:
    kw = dict(base.__dict__)
    for n, v in zip(names, x, strict=True):
        kw[n] = float(math.exp(v)) if n.endswith("factor") else float(v)
    return Overlay(**kw)


def _x0(names: Sequence[str], base: Overlay) -> np.ndarray:
    return np.array([0.0 if n.endswith("factor") else getattr(base, n) for n in names])


def _identifiable(
    items: Sequence[Case], dep: Deployment, base: Overlay
) -> tuple[list[str], dict[str, str]]:
    """Constants the points pin down (see the module docstring) and why the others are held."""
    y0 = np.log(_predict(items, dep.gpu, dep.engine, base))
    cols: dict[str, np.ndarray] = {}
    weight: dict[str, float] = {}
    for n in CONSTANTS:
        x = _x0([n], base)
        step = 0.05 if n.endswith("factor") else 1e-3
        y1 = np.log(_predict(items, dep.gpu, dep.engine, _vector_overlay([n], x + step, base)))
        with np.errstate(invalid="ignore"):
            cols[n] = np.nan_to_num((y1 - y0) / step)
        # Effect of a plausible change: 10% on a factor, the shipped value (>= 1 ms) on an overhead.
        weight[n] = float(np.linalg.norm(cols[n])) * (
            0.1 if n.endswith("factor") else max(float(x[0]), 1e-3)
        )
    chosen: list[str] = []
    held: dict[str, str] = {}
    # The figures of one run (its TTFT, TPOT, throughput) share its conditions: a constant needs
    # another run, not another figure of the same run. One run alone is counted by its points.
    n_runs = len({run_of(c.id) for c in items})
    n_runs = n_runs if n_runs > 1 else len(items)
    for n in sorted(CONSTANTS, key=lambda k: -weight[k]):
        if np.max(np.abs(cols[n])) < 1e-6:
            held[n] = "no measurement depends on it"
            continue
        if len(chosen) + 1 > n_runs - 1 and len(chosen) > 0 or len(chosen) + 1 > n_runs:
            held[n] = (f"{n_runs} run{'s' if n_runs > 1 else ''} ({len(items)} points) cannot "
                       f"pin {len(chosen) + 1} constants: not identifiable")  # fmt: skip
            continue
        m = np.column_stack([cols[k] / np.linalg.norm(cols[k]) for k in [*chosen, n]])
        s = np.linalg.svd(m, compute_uv=False)
        if s[-1] < MIN_SINGULAR * s[0]:
            held[n] = f"not separable from {', '.join(chosen)} with these points"
            continue
        chosen.append(n)
    return chosen, held


@dataclass(frozen=True)
class Fit:
    doc: dict  # the profile document (validated by ProfileDoc)
    before: np.ndarray  # predicted values, shipped calibration
    after: np.ndarray
    notes: tuple[str, ...] = ()  # duplicates dropped, points left out, files' notes


def _fit(
    usable: Sequence[Case], dep: Deployment, base: Overlay, start: Overlay | None = None
) -> tuple[Overlay, list[str], dict[str, str]]:
    """Least squares in log space over the constants the points identify (module docstring);
    ``start``: where the search begins (the full fit, for the leave-one-out refits)."""
    from scipy.optimize import least_squares

    chosen, held = _identifiable(usable, dep, base)
    if not chosen:
        return base, chosen, held
    meas = np.array([c.measured for c in usable])
    lo = [math.log(BOUNDS[n][0]) if n.endswith("factor") else BOUNDS[n][0] for n in chosen]
    hi = [math.log(BOUNDS[n][1]) if n.endswith("factor") else BOUNDS[n][1] for n in chosen]
    scale = np.array([1.0 if n.endswith("factor") else 1e-3 for n in chosen])

    def fun(z: np.ndarray) -> np.ndarray:
        p = _predict(usable, dep.gpu, dep.engine, _vector_overlay(chosen, z * scale, base))
        r = np.log(p / meas)
        return np.where(np.isfinite(r), r, math.log(10.0))

    x0 = np.clip(_x0(chosen, start or base), lo, hi) / scale
    if start is not None:
        x0 = np.array([math.log(getattr(start, n)) / k if n.endswith("factor") else v
                       for n, v, k in zip(chosen, x0, scale, strict=True)])  # fmt: skip
        x0 = np.clip(x0, np.array(lo) / scale, np.array(hi) / scale)
    res = least_squares(fun, x0, bounds=(np.array(lo) / scale, np.array(hi) / scale))
    return _vector_overlay(chosen, res.x * scale, base), chosen, held


def at_bound(ov: Overlay, chosen: Sequence[str]) -> str | None:
    """The first fitted constant sitting at one of its bounds, said with the value and the bound
    (a factor at either bound, an overhead at its upper one).

    >>> at_bound(Overlay(1.0, 3.999, 0.01, 0.1), ["compute_factor"])
    'compute_factor = 3.999 is at its upper bound 4'
    >>> at_bound(Overlay(1.0, 2.0, 0.01, 0.1), ["compute_factor"]) is None
    True
    """
    for n in chosen:
        v, (lo, hi) = getattr(ov, n), BOUNDS[n]
        if n.endswith("factor"):
            near_lo, near_hi = math.log(v / lo) < AT_BOUND, math.log(hi / v) < AT_BOUND
        else:
            # An overhead of 0 is a physical value (none), not a limit the search ran into.
            near_lo, near_hi = False, hi - v < AT_BOUND * (hi - lo)
        if near_lo or near_hi:
            return f"{n} = {v:.4g} is at its {'lower' if near_lo else 'upper'} bound {lo if near_lo else hi:g}"
    return None


def _signature(c: Case) -> tuple:
    return (c.kind, c.statistic, round(c.isl, 3), round(c.osl, 3), c.batch, c.qps,
            float(f"{c.measured:.6g}"))  # fmt: skip


def dedupe(imported: Sequence[Imported]) -> tuple[list[Imported], list[str]]:
    """Each file once (by SHA-256) and each run once (same kind, lengths, load and figure): the
    same measurement twice would weigh double and make a two-point fit look exact."""
    seen_files: dict[str, str] = {}
    seen_runs: dict[tuple, str] = {}
    out, notes = [], []
    for im in imported:
        if im.sha256 in seen_files:
            notes.append(f"{im.name}: the same file as {seen_files[im.sha256]} (SHA-256 "
                         f"{im.sha256[:12]}): counted once")  # fmt: skip
            continue
        seen_files[im.sha256] = im.name
        keep = []
        for c in im.cases:
            sig = _signature(c)
            if sig in seen_runs:
                notes.append(f"{c.id}: the same run as {seen_runs[sig]}: counted once")
                continue
            seen_runs[sig] = c.id
            keep.append(c)
        out.append(replace(im, cases=keep))
    return out, notes


def leave_one_out(
    usable: Sequence[Case], dep: Deployment, base: Overlay, start: Overlay | None = None
) -> np.ndarray:
    """Each point predicted by the profile fitted to the other runs: every figure of one run
    (its TTFT, TPOT, throughput) is left out together, since they share the run's conditions and
    would otherwise vouch for each other. A single run is left out point by point."""
    out = np.full(len(usable), np.nan)
    runs = [run_of(c.id) for c in usable]
    groups = sorted(set(runs)) if len(set(runs)) > 1 else [c.id for c in usable]
    key = runs if len(set(runs)) > 1 else [c.id for c in usable]
    for g in groups:
        rest = [c for c, k in zip(usable, key, strict=True) if k != g]
        ov, _chosen, _held = _fit(rest, dep, base, start)
        idx = [i for i, k in enumerate(key) if k == g]
        out[idx] = _predict([usable[i] for i in idx], dep.gpu, dep.engine, ov)
    return out


def _abs_pct(pred: np.ndarray, items: Sequence[Case]) -> list[float]:
    """|pred / measured - 1| in %; a failed prediction is the worst error (inf), never dropped."""
    return [float(abs(p / c.measured - 1) * 100) if np.isfinite(p) and p > 0 else math.inf
            for p, c in zip(pred, items, strict=True)]  # fmt: skip


def _median(v: Sequence[float]) -> float:
    return float(np.median(v)) if v else math.nan


def fit_profile(
    imported: Sequence[Imported],
    dep: Deployment,
    name: str,
    created: str | None = None,
    min_gain: float | None = None,
    tolerance_pp: float | None = None,
) -> Fit:
    """Fit the constants the files can identify, checked out of sample; the profile document.

    Refused (:class:`ProfileRefused`, nothing to write) when: no serving point is left to fit;
    fewer than ``client_holdout.MIN_RUNS`` runs are (too few to judge out of sample); a fitted
    constant sits at its bound (the points ask for more than the model's constant can give: a
    unit error or a run the model does not describe); or, each run left out in turn and
    predicted by the profile fitted to the others, the median error is above
    ``required_ratio(runs)`` x the shipped one, or a run or one figure of a run is predicted
    worse than by the shipped calibration by more than ``TOLERANCE_PP``, held out or by the
    profile fitted to every run (advisor/perf/calibration/client_holdout.py). ``min_gain`` and
    ``tolerance_pp`` replace that ratio and tolerance, for tests of what follows a written
    profile. The profile records the verdict, each run's held-out figures, and the range it
    applies over (advisor/perf/model/profile_range.py).
    """
    why = deployment_problem(dep)
    if why:
        raise ValueError(why)
    imported, notes = dedupe(imported)
    for im in imported:
        notes += im.notes
        notes += _left_out_notes(im.left_out)
    items = [c for im in imported for c in im.cases]
    coll = [r for im in imported for r in im.collectives]
    files = ", ".join(im.name for im in imported)
    eng = engine_profile(dep.engine)
    base = Overlay(1.0, 1.0, eng.step_overhead_s, eng.request_overhead_s)
    flagged = impossible(items, dep) if items else {}
    usable = [c for c in items if c.id not in flagged]
    if not usable:
        c = _collectives(coll)
        said = (f" ({c['rows']} rows, median error {_pct_text(c['median_ape_pct'])} against the "
                f"{c['note'].split('; ')[0].replace('all-reduce rows checked against the ', '')})"
                if c else "")  # fmt: skip
        hosts = next((n.split(": ", 1)[1] for n in notes if " hosts (" in n), "")
        said += f"; {hosts}" if hosts else ""
        why = (f"only all-reduce rows{said}: no serving constant depends on them" if coll and not items
               else "no steady-state serving point to fit" if not items
               else "every point is faster than the hardware allows (see the flagged points)")  # fmt: skip
        raise ProfileRefused(f"{files}: {why}; no profile written")
    if len(usable) < 2:
        raise ProfileRefused(
            f"{files}: one serving point ({usable[0].id}) cannot be checked out of sample (a fit "
            "always meets its only point); give three runs or more; no profile written"
        )
    n_runs = len({run_of(c.id) for c in usable})
    few = too_few_runs(n_runs, len(usable))
    if few:
        raise ProfileRefused(f"{files}: {few}; no profile written")
    ov, chosen, held = _fit(usable, dep, base)
    bound = at_bound(ov, chosen)
    if bound:
        raise ProfileRefused(
            f"{files}: {bound}: the points ask for more than that constant can give (a unit "
            "error, or runs the model does not describe); no profile written"
        )
    if not chosen:
        raise ProfileRefused(
            f"{files}: no constant can be fitted ({'; '.join(f'{k}: {v}' for k, v in held.items())}); no profile written"
        )
    before = _predict(items, dep.gpu, dep.engine, None)
    after = _predict(items, dep.gpu, dep.engine, ov)
    kept = [i for i, c in enumerate(items) if c.id not in flagged]  # ``usable``, in order
    shipped = _abs_pct(before[kept], usable)
    loo_pred = leave_one_out(usable, dep, base, ov)
    loo = _abs_pct(loo_pred, usable)
    ratio = required_ratio(n_runs) if min_gain is None else min_gain
    tol = TOLERANCE_PP if tolerance_pp is None else tolerance_pp
    rows = run_table([c.id for c in usable], loo, shipped, tol)
    loo_by_id = {c.id: v for c, v in zip(usable, loo_pred, strict=True)}

    def pct(p: float, m: float) -> float | None:
        return float(round((p / m - 1) * 100, 2)) if np.isfinite(p) and p > 0 else None

    points = [
        dict(id=c.id, kind=c.kind, measured=float(c.measured), unit=c.unit,
             before_pct=pct(b, c.measured), after_pct=pct(a, c.measured),
             flagged=flagged.get(c.id, ""),
             loo_pct=pct(loo_by_id[c.id], c.measured) if c.id in loo_by_id else None)
        for c, b, a in zip(items, before, after, strict=True)
    ]  # fmt: skip
    why, verdict = judge(rows, _median(loo), _median(shipped), ratio, tol)
    aft = _abs_pct(after[kept], usable)
    why = why or hurts_its_own_runs(run_table([c.id for c in usable], aft, shipped, tol), tol)
    # Rules 3 and 4 for each figure as well: a run's mean can improve while one of its figures
    # (the one a user reads) gets worse (client_holdout.worse_figures).
    labels = [f"{c.id} ({c.statistic})" for c in usable]
    why = why or worse_figures(labels, loo, shipped, "held out", tol)
    why = why or worse_figures(labels, aft, shipped, "in sample", tol)
    if why:
        pinned = f" ({'; '.join(chosen)} fitted)"
        raise ProfileRefused(f"{files}: {why}{pinned}; no profile written", points, rows)
    verdict += f"; no figure of a run worse by more than {tol:g} pp, held out or in sample"

    def med(v: list[float]) -> float | None:
        m = _median(v)
        return round(m, 2) if math.isfinite(m) else None

    collectives = _collectives(coll)
    g = get_accelerator(dep.gpu)
    doc = {
        "schema": SCHEMA,
        "name": name,
        "created": created or _dt.date.today().isoformat(),
        "deployment": dict(model=dep.model, gpu=dep.gpu, gpu_family=g.family, tp=dep.tp, pp=dep.pp,
                           weights=dep.weights, kv=dep.kv, engine=dep.engine, ep=dep.ep,
                           dp_attention=dep.dp_attention),
        "files": [dict(name=im.name, format=im.format, sha256=im.sha256,
                       points=len(im.cases) + len(im.collectives)) for im in imported],
        "constants": dict(
            mem_factor=float(ov.mem_factor), compute_factor=float(ov.compute_factor),
            step_overhead_s=float(ov.step_overhead_s) if "step_overhead_s" in chosen else None,
            request_overhead_s=float(ov.request_overhead_s) if "request_overhead_s" in chosen else None,
        ),
        "fitted": chosen,
        "held": dict(held),
        "points": points,
        "summary": dict(points=len(usable), median_ape_before_pct=med(shipped),
                        median_ape_after_pct=med(aft),
                        max_ape_after_pct=float(round(max(aft), 2)) if math.isfinite(max(aft)) else None,
                        loo_median_ape_pct=med(loo)),
        "collectives": collectives,
        "range": [dict(mode=m, isl=[float(v) for v in si], osl=[float(v) for v in so],
                       load=[float(v) for v in sl])
                  for m, si, so, sl in modes_of((c.kind, c.isl, c.osl, _load(c)) for c in usable)],
        "holdout": dict(runs=rows, required_ratio=round(ratio, 4), tolerance_pp=tol,
                        verdict=verdict),
    }  # fmt: skip
    try:
        seal(doc)
    except ProfileError as exc:  # no usable signing key (an unwritable data folder)
        raise ProfileRefused(f"{files}: {exc}; no profile written") from None
    try:
        ProfileDoc.model_validate(doc)
    except ValidationError as exc:  # a value outside the profile format's bounds: name it
        e = exc.errors()[0]
        raise ProfileRefused(
            f"{files}: field '{_field_of(e)}' of the profile would be {echo(e.get('input'))}: "
            f"{e['msg']}; no profile written"
        ) from None
    return Fit(doc, before, after, tuple(notes))


def predict_within(items: Sequence[Case], doc: ProfileDoc) -> tuple[np.ndarray, list[str | None]]:
    """Each case predicted as a user of the profile sees it: its replica built with the case's
    workload (advisor/perf/model/replica.applied: the profile inside its range, the shipped
    calibration outside), and why not where it does not apply."""
    from advisor.perf.model.profile_range import MODE_OF_KIND, Work
    from advisor.perf.model.replica import profile_problem

    d = doc.deployment
    items = [
        replace(c, config=replace(c.config, work=Work(c.isl, c.osl, MODE_OF_KIND.get(c.kind, c.kind),
                                                      _load(c))))
        for c in items
    ]  # fmt: skip
    with active(d.gpu, d.engine, doc.overlay()):
        why = [profile_problem(c.config) for c in items]
    return _predict(items, d.gpu, d.engine, doc.overlay()), why


def _load(c: Case) -> float:
    """A point's load per replica: its request rate under load, else its concurrency or batch."""
    return c.qps if c.kind.startswith("load_") else c.batch


def _left_out_notes(left_out: Sequence[tuple[str, str]]) -> list[str]:
    """One note per reason: 'a: left out: why', or 'a, b (2 points): left out: why'.

    >>> _left_out_notes([("f:1:itl", "no TPOT"), ("f:2:itl", "no TPOT"), ("f:run", "a burst")])
    ['f:1:itl, f:2:itl (2 points): left out: no TPOT', 'f:run: left out: a burst']
    """
    by_why: dict[str, list[str]] = {}
    for pid, why in left_out:
        by_why.setdefault(why, []).append(pid)
    return [
        f"{ids[0]}: left out: {why}" if len(ids) == 1
        else f"{', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''} ({len(ids)} points): left out: {why}"
        for why, ids in by_why.items()
    ]  # fmt: skip


def _collectives(coll: Sequence) -> dict | None:
    """The all-reduce rows compared with the shipped collectives model (not fitted)."""
    if not coll:
        return None
    from advisor.perf.validation.collectives import validate_collectives

    errs = [v.abs_pct_error for v in validate_collectives(coll) if v.abs_pct_error is not None]
    m = _median(errs)
    links = sorted({r.link_id for r in coll if r.link_id})
    return dict(
        rows=len(coll), median_ape_pct=round(m, 2) if math.isfinite(m) else None,
        note=f"all-reduce rows checked against the shipped collectives model over "
        f"{', '.join(links)}; not fitted (its constants are shared by every link of a kind)",
    )  # fmt: skip


def _pct_text(v: float | None) -> str:
    """A percentage for a sentence; a failed prediction says so instead of 'None%'.

    >>> _pct_text(12.345), _pct_text(None), _pct_text(float("inf"))
    ('12.3%', 'n/a (a prediction failed)', 'n/a (a prediction failed)')
    """
    if v is None or not math.isfinite(v):
        return "n/a (a prediction failed)"
    return f"{v:.1f}%"


def dump(doc: dict) -> str:
    header = (
        "# Client profile written by `python -m advisor calibrate --from ...` "
        "(advisor/perf/calibration/client_profile.py).\n"
        "# Do not edit: the digest and this installation's signature cover every field; an\n"
        "# edited profile, or one signed by another installation, is refused.\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False, width=100)


# --- reading and applying -------------------------------------------------------------------


def _field_of(err: dict) -> str:
    return field_path(err["loc"]).replace("schema_", "schema") or "(top level)"


def parse_profile(text: str, name: str) -> ProfileDoc:
    """A profile's text, validated strictly; a refusal names the file and the field."""
    if len(text) > MAX_PROFILE_BYTES:  # text from the app's upload: the file's bound
        raise ProfileError(f"{name}: {len(text):,} characters; the limit is {MAX_PROFILE_BYTES:,}")
    try:
        raw = load_bounded_yaml(text, max_depth=MAX_PROFILE_DEPTH, max_nodes=MAX_PROFILE_NODES)
    except YamlInputError as exc:
        raise ProfileError(f"{name}: {exc}") from None
    if not isinstance(raw, dict):
        raise ProfileError(
            f"{name}: not a client profile (expected a mapping with 'schema: {SCHEMA}')"
        )
    if raw.get("schema") != SCHEMA:
        raise ProfileError(
            f"{name}: field 'schema' is {str(raw.get('schema'))[:60]!r}; expected {SCHEMA!r}"
        )
    for key in ("holdout", "range"):
        if key not in raw:
            raise ProfileError(
                f"{name}: field '{key}' is missing: the profile was written before profiles were "
                "judged on runs held out and kept to their range; refit it with python -m "
                "advisor calibrate --from"
            )
    try:
        doc = ProfileDoc.model_validate(raw)
    except ValidationError as exc:
        e = exc.errors()[0]
        got = e.get("input")
        shown = "" if isinstance(got, dict | list) else f" (got {echo(got)})"
        raise ProfileError(
            f"{name}: field '{_field_of(e)}': {e['msg'].removeprefix('Value error, ')}{shown}"
        ) from None
    if _digest(raw) != doc.digest:
        raise ProfileError(
            f"{name}: field 'digest' does not match the profile's content (edited after it was "
            "written?); refit it with python -m advisor calibrate --from"
        )
    _check_signature(raw, doc, name)
    return doc


def _check_signature(raw: dict, doc: ProfileDoc, name: str) -> None:
    """Refuse a profile this installation did not sign (module docstring: digest and signature)."""
    refit = "refit it here from the client's files with python -m advisor calibrate --from"
    if doc.signature is None:
        raise ProfileError(f"{name}: field 'signature' is missing (an unsigned profile); {refit}")
    key = _signing_key(create=False)
    if key is None or not hmac.compare_digest(_hmac(raw, key), doc.signature):
        raise ProfileError(
            f"{name}: field 'signature' does not verify with this installation's key "
            f"({signing_key_path()}): the profile was signed by another installation, or edited "
            f"and its digest recomputed; {refit}, or give both installations the same key file"
        )


def read_profile(path: str | Path) -> ProfileDoc:
    name = Path(path).name
    try:
        data = read_bounded(path, MAX_PROFILE_BYTES)
    except FileReadError as exc:
        raise ProfileError(f"{name}: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(f"{name}: not UTF-8 text") from None
    return parse_profile(text, name)


def check_applies(doc: ProfileDoc, gpu_id: str, engine: str) -> None:
    """Refuse a profile fitted on another accelerator or engine."""
    d = doc.deployment
    if (d.gpu, d.engine) != (gpu_id, engine):
        raise ProfileError(
            f"profile {doc.name!r} was fitted on {d.gpu} with {d.engine}; it cannot be applied to "
            f"{gpu_id} with {engine}"
        )


def activate(doc: ProfileDoc) -> None:
    """Use the profile's constants for its accelerator and engine from now on (a CLI run)."""
    set_global(doc.deployment.gpu, doc.deployment.engine, doc.overlay())


def summary(doc: ProfileDoc) -> dict:
    """What a result says about the profile it used."""
    s = doc.summary
    return {
        "name": doc.name,
        "digest": doc.digest[:12],
        "gpu": doc.deployment.gpu,
        "engine": doc.deployment.engine,
        "files": [f.name for f in doc.files],
        "fitted": list(doc.fitted),
        "points": s.points,
        "median_ape_before_pct": s.median_ape_before_pct,
        "median_ape_after_pct": s.median_ape_after_pct,
        "max_ape_after_pct": s.max_ape_after_pct,
        "loo_median_ape_pct": s.loo_median_ape_pct,
        "range": doc.domain().text(),
        "verdict": doc.holdout.verdict,
    }


def describe(doc: ProfileDoc) -> dict:
    """The ``client_profile`` block of a result: which profile, what it fitted, its residuals,
    and the interval rule."""
    f, floor = narrowing(doc)
    return {
        **summary(doc),
        "intervals": (
            f"narrowed on {doc.deployment.gpu} with {doc.deployment.engine}: log half-widths x "
            f"{f:.2f} (median error leaving each point out / shipped on the profile's points, within "
            "[0.5, 1]), "
            f"never below ln(1 + {doc.summary.max_ape_after_pct or 0:.1f}%)"
        ),
    }


def narrowing(doc: ProfileDoc) -> tuple[float, float]:
    """(f, floor): log half-widths become min(|ln b|, max(f |ln b|, floor)) (module docstring)."""
    s = doc.summary
    # Out of sample when the profile has it (leave one out), else the in-sample figure.
    after = s.loo_median_ape_pct if s.loo_median_ape_pct is not None else s.median_ape_after_pct
    if not s.median_ape_before_pct or after is None or s.max_ape_after_pct is None:
        return 1.0, 0.0
    f = min(1.0, max(0.5, after / s.median_ape_before_pct))
    return f, math.log1p(s.max_ape_after_pct / 100)


def narrow(bounds: Sequence[float], point: float, f: float, floor: float) -> list[float]:
    """[low, high] around ``point`` narrowed by the rule of :func:`narrowing`.

    >>> narrow([80.0, 125.0], 100.0, 0.5, 0.05)  # halved in log space: 100 e^(-0.1116), e^0.1116
    [89.44, 111.8]
    """
    if point <= 0 or not all(b > 0 for b in bounds):
        return list(bounds)
    out = []
    for b in bounds:
        w = abs(math.log(b / point))
        w2 = min(w, max(f * w, floor))
        out.append(round(point * math.exp(math.copysign(w2, math.log(b / point))), 2))
    return out

"""Scenario <-> URL query parameters: the one place that names the short URL keys.

A link reproduces the sidebar exactly: ``scenario_to_params`` writes every field listed in
``URL_KEYS``; ``scenario_from_params`` reads them back, ignoring (with a warning naming the field,
the value and why) any value that does not validate, and keeps the default for that field only.
Pure Python (no streamlit) so the round trip is unit-tested.

Fields not listed (speculative-decoding options, scenario name, ranking) keep their defaults in a
link. The deployment in focus, when it is not the recommended one, travels as ``dep`` in its
text form (advisor/search/deployment_spec.py); ``dep_from_params`` reads it. An uploaded config.json cannot travel in a link: the link names its id, which then fails as
an unknown model and falls back to the default with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.catalog.quoting import echo
from advisor.scenario import Scenario, allowed_range


class View(BaseModel):
    """Settings of the single-deployment pages that are not part of the Scenario or of the
    deployment in focus (ui/focus.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    block_size: Literal[16, 32, 64] = 16
    #: Sequences in flight on one replica; None = derived from the scenario's load.
    concurrency: Annotated[int, Field(ge=1, le=100_000)] | None = None
    #: Tokens a contiguous allocator reserves per sequence; None = the model's maximum context.
    max_model_len: Annotated[int, Field(ge=16, le=16_777_216)] | None = None


#: Field path -> URL key. "view.*" are View fields; the rest are Scenario fields.
URL_KEYS: dict[str, str] = {
    "name": "name",
    "model": "m",
    "hardware.gpus": "g",
    "hardware.gpus_per_node": "gpn",
    "hardware.nodes": "n",
    "hardware.intra_link": "il",
    "hardware.inter_link": "xl",
    "options.engine": "eng",
    "options.weight_dtypes": "wd",
    "options.kv_dtypes": "kd",
    "options.released_weights": "rw",
    "workload.isl_tokens": "in",
    "workload.osl_tokens": "out",
    "workload.isl_cv": "icv",
    "workload.osl_cv": "ocv",
    "workload.arrival_rate_per_s": "rate",
    "workload.concurrent_users": "users",
    "workload.think_time_s": "think",
    "options.speculative": "sd",
    "options.draft_model": "draft",
    "options.spec_tokens": "k",
    "options.spec_acceptance": "acc",
    "sla.percentile": "p",
    "sla.ttft_ms": "ttft",
    "sla.tpot_ms": "tpot",
    "sla.e2e_ms": "e2e",
    "sla.confidence": "conf",
    "cost.mode": "cm",
    "cost.gpu_price_usd": "price",
    "cost.amortisation_years": "yrs",
    "cost.utilisation": "util",
    "cost.pue": "pue",
    "cost.usd_per_kwh": "kwh",
    "cost.gpu_hour_usd": "hr",
    "cost.hosting_usd_per_kw_month": "host",
    "cost.server_usd": "srv",
    "cost.on_prem": "prem",
    "cost.max_capex_usd": "capex",
    "options.redundancy": "red",
    "view.block_size": "bs",
    "view.concurrency": "c",
    "view.max_model_len": "ml",
}

#: How an absent (None) value is written; intra_link None means "each GPU's own link".
#: options.redundancy is never None and "none" is one of its values (no spare replica).
NONE_TOKENS: dict[str, str] = {"hardware.intra_link": "own", "options.redundancy": "(unset)"}
_LISTS = {"hardware.gpus", "options.weight_dtypes", "options.kv_dtypes"}
_INTS = {
    "hardware.gpus_per_node", "hardware.nodes", "workload.isl_tokens", "workload.osl_tokens",
    "workload.concurrent_users", "sla.percentile", "view.block_size", "options.spec_tokens",
    "view.concurrency", "view.max_model_len",
}  # fmt: skip
_FLOATS = {
    "workload.arrival_rate_per_s", "workload.think_time_s", "workload.isl_cv", "workload.osl_cv", "sla.ttft_ms", "sla.tpot_ms",
    "sla.e2e_ms", "sla.confidence",
    "cost.gpu_price_usd", "cost.amortisation_years", "cost.utilisation", "cost.pue",
    "cost.usd_per_kwh", "cost.gpu_hour_usd", "cost.hosting_usd_per_kw_month",
    "options.spec_acceptance", "cost.server_usd", "cost.max_capex_usd",
}  # fmt: skip
_BOOLS = {"options.speculative", "options.released_weights", "cost.on_prem"}
#: Fields that must change together (the load is a rate or a number of users, never both).
_GROUPS: tuple[tuple[str, ...], ...] = (
    ("workload.arrival_rate_per_s", "workload.concurrent_users"),
)
MAX_VALUE_CHARS = 300
#: URL key of the deployment in focus (absent: the recommended one).
DEP_KEY = "dep"


def _allowed(path: str) -> str:
    """ " (allowed 1..2000000)" for a number field's path, as the CLI and scenario files say it.

    >>> _allowed("workload.isl_tokens"), _allowed("view.concurrency"), _allowed("model")
    (' (allowed 1..2000000)', ' (allowed 1..100000)', '')
    """
    model, loc = (View, [path[5:]]) if path.startswith("view.") else (Scenario, path.split("."))
    rng = allowed_range(model, loc)
    return f" (allowed {rng})" if rng else ""


def _none_token(path: str) -> str:
    return NONE_TOKENS.get(path, "none")


def _get(doc: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        doc = doc[part]
    return doc


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        doc = doc[part]
    doc[last] = value


def _fmt(path: str, value: Any) -> str:
    if value is None:
        return _none_token(path)
    if path in _LISTS:
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def _parse(path: str, text: str) -> Any:
    """The typed value of one URL value; ValueError says what was expected."""
    text = text.strip()
    if text.lower() == _none_token(path) and path not in _LISTS and path != "name":
        return None
    if path in _LISTS:
        return [t.strip() for t in text.split(",") if t.strip()]
    if path in _BOOLS:
        if text.lower() in ("1", "true", "on"):
            return True
        if text.lower() in ("0", "false", "off"):
            return False
        raise ValueError("not a switch (1 or 0)")
    if path in _INTS:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"not an integer (or '{_none_token(path)}')") from None
    if path in _FLOATS:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"not a number (or '{_none_token(path)}')") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("not a finite number")
        return value
    return text


def _docs(scenario: Scenario, view: View) -> dict[str, Any]:
    return {**scenario.model_dump(), "view": view.model_dump()}


def scenario_to_params(scenario: Scenario, view: View) -> dict[str, str]:
    """Every URL key with its value as text."""
    doc = _docs(scenario, view)
    return {key: _fmt(path, _get(doc, path)) for path, key in URL_KEYS.items()}


def _validate(doc: dict[str, Any]) -> tuple[Scenario, View]:
    d = dict(doc)
    view = View.model_validate(d.pop("view"))
    return Scenario.model_validate(d), view


def _why(exc: ValidationError) -> str:
    errs = exc.errors()
    return "; ".join(e["msg"].removeprefix("Value error, ") for e in errs[:3])


def _confidence_step(path: str, doc: dict, raw: str) -> str | None:
    """The confidence rounded to the control's whole percents, and a warning saying so: the
    sidebar shows percent in steps of 1, so ``conf=0.555`` became 56% without a word."""
    value = _get(doc, path) if path == "sla.confidence" else None
    if value is None or abs(round(value * 100) - value * 100) < 1e-9:  # 0.57 * 100 = 56.99...
        return None
    _set(doc, path, round(value * 100) / 100)
    return (f"{path} ({URL_KEYS[path]}={echo(raw)}): rounded to {_get(doc, path):g}, since the "
            "confidence control takes whole percents")  # fmt: skip


def scenario_from_params(
    params: Mapping[str, str], base: tuple[Scenario, View] | None = None
) -> tuple[Scenario, View, list[str]]:
    """Scenario and View from URL parameters, plus one warning per value that was ignored.

    Starts from ``base`` (defaults when None) and applies each field (or group) in turn; a value
    that does not parse or validate is ignored and the field keeps the base value.
    """
    scenario, view = base if base is not None else (Scenario(), View())
    doc = _docs(scenario, view)
    warnings: list[str] = []
    known = set(URL_KEYS.values()) | {DEP_KEY}
    for key in params:
        if key not in known:
            warnings.append(
                f"ignored unknown parameter {echo(key)} (known: {', '.join(sorted(known))})"
            )
    grouped = {p for g in _GROUPS for p in g}
    units = list(_GROUPS) + [(p,) for p in URL_KEYS if p not in grouped]
    for unit in units:
        present = [p for p in unit if URL_KEYS[p] in params]
        if not present:
            continue
        trial = _copy(doc)
        bad = False
        if len(unit) > 1:  # a group: fields it does not mention become None (the other mode)
            for p in unit:
                _set(trial, p, None)
        for p in present:
            raw = str(params[URL_KEYS[p]])
            if len(raw) > MAX_VALUE_CHARS:
                warnings.append(
                    f"{p} ({URL_KEYS[p]}=…): ignored, value longer than {MAX_VALUE_CHARS} "
                    f"characters; kept {_fmt(p, _get(doc, p))}"
                )
                bad = True
                break
            try:
                _set(trial, p, _parse(p, raw))
            except ValueError as exc:
                warnings.append(
                    f"{p} ({URL_KEYS[p]}={raw!r}): ignored, {exc}{_allowed(p)}; "
                    f"kept {_fmt(p, _get(doc, p))}"
                )
                bad = True
                break
        if bad:
            continue
        try:
            _validate(trial)
        except ValidationError as exc:
            shown = ", ".join(f"{URL_KEYS[p]}={params[URL_KEYS[p]]!r}" for p in present)
            kept = ", ".join(f"{URL_KEYS[p]}={_fmt(p, _get(doc, p))}" for p in unit)
            allowed = "".join(_allowed(p) for p in present)
            warnings.append(
                f"{' / '.join(unit)} ({shown}): ignored, {_why(exc)}{allowed}; kept {kept}"
            )
            continue
        # after the range check: an allowed value rounds to an allowed one (0.994 to 0.99)
        warnings += filter(None, (_confidence_step(p, trial, params[URL_KEYS[p]]) for p in present))
        doc = trial
    scenario, view = _validate(doc)
    return scenario, view, warnings


def _copy(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: _copy(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v)
            for k, v in doc.items()}  # fmt: skip


def dep_from_params(params: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(deployment text, None), or (None, warning naming the value and why) for ``dep``.

    >>> dep_from_params({"dep": "h100-sxm.tp4.pp1.dp2.fp8.fp8"})
    ('h100-sxm.tp4.pp1.dp2.fp8.fp8', None)
    >>> dep_from_params({"dep": "h100-sxm.tp4"})[1][:40]
    "dep ('h100-sxm.tp4'): ignored, deploymen"
    """
    from advisor.search.deployment_spec import DeploymentSpecError, parse_spec

    raw = params.get(DEP_KEY)
    if raw is None or not str(raw).strip():
        return None, None
    raw = str(raw)
    if len(raw) > MAX_VALUE_CHARS:
        return (
            None,
            f"dep: ignored, value longer than {MAX_VALUE_CHARS} characters; kept the recommended deployment",
        )
    try:
        return str(parse_spec(raw)), None
    except DeploymentSpecError as exc:
        return None, f"dep ({raw!r}): ignored, {exc}; kept the recommended deployment"

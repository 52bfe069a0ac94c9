"""One deployment, named: accelerator, TP/PP/DP, dtypes, speculative decoding, disaggregated pools.

``DeploymentSpec`` is what the search's deployments carry (``Deployment.spec``) and what a user
sets by hand; ``advisor/search/focus.py`` evaluates one for a scenario. Its compact text form
(for a URL or a command line) is dot-separated tokens in a fixed order::

    <accelerator>.tp<N>.pp<N>.dp<N>[.ep<N>][.dpa<N>][.ptp<N>.pdp<N>[.pep<N>][.pdpa<N>]]
        .<weight dtype>.<KV dtype>[.spec]

``h100-sxm.tp4.pp1.dp2.fp8.fp8``: two replicas of TP=4 on H100 SXM, fp8 weights and KV cache.
A disaggregated deployment names its decode pool with tp/dp (PP = 1) and its prefill pool with
ptp/pdp: ``mi300x.tp4.pp1.dp1.ptp2.pdp3.fp8.fp16``. ``.spec`` turns speculative decoding on;
the draft model, draft length and acceptance rate are the scenario's (``options``).
A mixture-of-experts replica's layout: ``.ep<N>`` expert parallelism and ``.dpa<N>`` attention
data parallel over its TP GPUs (N = TP; ``deepseek-r1`` on 8 GPUs as "DEP8":
``h200-sxm.tp8.pp1.dp1.ep8.dpa8.fp8.fp8``); ``.pep<N>``/``.pdpa<N>`` the prefill pool's.
Pure Python; the accelerator id is checked against the catalog; whether the model has experts
that EP divides is checked with the scenario (``layout_problems``).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES, accelerators
from advisor.perf.model.layout import layout_text
from advisor.scenario import KDType, WDType

#: Bounds of the integer fields (the search's: options.max_tp, max_pp; DP up to 100,000).
BOUNDS: dict[str, tuple[int, int]] = {
    "tp": (1, 1024), "pp": (1, 128), "dp": (1, 100_000), "ptp": (1, 1024), "pdp": (1, 100_000),
    "ep": (1, 1024), "dpa": (1, 1024), "pep": (1, 1024), "pdpa": (1, 1024),
}  # fmt: skip
_KEYED = re.compile(r"^(tp|pp|dp|ptp|pdp|ep|dpa|pep|pdpa)(\d{1,7})$")
#: Text key -> field name.
_FIELD = {"ptp": "prefill_tp", "pdp": "prefill_dp", "pep": "prefill_ep", "pdpa": "prefill_dpa"}
SPEC_FLAG = "spec"


class DeploymentSpecError(ValueError):
    """A deployment string or field that does not validate (the message names field and value)."""


class DeploymentSpec(BaseModel):
    """A chosen deployment (before its behaviour under load is known)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    gpu: str
    tp: Annotated[int, Field(ge=1, le=1024)]
    pp: Annotated[int, Field(ge=1, le=128)] = 1
    dp: Annotated[int, Field(ge=1, le=100_000)] = 1
    weights: WDType
    kv: KDType
    speculative: bool = False
    #: Disaggregated serving: the prefill pool (TP, replicas); tp/dp are then the decode pool's.
    prefill_tp: Annotated[int, Field(ge=1, le=1024)] | None = None
    prefill_dp: Annotated[int, Field(ge=1, le=100_000)] | None = None
    #: MoE layout of a (decode-pool) replica: expert parallelism and attention data parallel
    #: over its TP GPUs (1 = off, else = TP); ``prefill_*`` the prefill pool's.
    ep: Annotated[int, Field(ge=1, le=1024)] = 1
    dpa: Annotated[int, Field(ge=1, le=1024)] = 1
    prefill_ep: Annotated[int, Field(ge=1, le=1024)] = 1
    prefill_dpa: Annotated[int, Field(ge=1, le=1024)] = 1

    @model_validator(mode="after")
    def _check(self) -> DeploymentSpec:
        known = accelerators()
        if self.gpu not in known:
            raise ValueError(f"gpu: unknown accelerator {self.gpu!r}; allowed: {', '.join(known)}")
        if (self.prefill_tp is None) != (self.prefill_dp is None):
            raise ValueError(
                f"prefill_tp ({self.prefill_tp}) and prefill_dp ({self.prefill_dp}): give both "
                "(disaggregated) or neither (aggregated)"
            )
        if self.disaggregated and self.pp != 1:
            raise ValueError(f"pp: disaggregated pools run at PP = 1 (got {self.pp})")
        if self.disaggregated and self.speculative:
            raise ValueError("speculative: not modelled with disaggregated pools (got true)")
        for name, value, tp in (("ep", self.ep, self.tp), ("dpa", self.dpa, self.tp),
                                ("pep", self.prefill_ep, self.prefill_tp),
                                ("pdpa", self.prefill_dpa, self.prefill_tp)):  # fmt: skip
            if value == 1:
                continue
            what = "the prefill pool's TP" if name.startswith("p") else "TP"
            if tp is None:
                raise ValueError(f"{name} = {value}: only a disaggregated deployment has a "
                                 "prefill pool (give ptp and pdp)")  # fmt: skip
            if value != tp:
                raise ValueError(
                    f"{name} = {value}: expert parallelism and attention data parallel span "
                    f"the replica's TP GPUs, so {name} is 1 or {what} ({tp})"
                )
            if self.pp != 1:
                raise ValueError(f"{name} = {value}: searched and launched at PP = 1 only "
                                 f"(got pp = {self.pp})")  # fmt: skip
        return self

    @property
    def layout(self) -> str:
        """The (decode-pool) replica's layout: "TP=8, EP=8, attention DP=8" etc."""
        return layout_text(self.tp, self.ep > 1, self.dpa > 1)

    @property
    def disaggregated(self) -> bool:
        return self.prefill_tp is not None

    @property
    def gpus(self) -> int:
        """GPUs the deployment occupies: TP x PP x DP (+ the prefill pool's TP x DP)."""
        extra = (self.prefill_tp or 0) * (self.prefill_dp or 0)
        return self.tp * self.pp * self.dp + extra

    def __str__(self) -> str:
        parts = [self.gpu, f"tp{self.tp}", f"pp{self.pp}", f"dp{self.dp}"]
        parts += [f"{k}{v}" for k, v in (("ep", self.ep), ("dpa", self.dpa)) if v > 1]
        if self.disaggregated:
            parts += [f"ptp{self.prefill_tp}", f"pdp{self.prefill_dp}"]
            parts += [f"{k}{v}" for k, v in (("pep", self.prefill_ep),
                                              ("pdpa", self.prefill_dpa)) if v > 1]  # fmt: skip
        parts += [self.weights, self.kv]
        if self.speculative:
            parts.append(SPEC_FLAG)
        return ".".join(parts)

    def describe(self) -> str:
        """Short words for a banner, e.g. "2 × (TP=4) h100-sxm, fp8 weights, fp8 KV".

        >>> DeploymentSpec(gpu="h100-sxm", tp=4, dp=2, weights="fp8", kv="fp8").describe()
        '2 × (TP=4) h100-sxm, fp8 weights, fp8 KV'
        >>> DeploymentSpec(gpu="mi300x", tp=4, prefill_tp=2, prefill_dp=3, weights="fp16",
        ...                kv="fp8").describe()
        'disaggregated mi300x: prefill 3 × (TP=2) + decode 1 × (TP=4), fp16 weights, fp8 KV'
        >>> DeploymentSpec(gpu="h200-sxm", tp=8, ep=8, dpa=8, weights="fp8", kv="fp8").describe()
        '1 × (TP=8, EP=8, attention DP=8) h200-sxm, fp8 weights, fp8 KV'
        """
        dtypes = f"{self.weights} weights, {self.kv} KV"
        if self.disaggregated:
            pre = layout_text(self.prefill_tp, self.prefill_ep > 1, self.prefill_dpa > 1)
            return (
                f"disaggregated {self.gpu}: prefill {self.prefill_dp} × ({pre}) "
                f"+ decode {self.dp} × ({self.layout}), {dtypes}"
            )
        shape = self.layout + (f", PP={self.pp}" if self.pp > 1 else "")
        spec = ", speculative decoding" if self.speculative else ""
        return f"{self.dp} × ({shape}) {self.gpu}, {dtypes}{spec}"


def parse_spec(text: str) -> DeploymentSpec:
    """The DeploymentSpec of its text form; DeploymentSpecError names the field, value and
    what is allowed.

    >>> str(parse_spec("h100-sxm.tp4.pp1.dp2.fp8.fp8"))
    'h100-sxm.tp4.pp1.dp2.fp8.fp8'
    >>> parse_spec("h100-sxm.tp4.pp1.dp2.fp9.fp8")
    Traceback (most recent call last):
    ...
    advisor.search.deployment_spec.DeploymentSpecError: deployment 'h100-sxm.tp4.pp1.dp2.fp9.fp8': weight dtype 'fp9' is not one of fp32, bf16, fp16, fp8, int8, int4, mxfp4, nvfp4
    """
    where = f"deployment {text[:120]!r}"
    tokens = text.strip().split(".")
    if len(tokens) < 3 or not tokens[0]:
        raise DeploymentSpecError(
            f"{where}: expected <accelerator>.tp<N>.pp<N>.dp<N>[.ep<N>][.dpa<N>][.ptp<N>.pdp<N>]"
            ".<weights>.<kv>[.spec], e.g. h100-sxm.tp4.pp1.dp2.fp8.fp8"
        )
    fields: dict = {"gpu": tokens[0]}
    dtypes: list[str] = []
    for tok in tokens[1:]:
        m = _KEYED.match(tok)
        if m:
            name, value = m.group(1), int(m.group(2))
            lo, hi = BOUNDS[name]
            if _FIELD.get(name, name) in fields:
                raise DeploymentSpecError(f"{where}: {name} is given twice")
            if not lo <= value <= hi:
                raise DeploymentSpecError(f"{where}: {name} = {value} is outside {lo}..{hi}")
            fields[_FIELD.get(name, name)] = value
        elif tok == SPEC_FLAG:
            fields["speculative"] = True
        elif m := re.fullmatch(r"(tp|pp|dp|ptp|pdp|ep|dpa|pep|pdpa)(\d+)", tok):
            # more digits than _KEYED reads ("dp100000000" was "not a whole number")
            lo, hi = BOUNDS[m.group(1)]
            digits = m.group(2) if len(m.group(2)) <= 20 else f"{m.group(2)[:20]}..."
            raise DeploymentSpecError(f"{where}: {m.group(1)} = {digits} is outside {lo}..{hi}")
        elif re.fullmatch(r"(tp|pp|dp|ptp|pdp|ep|dpa|pep|pdpa).*", tok):
            raise DeploymentSpecError(f"{where}: {tok!r} is not <field><whole number>, e.g. tp4")
        else:
            dtypes.append(tok)
    if "tp" not in fields:
        raise DeploymentSpecError(f"{where}: tp<N> is missing (tensor-parallel degree, e.g. tp4)")
    if len(dtypes) != 2:
        raise DeploymentSpecError(
            f"{where}: expected a weight dtype then a KV dtype, got {dtypes or 'none'}; weights: "
            f"{', '.join(WEIGHT_DTYPES)}; KV: {', '.join(KV_DTYPES)}"
        )
    for (what, allowed), value in zip(
        (("weight dtype", WEIGHT_DTYPES), ("KV dtype", KV_DTYPES)), dtypes, strict=True
    ):
        if value not in allowed:
            raise DeploymentSpecError(
                f"{where}: {what} {value!r} is not one of {', '.join(allowed)}"
            )
    fields["weights"], fields["kv"] = dtypes
    try:
        return DeploymentSpec(**fields)
    except ValidationError as exc:
        raise DeploymentSpecError(
            f"{where}: " + "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        ) from None

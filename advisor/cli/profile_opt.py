"""``--profile PROFILE.yaml`` for estimate, recommend and report: a client profile
(advisor/perf/calibration/client_profile.py) read strictly, checked against the run's accelerator and
engine, made active, and described in the result."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from advisor.catalog.quoting import inert
from advisor.cli import CliInputError, shown

if TYPE_CHECKING:  # the profile machinery (its file importers) loads only when --profile is given
    from advisor.perf.calibration.client_profile import ProfileDoc


def describe(doc: ProfileDoc) -> dict:
    """advisor.perf.calibration.client_profile.describe (imported when a profile is in use)."""
    from advisor.perf.calibration.client_profile import describe as describe_profile

    return describe_profile(doc)


def add_profile_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        default=None,
        help="client profile YAML from `calibrate --from` (its accelerator and engine only)",
    )


def load_profile(value: str | None) -> ProfileDoc | None:
    """The profile named by --profile, validated and made active; exit 2 naming the field."""
    if value is None:
        return None
    from advisor.perf.calibration.client_profile import ProfileError, activate, read_profile

    try:
        doc = read_profile(value)
    except ProfileError as exc:
        raise CliInputError(f"--profile {shown(value)}: {exc}") from None
    activate(doc)
    return doc


def check(doc: ProfileDoc, gpus: Iterable[str], engine: str) -> None:
    """Refuse a profile whose accelerator is not among ``gpus`` or whose engine differs."""
    gpus = list(gpus)
    d = doc.deployment
    if d.engine != engine or d.gpu not in gpus:
        raise CliInputError(
            f"--profile: {doc.name!r} was fitted on {d.gpu} with {d.engine}; this run is on "
            f"{', '.join(gpus)} with {engine}: a profile applies only to its own accelerator and engine"
        )


def apply_to_estimate(result: dict, doc: ProfileDoc, gpu_id: str) -> dict:
    """Check the estimate's accelerator and engine, narrow its intervals, say the profile was used."""
    from advisor.perf.calibration.client_profile import (
        ProfileError,
        check_applies,
        narrow,
        narrowing,
    )

    try:
        check_applies(doc, gpu_id, str(result["engine"]))
    except ProfileError as exc:
        raise CliInputError(f"--profile: {exc}") from None
    why = result.get("client_profile_fallback")
    if why:  # outside the profile's range: the estimate used the shipped calibration
        return {**result, "client_profile": {**describe(doc), "applied": False, "fallback": why}}
    iv = result.get("intervals")
    if isinstance(iv, dict):
        f, floor = narrowing(doc)
        iv = dict(iv)
        for key in ("ttft_ms", "tpot_ms", "e2e_ms", "throughput_tok_s"):
            if key in iv and key in result and isinstance(result[key], int | float):
                iv[key] = narrow(iv[key], float(result[key]), f, floor)
        iv["basis"] = (
            f"{iv.get('basis', '')} Client profile {doc.name!r}: {describe(doc)['intervals']}."
        )
        result = {**result, "intervals": iv}
    return {**result, "client_profile": describe(doc)}


def _pct(v: object) -> str:
    return "n/a" if v is None else f"{v}%"


def render_line(block: dict) -> str:
    if block.get("applied") is False:
        return (
            f"  CLIENT PROFILE {inert(block['name'])} NOT APPLIED: {inert(block['fallback'])}; "
            f"shipped calibration used (the profile applies over {inert(block['range'])})"
        )
    return (
        f"  CLIENT PROFILE {inert(block['name'])} ({block['gpu']}, {block['engine']}, digest "
        f"{block['digest']}): fitted {', '.join(block['fitted']) or 'nothing'} on "
        f"{block['points']} points; median error {_pct(block['median_ape_before_pct'])} shipped, "
        f"{_pct(block.get('loo_median_ape_pct'))} out of sample; applies over "
        f"{inert(block.get('range', 'its deployment'))}"
    )


def profile_line(block: dict, d: dict) -> str:
    """Whether the profile of ``block`` priced deployment ``d`` (a search result's
    ``client_profile_fallback``: advisor/search/profile_scope.py)."""
    why = d.get("client_profile_fallback")
    if why:
        return (f"  client profile {inert(block['name'])} not applied: {inert(why)}; shipped "
                "calibration used")  # fmt: skip
    if d.get("gpu") != block.get("gpu"):
        return f"  client profile {inert(block['name'])} not applied: another accelerator"
    return f"  client profile {inert(block['name'])} applied"


def apply_to_recommendation(out: dict, doc: ProfileDoc, fallback: str | None = None) -> dict:
    """Narrow the recommended deployment's ranges when the profile priced it (the search ranked
    the candidates inside its range with its constants already), say the profile was used."""
    from advisor.perf.calibration.client_profile import narrow, narrowing

    if fallback:  # outside the profile's range: the shipped calibration priced it
        return {**out, "client_profile": {**describe(doc), "applied": False, "fallback": fallback}}
    f, floor = narrowing(doc)
    best = out.get("best")
    if isinstance(best, dict) and best.get("gpu") == doc.deployment.gpu:
        iv = dict(best["intervals"])
        pct = f"p{iv.get('percentile', 99)}"
        for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
            point = (best.get(key) or {}).get(pct)
            if isinstance(point, int | float) and key in iv:
                iv[key] = narrow(iv[key], float(point), f, floor)
        iv["basis"] = (
            f"{iv.get('basis', '')} Client profile {doc.name!r}: {describe(doc)['intervals']}."
        )
        out = {**out, "best": {**best, "intervals": iv}}
    return {**out, "client_profile": describe(doc)}

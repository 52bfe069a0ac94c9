"""The PDF's client-profile section: the report's predictions used a client calibration profile
(advisor/perf/calibration/client_profile.py), which one, what it fitted and its error before and after."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.report.text import clean


def client_profile_lines(p: Mapping[str, Any]) -> list[str]:
    """The section's lines from a result's ``client_profile`` block (every value cleaned)."""
    fitted = ", ".join(clean(str(x), 40) for x in p.get("fitted", [])) or "nothing"
    files = ", ".join(clean(str(x), 80) for x in p.get("files", []))
    where = f"It applies over {clean(str(p.get('range', '')), 400)} only."
    if p.get("applied") is False:  # the recommendation lies outside the profile's range
        return [
            f"The client profile '{clean(str(p.get('name')), 120)}' (digest "
            f"{clean(str(p.get('digest')), 12)}) was NOT applied: "
            f"{clean(str(p.get('fallback')), 300)}. Every figure here uses the shipped calibration.",
            where,
        ]
    return [
        f"Predictions for {clean(str(p.get('gpu')), 40)} with {clean(str(p.get('engine')), 20)} "
        f"use the client profile '{clean(str(p.get('name')), 120)}' (digest "
        f"{clean(str(p.get('digest')), 12)}), fitted to the client's own benchmark files: {files}.",
        f"Constants fitted: {fitted}; all others are the shipped calibration.",
        f"Error on the profile's {p.get('points')} measurements: median "
        f"{_pct(p.get('median_ape_before_pct'))} with the shipped calibration; out of sample "
        f"(each run predicted by the profile fitted to the others) "
        f"{_pct(p.get('loo_median_ape_pct'))}; in sample {_pct(p.get('median_ape_after_pct'))} "
        f"(largest {_pct(p.get('max_ape_after_pct'))}).",
        f"Acceptance, judged on runs held out: {clean(str(p.get('verdict', '')), 600)}.",
        where,
        f"Ranges: {clean(str(p.get('intervals', '')), 400)}.",
    ]


def _pct(v: object) -> str:
    return "n/a" if v is None else f"{v}%"


def client_profile_section(doc: Any, p: Mapping[str, Any]) -> None:
    doc.h2("Client calibration profile")
    doc.bullets(client_profile_lines(p))

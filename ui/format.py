"""Number formatting for the app: units always shown, GB (1e9) and GiB (2^30) labelled."""

from __future__ import annotations

import math
import re

# One set of number formats for every page: latencies (ms below 1 s, s above, 3 significant
# figures), dollars and plural nouns come from the advisor (the CLI and the PDF use them too).
from advisor.perf.model.sweeps import fmt_ms as latency  # noqa: F401 - re-exported for the pages
from advisor.search.budget import plural, usd  # noqa: F401 - re-exported for the pages


def sig3(x: float, unit: str = "") -> str:
    """A number for people: 3 significant figures, thousands separators, never an exponent.

    >>> sig3(12.7261), sig3(88024.7), sig3(0.012345), sig3(1020.4, "tokens/s"), sig3(0)
    ('12.7', '88,000', '0.0123', '1,020 tokens/s', '0')
    """
    suffix = f" {unit}" if unit else ""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}{suffix}"
    v = float(f"{x:.3g}")
    decimals = max(0, 2 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}{suffix}"


def gb(x_bytes: float, digits: int = 1) -> str:
    """Decimal gigabytes.

    >>> gb(85_520_809_984)
    '85.5 GB'
    """
    return f"{x_bytes / 1e9:,.{digits}f} GB"


def gb_gib(x_bytes: float) -> str:
    """GB with the GiB equivalent, for capacities users compare with nvidia-smi.

    >>> gb_gib(85_520_809_984)
    '85.5 GB (79.6 GiB)'
    """
    return f"{x_bytes / 1e9:,.1f} GB ({x_bytes / 2**30:,.1f} GiB)"


def small_bytes(x_bytes: float) -> str:
    """Bytes in the largest decimal unit that keeps 3 significant digits.

    >>> small_bytes(327_680), small_bytes(1_342_177_280), small_bytes(512)
    ('328 kB', '1.34 GB', '512 B')
    """
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x_bytes) >= scale:
            return f"{x_bytes / scale:.3g} {unit}"
    return f"{x_bytes:.0f} B"


def ms(x_s: float) -> str:
    """Seconds shown as ms (or us below 0.1 ms).

    >>> ms(0.0123), ms(13.5e-6)
    ('12.3 ms', '13.5 µs')
    """
    if x_s < 1e-4:
        return f"{x_s * 1e6:.3g} µs"
    return f"{x_s * 1e3:.3g} ms"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$&])")
_NAME_OK = re.compile(r"[^\w .,/+()@-]")
#: Where GitHub-flavoured markdown would start a link by itself (an "autolink literal": a URL
#: scheme, ``www.``, the ``@`` of an e-mail address). Backslash escapes do not stop it: the
#: link is found in the text after the escapes are read. A WORD JOINER (U+2060, invisible, not
#: a word character) is put there instead, so the pattern no longer matches.
_AUTOLINK = re.compile(r"(?i)(?<=http)(?=s?:)|(?<=www)(?=\.)|(?=@)|(?<=mailto)(?=:)|(?<=xmpp)(?=:)")
WORD_JOINER = "\u2060"


def md_escape(text: object) -> str:
    """User text for st.markdown, alerts and widget labels, shown as typed: markdown, HTML tags,
    links, images, LaTeX ($) and Streamlit directives (:red[...]) backslash-escaped, and the
    autolinks of bare URLs, ``www.`` names and e-mail addresses broken by an invisible joiner.

    >>> md_escape("<img src=x onerror=alert(1)>")
    '\\\\<img src=x onerror=alert\\\\(1\\\\)\\\\>'
    >>> md_escape("**Acme** :red[x] $1")
    '\\\\*\\\\*Acme\\\\*\\\\* \\\\:red\\\\[x\\\\] \\\\$1'
    >>> md_escape("https://e.x www.e.x u@e.x").replace(WORD_JOINER, "^")
    'http^s\\\\://e\\\\.x www^\\\\.e\\\\.x u^@e\\\\.x'
    """
    return _MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, str(text)))


def display_name(text: str) -> str:
    """A model's display name from an uploaded config.json (``_name_or_path``) reduced to letters,
    digits, spaces and ``. , / + ( ) @ - _``: it goes into captions, chart titles and the PDF.

    >>> display_name("meta-llama/Llama-3.1-70B"), display_name("<img src=x onerror=alert(1)>")
    ('meta-llama/Llama-3.1-70B', 'img src x onerror alert(1)')
    """
    return " ".join(_NAME_OK.sub(" ", text).split())


def percentile_points_ms(deployment, pct: int) -> dict[str, float]:
    """The P``pct`` TTFT, TPOT and E2E a page shows for a search deployment, by "TTFT"/"TPOT"/"E2E"
    (the ``points_ms`` of ``interval_text``)."""
    return {n.upper(): getattr(deployment, f"{n}_ms").at(pct) for n in ("ttft", "tpot", "e2e")}


def interval_text(intervals: dict | None, points_ms: dict[str, float] | None = None) -> str:
    """ "80% range (out-of-sample): P99 TTFT 721 ms–1.73 s · P99 TPOT ..." from a deployment's
    ``intervals`` (advisor/search/sla.percentile_intervals); "" when there are none. With the
    shown estimates (``points_ms``, by "TTFT"/"TPOT"/"E2E"), a range that excludes its estimate
    says which way the model errs there (intervals.side_of_range)."""
    from advisor.perf.model.intervals import side_of_range

    iv = intervals or {}
    conf, pct = iv.get("confidence"), iv.get("percentile")
    parts, notes = [], []
    for name in ("TTFT", "TPOT", "E2E"):
        got = iv.get(f"{name.lower()}_ms")
        bounded = isinstance(got, list | tuple) and len(got) == 2 and None not in got
        if bounded and all(math.isfinite(x) for x in got):
            parts.append(f"P{pct} {name} {latency(got[0])}–{latency(got[1])}")
            point = (points_ms or {}).get(name)
            side = side_of_range(point, got[0], got[1]) if point is not None else ""
            if side:
                way = "below" if side == "runs high" else "above"
                notes.append(f"P{pct} {name}: measurements of this kind came in {way} the model, "
                             f"so its range lies {way} the estimate")  # fmt: skip
    if not parts or conf is None:
        return ""
    calibrated = "" if iv.get("calibrated", True) else " — uncalibrated: widened"
    regime = f" at {iv['load_regime']} load" if iv.get("load_regime") else ""
    text = (f"{conf:.0%} steady-service range (the SLA verdict's: out-of-sample error of means and "
            f"medians{regime}{calibrated}): " + " · ".join(parts))  # fmt: skip
    bench = iv.get("benchmark") or {}
    runs = [f"P{pct} {name} {latency(got[0])}–{latency(got[1])}"
            for name in ("TTFT", "TPOT", "E2E")
            for got in [bench.get(f"{name.lower()}_ms")]
            if isinstance(got, list | tuple) and len(got) == 2
            and all(isinstance(x, int | float) and math.isfinite(x) for x in got)]  # fmt: skip
    if runs:  # the ranges `estimate` prints beside each percentile: one figure, one name
        notes.append(f"A benchmark run's published P{pct} (held-out published P{pct}s of runs over "
                     "101 prompts, start-up waves included) ranges " + " · ".join(runs))  # fmt: skip
    if iv.get("wide"):  # issue 37: a range that cannot decide the answer says how to narrow it
        notes.append(f"{', '.join(iv['wide'])}: steady-service range wider than 3x the prediction; measure it on "
                     "one replica at this load and a lower and a higher one (three runs) with the "
                     "engine's serving benchmark and load the results on the Calibrate page to "
                     "narrow it")  # fmt: skip
    return text + "".join(f". {n}" for n in notes)


def sla_answer(d) -> str:
    """A deployment's answer to "Meets the SLA?" (search/sla.py verdicts): "yes", "yes, over
    the budget", "at risk" (its predictions meet the SLA, the upper end of a range does not) or
    "no"."""
    if d.meets_sla:
        return "yes, over the budget" if getattr(d, "over_budget", False) else "yes"
    return "at risk" if getattr(d, "sla_verdict", "") == "at risk" else "no"

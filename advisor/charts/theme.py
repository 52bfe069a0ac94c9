"""The one plotly template every figure uses, and the app's colour palette.

Set explicitly on each figure: ``import streamlit`` replaces plotly's default template with one
that leaves colours to the web frontend, so exported images (PDF report) would come out unstyled.
"""

from __future__ import annotations

import copy
import html
import textwrap

import plotly.graph_objects as go
import plotly.io as pio

#: Palette, colour-blind friendly (Okabe-Ito), in the order lines are drawn.
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # green
    "#CC79A7",  # purple
    "#56B4E9",  # sky
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#000000",
)

#: Fixed colours for memory components, the same in every chart and the report.
MEMORY_COLOURS: dict[str, str] = {
    "weights": "#0072B2",
    "kv": "#E69F00",
    "activations": "#CC79A7",
    "unusable": "#7F7F7F",
    "free": "#DDE8C9",
    "overflow": "#D55E00",
}

#: Step-time components (key, legend label, colour) in drawing order: one table for the Latency
#: and Compare charts and the PDF, so a component looks and reads the same everywhere. "memory"
#: says what is read, not where: the L40S and other GDDR cards have no HBM. Queueing and prefill
#: interruptions are latencies under load, not parts of a step (the Latency page only).
STEP_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("compute", "compute", "#0072B2"),
    ("memory", "memory (weights + KV reads)", "#E69F00"),
    ("dequant", "dequantization", "#CC79A7"),
    ("communication", "communication", "#009E73"),
    ("overhead", "engine overhead", "#7F7F7F"),
    ("bubble", "pipeline bubble", "#D55E00"),
    ("host", "host dispatch (eager prefill)", "#8C564B"),
    ("queueing", "queueing", "#56B4E9"),
    ("prefill interruptions", "prefill interruptions", "#F0E442"),
)

#: Fixed colours for the links the interconnect page compares.
LINK_COLOURS: dict[str, str] = {
    "pcie": "#D55E00",
    "nvlink": "#009E73",
    "xgmi": "#CC79A7",
    "infiniband": "#0072B2",
    "ethernet": "#56B4E9",
}

FONT_FAMILY = "Inter, 'Source Sans Pro', Arial, sans-serif"


def _build_template() -> go.layout.Template:
    base = copy.deepcopy(pio.templates["plotly_white"])
    base.layout.colorway = list(PALETTE)
    base.layout.font = {"family": FONT_FAMILY, "size": 14, "color": "#222222"}
    base.layout.title = {"font": {"size": 18}, "x": 0.0, "xanchor": "left"}
    base.layout.legend = {"bgcolor": "rgba(255,255,255,0.8)"}
    base.layout.margin = {"l": 70, "r": 30, "t": 70, "b": 60}
    return base


#: The template object. Builders pass it as ``template=TEMPLATE``.
TEMPLATE: go.layout.Template = _build_template()
TEMPLATE_NAME = "inference_architect"
pio.templates[TEMPLATE_NAME] = TEMPLATE


#: Characters plotly reads as syntax in its texts, beyond HTML: ``$...$`` is typeset as LaTeX
#: where MathJax is loaded (kaleido loads it for the PDF's charts), ``%{...}`` is a placeholder
#: in a hover template. As numeric entities they are shown as typed and read as neither.
_PLOTLY_SYNTAX = str.maketrans({"$": "&#36;", "%": "&#37;"})


def escape(text: object) -> str:
    """Text shown as typed in any plotly text (title, label, legend, hover, annotation): plotly
    reads a subset of HTML there (``<b>``, ``<a href>``, ``<span style>``), so ``&``, ``<`` and
    ``>`` become entities, which it shows as the characters; so do ``$`` (LaTeX) and ``%``
    (``%{y}`` in a hover template).

    >>> escape("TP=2 <b>&</b>"), escape("$x^2$ %{y}")
    ('TP=2 &lt;b&gt;&amp;&lt;/b&gt;', '&#36;x^2&#36; &#37;{y}')
    """
    return html.escape(str(text), quote=False).translate(_PLOTLY_SYNTAX)


def _template_dict() -> dict:
    """The template as plotly validates it onto a figure (the dict a figure's JSON carries)."""
    fig = go.Figure()
    fig.update_layout(template=TEMPLATE)
    return fig.to_dict()["layout"]["template"]


_TEMPLATE_DICT = _template_dict()


def _apply_template(fig: go.Figure) -> None:
    """Put the template on the figure without validating it again.

    ``update_layout(template=...)`` re-validates the whole template (every trace type's
    defaults): about 45 ms per figure on the shared 2-core machine, most of a page's rerun
    (issue 13, bench/bench_pages.py). The dict validated once above is stored directly in the
    figure's layout instead (about 1 ms), and the cached Template object is dropped so
    ``fig.layout.template`` reads it back.

    >>> f = go.Figure()
    >>> _apply_template(f)
    >>> f.to_dict()["layout"]["template"] == _TEMPLATE_DICT, f.layout.template.layout.font.size
    (True, 14)
    """
    try:
        fig._layout["template"] = copy.deepcopy(_TEMPLATE_DICT)
        fig._layout_obj._compound_props.pop("template", None)
    except AttributeError:  # another plotly: the validated path
        fig.update_layout(template=TEMPLATE)


def wrap_lines(text: str, width: int, max_lines: int | None = None) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters, for a title or a
    tick label that plotly would otherwise cut; never at a hyphen ("Qwen3-235B" stays whole); a
    word longer than a line is split, not dropped. Past ``max_lines`` the last line kept ends in
    "…". Plain text: the caller escapes each line and joins them with ``<br>``.

    >>> wrap_lines("Llama 3.1 70B on 4x H100 NVLink, P99 TPOT 50 ms", 20)
    ['Llama 3.1 70B on 4x', 'H100 NVLink, P99', 'TPOT 50 ms']
    >>> wrap_lines("Qwen3-235B-A22B on 8x MI300X", 12, max_lines=2)
    ['Qwen3-235B-A', '22B on 8x…']
    """
    lines = textwrap.wrap(text, width, break_on_hyphens=False)
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "…"
    return lines


#: Characters per title line of a chart drawn in a half-width column (the Latency page's
#: roofline: "Roofline: NVIDIA B200 (HGX/DGX B200, 180GB), fp8 weights" was cut at 1280 px; the
#: Memory page's "KV fits 423 sequences (as above); offloading starts at sequence 42" at 1400).
HALF_WIDTH_TITLE_WRAP = 36
#: ... and in a full-width one (the Memory page's sweep: "Max concurrent sequences vs context:
#: Qwen3 235B-A22B on NVIDIA B200 (HGX/DGX B200, 180GB), fp8 weights, attention DP over each"
#: was cut at 1400 px).
FULL_WIDTH_TITLE_WRAP = 90


def styled(fig: go.Figure, title: str, *, height: int = 420, wrap: int | None = None) -> go.Figure:
    """Apply the template, the title (plain text, escaped) and a height; returns the figure.

    ``wrap``: the title broken at spaces into lines of at most that many characters, for a
    chart drawn in a half-width column, where plotly cuts a long title ("fp8 weigh…" at 1280 px).

    >>> styled(go.Figure(), "Roofline: NVIDIA B200 (HGX/DGX B200, 180GB), fp8 weights",
    ...        wrap=36).layout.title.text
    'Roofline: NVIDIA B200 (HGX/DGX B200,<br>180GB), fp8 weights'
    """
    _apply_template(fig)
    lines = wrap_lines(title, wrap) if wrap else [title]
    fig.update_layout(title={"text": "<br>".join(escape(x) for x in lines)}, height=height)
    if len(lines) > 1:  # room for the extra lines above the plot (the template keeps 70 px)
        fig.update_layout(margin={"t": 70 + 24 * (len(lines) - 1)})
    return fig


def gb(x_bytes: float) -> float:
    """Bytes to decimal gigabytes (1e9), the unit charts label as 'GB'."""
    return x_bytes / 1e9


def log_ticks(lo_exp: int = -3, hi_exp: int = 7) -> dict:
    """Tick values 1-2-5 per decade for a log axis, labelled in full (200, not a bare '2').

    >>> log_ticks(0, 1)["tickvals"]
    [1, 2, 5, 10, 20, 50]
    """
    vals = [m * 10**e for e in range(lo_exp, hi_exp + 1) for m in (1, 2, 5)]
    vals = [round(v, 6) if v < 1 else int(v) for v in vals]
    return {"tickvals": vals, "ticktext": [f"{v:,g}" for v in vals]}

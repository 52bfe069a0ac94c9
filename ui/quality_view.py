"""Quality notes beside the recommended dtypes (advisor/catalog/quality.py) and a one-click
"exclude <dtype>" that edits the sidebar's weight-dtype list (the search's options.weight_dtypes)."""

from __future__ import annotations

import streamlit as st

from advisor.catalog.quality import quality_for
from advisor.search.results import Deployment
from ui.format import md_escape
from ui.url import URL_KEYS

WD_KEY = f"w.{URL_KEYS['options.weight_dtypes']}"  # the sidebar's weight-dtype multiselect


def _exclude(dtype: str) -> None:
    """Callback (runs before the rerun, so the sidebar widget may still be edited)."""
    allowed = [d for d in st.session_state.get(WD_KEY, []) if d != dtype]
    if allowed:
        st.session_state[WD_KEY] = allowed


def summary(notes: list[dict]) -> str:
    """'Quality: weights fp8 — <finding>; KV fp8 — not measured for this model.'"""
    parts = []
    for q in notes:
        what = "weights" if q["tensor"] == "weights" else "KV cache"
        text = q["finding"] if q["measured"] else "not measured for this model"
        if q.get("unknown"):
            text += f" ({q['unknown']})"
        parts.append(f"{what} {q['dtype']}: {text}")
    return "Quality: " + "; ".join(parts) + "."


def quality_section(scenario, d: Deployment | None) -> None:
    """The published accuracy effect of ``d``'s weight and KV dtypes on the scenario's model:
    one line beside the recommended dtypes, the sources and the exclude buttons below it."""
    if d is None:
        return
    notes = quality_for(scenario.model, d.weights, d.kv)
    allowed = list(st.session_state.get(WD_KEY, scenario.options.weight_dtypes))
    quantized = [x for x in ("int4", "mxfp4", "nvfp4", "int8", "fp8") if x in allowed]
    if notes:
        st.markdown(md_escape(summary(notes)))
    if not notes and not quantized:
        return
    with st.expander(f"Model quality at weights {d.weights}, KV {d.kv}: sources and dtype choice"):
        if not notes:
            st.markdown("16-bit weights and KV cache: the reference precision.")
        for q in notes:
            what = "Weights" if q["tensor"] == "weights" else "KV cache"
            st.markdown(f"**{what} {q['dtype']}**"
                        + ("" if q["measured"] else ": *not measured for this model*"))  # fmt: skip
            for n in q["notes"] or ([q["finding"]] if q["measured"] else []):
                st.caption(md_escape(n))
            if q.get("unknown"):
                st.caption(md_escape(q["unknown"].capitalize() + "."))
        if quantized and len(allowed) > 1:
            st.caption("Exclude a weight dtype from the search (edits the sidebar's list):")
            cols = st.columns(len(quantized))
            for col, dtype in zip(cols, quantized, strict=True):
                col.button(f"Exclude {dtype}", key=f"quality.exclude.{dtype}",
                           on_click=_exclude, args=(dtype,))  # fmt: skip

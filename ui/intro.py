"""The start that orients (issue 13): what the tool answers, the reference article it checks, and
the built-in examples one click away. Drawn at the top of the default page."""

from __future__ import annotations

import streamlit as st

from advisor.search.decision_matrix import ARTICLE_CLAIM, ARTICLE_NAME
from ui.scenarios import examples, load_into_sidebar

WHAT = (
    "**Inference Architect answers one question: on which of your GPUs, split how (tensor and "
    "pipeline parallelism, replicas), in which number formats, does a language model serve your "
    "load within your latency target at the lowest cost, and why.** Describe the model, GPUs, "
    "load and target in the sidebar; every page shows one side of the answer (memory, "
    "interconnect, latency, speculative decoding, cost, a PDF for the client)."
)


def intro() -> None:
    """Two sentences, the article named with its claims, and the examples as buttons."""
    with st.expander("What this tool answers, the reference article, examples", expanded=True):
        st.markdown(WHAT)
        st.markdown(
            f"It checks its answers against {ARTICLE_NAME}: "
            f"{ARTICLE_CLAIM}. The *Article check* page recomputes each claim."
        )
        choices = examples()
        c1, c2 = st.columns([5, 1], vertical_alignment="bottom")
        i = c1.selectbox(
            "Built-in examples", range(len(choices)), key="intro.example",
            format_func=lambda i: f"{choices[i].label} ({choices[i].scenario.sla.describe()})",
        )  # fmt: skip
        c2.button(
            "Load", key="intro.load", width="stretch", on_click=load_into_sidebar,
            args=(choices[i].scenario, choices[i].view, choices[i].label),
        )  # fmt: skip

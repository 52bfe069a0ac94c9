"""Scenario: what the sidebar describes, in words, and the scenario file to save."""

from __future__ import annotations

import streamlit as st

from advisor.catalog import accelerators, interconnects
from advisor.scenario import dump_scenario
from advisor.search.space import search_weights_text
from ui.focus import show_focus
from ui.format import gb_gib, md_escape, plural
from ui.state import AMBIGUITY_NOTE, current, guarded


def summary() -> None:
    s, _ = current()
    model = s.model_spec()
    show_focus(s)
    gpus, links = accelerators(), interconnects()
    hw = s.hardware
    first = gpus[hw.gpus[0]]
    intra = links[hw.intra_link or first.scale_up_link]
    load = (
        f"{s.workload.arrival_rate_per_s:g} requests/s (Poisson)"
        if s.workload.arrival_rate_per_s is not None
        else f"{s.workload.concurrent_users:,} concurrent users thinking "
        f"{s.workload.think_time_s:g} s between requests"
    )
    c1, c2 = st.columns(2)
    c1.markdown(
        f"**Model:** {md_escape(model.name)} ({model.num_hidden_layers} layers, hidden {model.hidden_size:,}, "
        f"{model.num_attention_heads} query / {model.num_key_value_heads} KV heads, "
        f"context up to {model.max_position_embeddings:,} tokens)\n\n"
        f"**Accelerators:** "
        + ", ".join(f"{gpus[g].name} ({gb_gib(gpus[g].memory_bytes)})" for g in hw.gpus)
        + f"\n\n**Cluster:** {plural(hw.nodes, 'node')} × {hw.gpus_per_node} GPUs = "
        f"{plural(hw.total_gpus, 'GPU')}; "
        f"inside a node {intra.name} ({intra.bandwidth_bytes_per_s / 1e9:g} GB/s per direction), "
        f"between nodes {links[hw.inter_link].name} "
        f"({links[hw.inter_link].bandwidth_bytes_per_s / 1e9:g} GB/s per direction)"
    )
    c2.markdown(
        f"**Workload:** {s.workload.isl_tokens:,} input + {s.workload.osl_tokens:,} output "
        f"tokens per request; load {load}\n\n"
        f"**Latency target:** {s.sla.describe()}\n\n"
        f"**Engine:** {s.options.engine}; weights {search_weights_text(s)}; "
        f"KV cache {', '.join(s.options.kv_dtypes)}"
    )
    st.info(AMBIGUITY_NOTE)
    st.caption(
        "The address bar holds the whole scenario: copy the link to share it or to come back to "
        "it. An uploaded config.json is not part of the link; the scenario file below keeps it."
    )
    st.download_button(
        "Download the scenario (JSON)", dump_scenario(s), file_name="scenario.json",
        mime="application/json", on_click="ignore",
    )  # fmt: skip


st.title("Inference Architect")
st.markdown(
    "How to serve a language model on your own GPUs: memory, interconnect, latency and cost. "
    "Describe the question in the sidebar; the pages answer it."
)
guarded("Scenario", summary)

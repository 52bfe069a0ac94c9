"""Memory and KV budget: per-GPU memory of the deployment in focus and how many sequences fit."""

from __future__ import annotations

from types import SimpleNamespace

import streamlit as st

from advisor.catalog import accelerators
from advisor.charts import memory_charts as mc
from advisor.physics.memory import (
    DTYPE_BYTES,
    PAGED_BLOCK_SIZES,
    article_kv_bytes_per_sequence,
    moe_spread_blocker,
)
from ui import cache
from ui.focus import sequences_in_flight, show_focus
from ui.format import gb, gb_gib, md_escape, small_bytes
from ui.state import current, guarded, local_key, remember_local, view_now


def _draft_words(scenario) -> str:
    from advisor.catalog.drafts import draft_name
    from advisor.search.space import scenario_draft

    return draft_name(scenario.model_spec(), scenario_draft(scenario)[0])


def setup() -> SimpleNamespace | None:
    """Page-local inputs and everything the sections share."""
    scenario, _ = current()
    model = scenario.model_spec()
    f = show_focus(scenario)
    spec = f.spec
    gpu = accelerators()[spec.gpu]
    c1, c2, c3 = st.columns(3)
    c1.number_input(
        "Requests in flight, whole deployment", 1, 100_000, value=None, step=1,
        help="N clients each with one request running, spread evenly over the DP replicas "
        "(as `advisor estimate --concurrency N`)",
        placeholder="from the scenario's load", key=local_key("concurrency"),
        on_change=remember_local, args=("concurrency",),
    )  # fmt: skip
    c2.segmented_control(
        "Paged KV block size (tokens)", list(PAGED_BLOCK_SIZES), key=local_key("block_size"),
        on_change=remember_local, args=("block_size",), required=True,
    )  # fmt: skip
    c3.number_input(
        "Tokens a contiguous allocator reserves (max_model_len)", 16, 16_777_216, value=None,
        step=1024, placeholder=f"model maximum: {model.max_position_embeddings:,}",
        key=local_key("max_model_len"), on_change=remember_local, args=("max_model_len",),
    )  # fmt: skip
    view = view_now()
    ctx = SimpleNamespace(
        scenario=scenario, model=model, gpu=gpu, view=view, tp=spec.tp, pp=spec.pp,
        bs=view.block_size, wd=spec.weights, kd=spec.kv, focus=f, dpa=spec.dpa > 1,
        layout=spec.layout,
        context=scenario.workload.isl_tokens + scenario.workload.osl_tokens,
        max_len=view.max_model_len or model.max_position_embeddings,
    )  # fmt: skip
    if view.max_model_len is not None and view.max_model_len < ctx.context:
        st.error(
            f"max_model_len {view.max_model_len:,} is shorter than the {ctx.context:,} tokens per "
            "sequence of the scenario: a server started with it refuses these requests. Give "
            f"at least {ctx.context:,} tokens (or clear the field for the model maximum)."
        )
        return None
    ctx.n_seq, n_how = sequences_in_flight(scenario, f, view.concurrency)
    pools = (
        f" A decode-pool replica is shown; the prefill pool runs {spec.prefill_dp} × TP="
        f"{spec.prefill_tp} with the same weights." if spec.disaggregated else ""
    )  # fmt: skip
    draft = (
        f" Speculative decoding: the draft ({md_escape(_draft_words(scenario))}) shares these GPUs "
        "and its weights come out of the KV budget." if spec.speculative else ""
    )  # fmt: skip
    st.caption(
        f"**{md_escape(model.name)}** on **{gpu.name}** ({gb_gib(gpu.memory_bytes)}), {ctx.layout}, "
        f"PP={ctx.pp}, weights {ctx.wd}, KV cache {ctx.kd}, {ctx.context:,} tokens per sequence "
        f"({scenario.workload.isl_tokens:,} in + {scenario.workload.osl_tokens:,} out); "
        f"**{ctx.n_seq:,} sequences in flight** per replica: {n_how}.{pools}{draft} "
        "GB = 10⁹ bytes, GiB = 2³⁰ bytes."
    )
    return ctx


def budget_section(c: SimpleNamespace):
    # the deployment in focus: under attention DP (a layout the search weighs for MoE models)
    # every GPU holds the whole attention weights (more on vLLM and SGLang: the engine's) and
    # the KV of its own sequences
    kw = dict(tp=c.tp, pp=c.pp, weights_dtype=c.wd, kv_dtype=c.kd, context_tokens=c.context,
              block_size=c.bs, max_model_len=c.max_len, attention_dp=c.dpa,
              engine=c.scenario.options.engine)  # fmt: skip
    b = cache.budget(c.model, c.gpu.id, **kw)
    paged_seq = mc.paged_kv_bytes_per_sequence_per_gpu(c.model, c.kd, c.context, c.bs, c.tp, c.pp,
                                                       attention_dp=c.dpa)  # fmt: skip
    curve = mc.kv_demand_curve(paged_seq, b.kv_budget_bytes_per_gpu, c.n_seq)

    # two rows of three: six columns cut labels and values at 1280 px ("KV per sequen…")
    m = st.columns(3) + st.columns(3)
    m[0].metric("Weights per GPU", gb(b.weights_bytes_per_gpu),
                help=f"{gb(b.weights_bytes_total)} for the whole model ({b.params / 1e9:.1f} B parameters)")  # fmt: skip
    m[1].metric("KV per token", small_bytes(b.kv_bytes_per_token),
                help=f"whole model, all layers; {small_bytes(b.kv_bytes_per_token_per_gpu)} per GPU")  # fmt: skip
    m[2].metric("KV per sequence per GPU", small_bytes(b.kv_bytes_per_sequence_per_gpu),
                help=f"{c.context:,} tokens; {small_bytes(b.kv_bytes_per_sequence)} for the whole model")  # fmt: skip
    m[3].metric("Sequences (paged)", f"{b.max_concurrent_sequences:,}",
                help=f"{c.bs}-token blocks, {b.paged_utilisation:.0%} of reserved KV used")  # fmt: skip
    m[4].metric("Sequences (contiguous)", f"{b.max_concurrent_sequences_contiguous:,}",
                help=f"reserves {max(c.max_len, c.context):,} tokens each, {b.contiguous_utilisation:.1%} used")  # fmt: skip
    m[5].metric("Fits", "yes" if b.fits else "no",
                help=f"KV budget per GPU: {gb(b.kv_budget_bytes_per_gpu)}" if b.fits
                else "; ".join(b.reasons))  # fmt: skip
    if not b.fits:
        st.error("Does not fit: " + "; ".join(b.reasons))
        if b.suggestions:
            st.info("Would fit with: " + "; ".join(b.suggestions))
    elif curve["offload_at"] is not None and c.n_seq >= curve["offload_at"]:
        st.warning(
            f"{c.n_seq:,} sequences need {gb(c.n_seq * paged_seq)} of KV per GPU, more than the "
            f"{gb(b.kv_budget_bytes_per_gpu)} budget: offloading (or preemption) starts at "
            f"{curve['offload_at']:,} sequences."
        )

    if (b.fits and not c.dpa and moe_spread_blocker(c.model, c.tp) is None
            and not c.focus.spec.disaggregated):  # fmt: skip
        attention_dp_what_if(c, b, kw)

    gpus = accelerators()
    stacks = []
    for gid in dict.fromkeys([c.gpu.id, *c.scenario.hardware.gpus]):
        bg = b if gid == c.gpu.id else cache.budget(c.model, gid, **kw)
        label = f"<b>{gpus[gid].name}</b>" if gid == c.gpu.id else gpus[gid].name
        stacks.append(mc.memory_stack(label, bg, paged_seq, c.n_seq))
    title = mc.memory_stack_title(c.model.name, c.gpu.name, c.layout, c.pp)
    st.plotly_chart(mc.memory_stack_figure(stacks, title), width="stretch")
    if len(stacks) > 1:
        st.caption("Other candidate accelerators at the same TP, PP, dtypes and load.")

    left, right = st.columns(2)
    off = curve["offload_at"]
    # the metric above counts what fits; the chart where it stops fitting: say both (issue 38:
    # "Sequences (paged) 921" beside "offloading starts: 922 sequences" read as a disagreement)
    t = (f"KV fits {off - 1:,} sequences (as above); offloading starts at sequence {off:,}"
         if off else "No room for any KV cache")  # fmt: skip
    left.plotly_chart(mc.kv_demand_figure(curve, t), width="stretch")
    rows = cache.allocation_comparison(
        c.model, c.gpu.id, tp=c.tp, pp=c.pp, weights_dtype=c.wd, kv_dtype=c.kd,
        context_tokens=c.context, max_model_len=c.max_len, attention_dp=c.dpa,
        engine=c.scenario.options.engine,
    )  # fmt: skip
    t = f"Paged vs contiguous allocation at {c.context:,} tokens"
    right.plotly_chart(mc.allocation_figure(rows, t, c.bs), width="stretch")
    return b


def attention_dp_what_if(c: SimpleNamespace, b, kw: dict) -> None:
    """The same GPUs with attention data parallel: a what-if beside the plain-TP deployment in
    focus (the search weighs the layout too, and a deployment it chose so is shown as such)."""
    d = cache.budget(c.model, c.gpu.id, **{**kw, "attention_dp": True})
    why = (
        "MLA's latent KV, which TP copies to every GPU, is kept only by the GPU running the "
        "sequence"
        if c.model.is_mla
        else "each GPU keeps the KV of its own sequences only"
    )
    if not d.fits:
        outcome = "would not fit: " + "; ".join(d.reasons)
    else:
        outcome = (
            f"{gb(d.weights_bytes_per_gpu)} of weights per GPU "
            f"(+{gb(d.weights_bytes_per_gpu - b.weights_bytes_per_gpu)}: what {kw['engine']} "
            f"keeps whole on every GPU), **{d.max_concurrent_sequences:,} sequences** (paged) instead "
            f"of {b.max_concurrent_sequences:,}"
        )
    st.caption(
        f"What if attention ran data parallel over these {c.tp} GPUs (vLLM "
        f"`--data-parallel-size {c.tp}`, SGLang `--attn-dp-size {c.tp}`, TensorRT-LLM "
        f"`enable_attention_dp`; routed experts stay split)? {outcome}; {why}. A what-if of the "
        "same GPUs: the search weighs this layout "
        "against the one in focus; `python -m advisor estimate ... --dp-attention` gives its "
        "latency and throughput."
    )


def sweep_section(c: SimpleNamespace) -> None:
    rows = cache.max_sequences_sweep(
        c.model, c.gpu.id, weights_dtype=c.wd, kv_dtypes=tuple(c.scenario.options.kv_dtypes),
        pp=c.pp, block_size=c.bs, attention_dp=c.dpa, engine=c.scenario.options.engine,
    )  # fmt: skip
    t = f"Max concurrent sequences vs context: {c.model.name} on {c.gpu.name}, {c.wd} weights"
    if c.dpa:
        t += ", attention DP over each TP group"
    st.plotly_chart(mc.max_sequences_figure(rows, t, c.context), width="stretch")
    st.caption("A gap: nothing fits at that TP (weights exceed the GPU, or no room for KV).")


def article_section(c: SimpleNamespace, b) -> None:
    st.subheader("The article's KV formula beside the correct one")
    m = c.model
    article = article_kv_bytes_per_sequence(
        c.context, 1, m.hidden_size, m.num_hidden_layers, DTYPE_BYTES[c.kd]
    )
    left, right = st.columns([2, 3])
    left.markdown("**Article:**")
    left.latex(r"2 \cdot L \cdot B \cdot d_{model} \cdot n_{layers} \cdot \text{bytes}")
    left.markdown("**Correct (grouped-query attention):**")
    left.latex(r"2 \cdot L \cdot B \cdot n_{kv} \cdot d_{head} \cdot n_{layers} \cdot \text{bytes}")
    width = (
        f"{m.num_key_value_heads} KV heads × {m.head_dim} = {m.num_key_value_heads * m.head_dim:,}"
    )
    mla = ("It uses multi-head latent attention and caches a compressed latent instead. "
           if m.is_mla else "")  # fmt: skip
    if m.num_sliding_window_layers:
        kind = "chunked local" if m.window_kind == "chunked" else "sliding-window"
        mla += (f"{m.num_sliding_window_layers} of its {m.num_hidden_layers} layers use "
                f"{kind} attention and keep at most {m.sliding_window:,} tokens each. ")  # fmt: skip
    left.markdown(
        f"For {md_escape(m.name)}, d_model = {m.hidden_size:,} but the cache stores {width} values per token "
        f"per layer for K and for V. {mla}At L = {c.context:,} tokens, B = 1, {c.kd}: the "
        f"article's formula gives **{gb(article, 2)}**, the correct figure is "
        f"**{gb(b.kv_bytes_per_sequence, 2)}** ({article / b.kv_bytes_per_sequence:.1f}× less), "
        f"of which each GPU holds {gb(b.kv_bytes_per_sequence_per_gpu, 3)} at TP={c.tp}, "
        f"PP={c.pp}. The article's formula holds only for multi-head attention "
        "(n_kv × d_head = d_model). Its “2.1 GB per sequence” for a 70B model at 4,096 tokens "
        "matches neither (10.7 GB by its formula, 1.34 GB with Llama-2-70B's 8 KV heads)."
    )
    t = f"KV cache of one {c.context:,}-token sequence, {c.kd}"
    right.plotly_chart(
        mc.kv_formula_figure(article, b.kv_bytes_per_sequence, b.kv_bytes_per_sequence_per_gpu, t),
        width="stretch",
    )
    with st.expander("Assumptions"):
        st.markdown("\n".join(f"- {x}" for x in b.assumptions))


st.title("Memory and KV budget")
ctx = guarded("Scenario", setup)
if ctx is not None:
    budget = guarded("Memory budget", budget_section, ctx)
    guarded("Max sequences against context", sweep_section, ctx)
    if budget is not None:
        guarded("The article's KV formula", article_section, ctx, budget)

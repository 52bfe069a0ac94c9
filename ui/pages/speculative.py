"""Speculative decoding: speedup against acceptance rate, draft length and batch size."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import streamlit as st

from advisor.catalog import accelerators
from advisor.catalog.drafts import draft_name, draft_spec
from advisor.catalog.spec_acceptance import default_acceptance
from advisor.charts import latency_charts as lc
from advisor.perf.model.replica import build_replicas
from advisor.perf.model.speculative_sweep import (
    compatible_drafts,
    paying_batches,
    speedup_grid,
    speedup_vs_batch,
)
from advisor.perf.model.sweeps import batch_cap, batch_grid, fmt_ms, replica_config
from advisor.physics.speculative import expected_tokens_per_step
from advisor.search.focus import estimate_input
from ui.cache import estimate_for
from ui.focus import focus_estimate, sequences_in_flight, show_focus
from ui.format import md_escape, sig3
from ui.state import current, guarded

SS = st.session_state
ACCEPTANCES = np.round(np.linspace(0.0, 1.0, 21), 2)
KS = np.arange(1, 9)


def setup() -> SimpleNamespace | None:
    scenario, view = current()
    model = scenario.model_spec()
    f = show_focus(scenario)
    spec = f.spec
    gpu = accelerators()[spec.gpu]
    drafts = compatible_drafts(model)
    if not drafts:
        st.warning(
            f"{md_escape(model.name)} has no MTP head of its own and no smaller catalog model "
            "shares its tokenizer: nothing to draft with (a draft must share the vocabulary)."
        )
        return None
    preferred = scenario.options.draft_model
    default = preferred if preferred in drafts else drafts[0]
    o = scenario.options
    # A change of the sidebar's values resets these what-if controls to them.
    side = (o.draft_model, o.spec_acceptance, o.spec_tokens)
    if SS.get("spec.side") != side:
        for key in ("spec.draft", "spec.acceptance", "spec.k"):
            SS.pop(key, None)
        SS["spec.side"] = side
    c1, c2, c3 = st.columns(3)
    draft_id = c1.selectbox("Draft model", drafts, index=drafts.index(default),
                            format_func=lambda m: draft_name(model, m), key="spec.draft")  # fmt: skip
    a = c2.slider("Acceptance rate (per drafted token)", 0.0, 1.0,
                  float(o.spec_acceptance), 0.05, key="spec.acceptance")  # fmt: skip
    k = c3.slider("Draft tokens per step (k)", 1, 8, min(int(o.spec_tokens), 8),
                  key="spec.k")  # fmt: skip
    ref = default_acceptance(model.id, draft_id)
    st.caption(
        "The sidebar's Serving section sets these for the search and the PDF; here they can be "
        f"varied. Acceptance for this pair: {ref.acceptance:.2f}, "
        + ("published: " if ref.published else "")
        + md_escape(ref.source)
        + "."
    )
    # the target replica without a draft: the page draws speculation's effect at any (a, k)
    inp = estimate_input(scenario, spec.model_copy(update={"speculative": False}),
                         concurrency=1)  # fmt: skip
    cfg = replica_config(model, gpu, inp)
    ctx = inp.isl + inp.osl / 2.0
    cap = batch_cap(build_replicas([cfg]), inp.isl + inp.osl)
    n_seq, how = sequences_in_flight(scenario, f, view.concurrency)
    batch = float(max(1, min(n_seq, cap))) if cap >= 1 else 1.0
    # the sweeps' replica at the load of the estimates below (``int(batch)`` per replica), so a
    # client profile prices both or neither (advisor/perf/model/replica.applied)
    inp = inp.model_copy(update={"concurrency": int(batch) * inp.dp})
    cfg = replica_config(model, gpu, inp)
    on = (
        f"on in the deployment in focus (draft {md_escape(draft_name(model, default))}, "
        f"k = {scenario.options.spec_tokens}, acceptance {scenario.options.spec_acceptance:g})"
        if spec.speculative
        else "off in the deployment in focus: this page shows what it would do"
    )
    st.caption(
        f"Speculative decoding is {on}. "
        f"Target **{md_escape(model.name)}** on **{gpu.name}** ({spec.layout}, "
        f"PP={inp.pp}, {inp.weights} "
        f"weights, KV {inp.kv}), draft **{md_escape(draft_name(model, draft_id))}** on the same GPUs. Batch "
        f"**{batch:,.0f} sequences** per replica ({how}"
        + (f"; capped at the {cap:,} the KV cache holds" if n_seq > cap else "")
        + f"), context {ctx:,.0f} tokens."
    )  # fmt: skip
    return SimpleNamespace(
        scenario=scenario, model=model, gpu=gpu, draft=draft_spec(model, draft_id), a=a, k=k, inp=inp,
        cfg=cfg, ctx=ctx, cap=cap, batch=batch, spec=spec,
        latency=focus_estimate(scenario, f, view.concurrency),
    )  # fmt: skip


def _latency_caption(c: SimpleNamespace, same_kind: dict, n: str) -> None:
    """The Latency page's mean TPOT of the deployment in focus beside this page's: speculation
    is modelled only at a fixed batch, while the Latency page runs the scenario's load (issue
    38's replay: "TPOT without speculation, batch 23" 30.1 ms here, mean TPOT 29.5 ms there,
    under the closed loop of 400 users)."""
    inp, lat = c.latency
    if not lat.get("fits") or lat.get("stable") is False or not same_kind.get("fits"):
        return
    what = "with speculation" if c.spec.speculative else "without speculation"
    if fmt_ms(lat["tpot_ms"]) == fmt_ms(same_kind["tpot_ms"]):
        st.caption(f"The Latency page's mean TPOT {what} is this one: {fmt_ms(lat['tpot_ms'])}.")
        return
    if c.spec.speculative:  # the same fixed batch: only the controls above differ
        st.caption(
            f"The Latency page's mean TPOT with speculation, {fmt_ms(lat['tpot_ms'])}, is at the "
            "sidebar's draft, k and acceptance; the controls above vary them here."
        )
        return
    w = c.scenario.workload
    users = (f"the closed loop of {w.concurrent_users:,} users thinking {w.think_time_s:g} s, "
             if w.concurrent_users is not None else "")  # fmt: skip
    load = (
        f"under {users}{sig3(inp.qps)} requests/s, {sig3(lat['running_per_replica'])} sequences running "
        "per replica on average" if inp.qps is not None
        else f"at {sig3(lat['running_per_replica'])} sequences running per replica"
    )  # fmt: skip
    st.caption(
        f"Both TPOTs here keep {n} sequences running on each replica (the decode batch): "
        "speculation is modelled at a fixed batch only. The Latency page's mean TPOT "
        f"{what}, {fmt_ms(lat['tpot_ms'])}, is the deployment in focus {load}: another load, "
        "not another figure for this one."
    )


def summary_section(c: SimpleNamespace) -> None:
    if c.cap < 1:
        st.error(
            f"{md_escape(c.model.name)} does not fit at TP={c.inp.tp}, PP={c.inp.pp}: no sequence fits."
        )
        return
    # The estimate itself (same physics), at the scenario's batch and the chosen (a, k).
    est = estimate_for(c.model, c.gpu, c.inp.model_copy(update={
        "concurrency": int(c.batch) * c.inp.dp, "spec_draft": c.draft, "spec_tokens": c.k,
        "spec_acceptance": c.a,
    }))  # fmt: skip
    if not est["fits"]:
        st.error("Not servable as set: " + "; ".join(est["reasons"]))
        return
    if est.get("client_profile_fallback"):  # outside the session profile's range
        st.caption("Client profile not applied here: " + md_escape(est["client_profile_fallback"])
                   + "; the shipped calibration is used.")  # fmt: skip
    # the same load without a draft: both TPOTs count the prefills interleaved with decoding
    plain = estimate_for(c.model, c.gpu, c.inp.model_copy(update={
        "concurrency": int(c.batch) * c.inp.dp}))  # fmt: skip
    s = est["speculative"]
    bs = batch_grid(c.cap)
    pays = paying_batches(bs, speedup_vs_batch(c.cfg, c.draft, bs, c.ctx, c.a, np.array([c.k]))[0])
    # one story at the scenario's load (issue 38: "1.55x" beside "stops paying at batch 1" and
    # a speculative TPOT above the plain step, which left out the interleaved prefills)
    n = f"{c.batch:,.0f}"
    m = st.columns(3) + st.columns(3)
    m[0].metric(f"Speedup per token at batch {n}", f"{s['speedup']:.2f}×",
                help="of the decode steps: plain decode step / (k draft steps + one verify "
                "step) × tokens per target step, at the scenario's running batch. The TPOTs "
                "beside it also count the prefills interleaved with decoding, which "
                "speculation does not speed up: their ratio is smaller")  # fmt: skip
    # a fixed batch, not the Latency page's load: said once in the caption under the metrics,
    # since a metric box in a third of a 1280 px page cuts a label past ~35 characters
    kept = f"with {n} sequences kept running on each replica (the decode batch)"
    m[1].metric("TPOT, no speculation (ms)",
                sig3(plain["tpot_ms"]) if plain.get("fits") else "n/a", help=kept)  # fmt: skip
    m[2].metric("TPOT, with speculation (ms)", sig3(est["tpot_ms"]),
                help=f"{kept}; both TPOTs count the prefills interleaved with decoding")  # fmt: skip
    m[3].metric("Tokens per target step", f"{s['expected_tokens_per_step']:.2f}",
                help="(1 − a^(k+1)) / (1 − a), Leviathan et al. 2023")  # fmt: skip
    m[4].metric("Draft step (ms)", sig3(s["draft_step_ms"]))
    m[5].metric("Verify step / plain step (ms)",
                f"{sig3(s['verify_step_ms'])} / {sig3(s['plain_step_ms'])}")  # fmt: skip
    if plain.get("fits") and est["tpot_ms"] > 0:
        # said where it is seen, not in a tooltip: the two ratios differ by the prefills
        ratio = plain["tpot_ms"] / est["tpot_ms"]
        change = f"{ratio:.2f}× lower" if ratio >= 1 else f"{1 / ratio:.2f}× higher"
        why = ("every TPOT also carries the prefills interleaved with decoding, which "
               "speculation does not speed up")  # fmt: skip
        if ratio < 1:  # the draft's own passes over new prompts stall decoding
            why = ("the draft prefills every new prompt on these GPUs to build its KV"
                   + (" (the target's prompts are prefilled on the other pool, the draft's are "
                      "not)" if c.inp.prefill_elsewhere else "")
                   + ", and those passes stall decoding more than speculation saves")  # fmt: skip
        st.caption(
            f"With {n} sequences kept running on each replica: decode steps "
            f"{s['speedup']:.2f}× faster; TPOT {change} ({sig3(plain['tpot_ms'])} → "
            f"{sig3(est['tpot_ms'])} ms), because {why}."
        )
    _latency_caption(c, plain if not c.spec.speculative else est, n)
    # a sentence, not a metric: "batch 4 to 16 (the largest tried)" does not fit a metric box
    st.markdown(f"**Pays (speedup ≥ 1×) at:** {pays}, on the batch grid up to the {c.cap:,} "
                "sequences the KV cache holds.")  # fmt: skip


def heatmap_section(c: SimpleNamespace) -> None:
    grid = speedup_grid(c.cfg, c.draft, c.batch, c.ctx, ACCEPTANCES, KS)
    best = np.unravel_index(np.argmax(grid), grid.shape)
    title = f"Speedup at batch {c.batch:,.0f}: acceptance rate × draft length"
    left, right = st.columns(2)
    left.plotly_chart(lc.speedup_heatmap(grid, ACCEPTANCES, KS, title), width="stretch")
    pays = ACCEPTANCES[(grid >= 1.0).any(axis=0)]
    left.caption(
        f"Best here: k = {KS[best[0]]} at acceptance {ACCEPTANCES[best[1]]:.2f} "
        f"({grid[best]:.2f}×). "
        + (f"Below acceptance {pays.min():.2f} no k pays at this batch. " if pays.size else
           "No (acceptance, k) pays at this batch. ")
        + "Dashed line: speedup = 1×."
    )  # fmt: skip
    ks = sorted({1, 2, 4, 8, c.k})
    bs = batch_grid(c.cap)
    sv = speedup_vs_batch(c.cfg, c.draft, bs, c.ctx, c.a, np.array(ks))
    right.plotly_chart(
        lc.speedup_batch_figure(bs, sv, ks, f"Speedup vs batch at acceptance {c.a:.2f}", c.batch),
        width="stretch",
    )
    e = expected_tokens_per_step(c.a, c.k)
    right.caption(
        f"Verification processes batch × (k+1) tokens in one target step: memory-bound at small "
        f"batch (almost free), compute-bound at large batch, where the {e:.2f} tokens per step "
        "no longer pay for the draft steps and the bigger verify step."
    )


st.title("Speculative decoding")
ctx = guarded("Scenario", setup)
if ctx is not None:
    guarded("Speculative estimate", summary_section, ctx)
    if ctx.cap >= 1:
        guarded("Speedup maps", heatmap_section, ctx)

"""Latency: the deployment in focus under the scenario's load (the search's percentiles), and
one of its replicas in detail: TTFT/TPOT breakdown, roofline and batch sweep."""

from __future__ import annotations

from types import SimpleNamespace

import streamlit as st

from advisor.catalog import accelerators, fabric_names
from advisor.charts import latency_charts as lc
from advisor.perf.model.replica import build_replicas
from advisor.perf.model.step import REFERENCE_LAYER_KERNELS
from advisor.perf.model.sweeps import (
    batch_cap,
    batch_grid,
    batch_sweep,
    fmt_ms,
    replica_config,
    roofline_points,
)
from advisor.report.figures import latency_rows
from advisor.search.results import decode_batch_seqs, priced_step_ms
from ui.focus import focus_estimate, show_focus
from ui.format import (
    interval_text,
    md_escape,
    percentile_points_ms,
    plural,
    sig3,
    sla_answer,
    usd,
)
from ui.state import current, guarded


def setup() -> SimpleNamespace:
    scenario, view = current()
    model = scenario.model_spec()
    f = show_focus(scenario)
    spec = f.spec
    gpu = accelerators()[spec.gpu]
    inp, est = focus_estimate(scenario, f, view.concurrency)
    w = scenario.workload
    users = (
        f"{w.concurrent_users:,} users thinking {w.think_time_s:g} s → "
        if w.concurrent_users is not None and view.concurrency is None
        else ""
    )
    load = (
        f"{users}{sig3(inp.qps)} requests/s over {plural(inp.dp, 'replica')} (steady-state queueing)"
        if inp.qps is not None
        else f"{users}{inp.concurrency:,} requests in flight over {plural(inp.dp, 'replica')}"
        + (" (set on the Memory page)" if view.concurrency is not None else "")
    )
    pools = (
        f"; decode pool {spec.dp} × TP={spec.tp}, prefill pool {spec.prefill_dp} × "
        f"TP={spec.prefill_tp} (the replica below is a decode-pool one: its prompts are "
        "prefilled on the other pool)" if spec.disaggregated else ""
    )  # fmt: skip
    st.caption(
        f"**{md_escape(model.name)}** on **{gpu.name}**, {spec.layout}, "
        f"PP={inp.pp}, weights {inp.weights}, "
        f"KV {inp.kv}{', speculative decoding' if spec.speculative else ''}{pools}; "
        f"{inp.isl:,} input + {inp.osl:,} output tokens; load: {load}."
    )
    return SimpleNamespace(scenario=scenario, view=view, model=model, gpu=gpu, inp=inp, est=est,
                           focus=f)  # fmt: skip


def profile_section(c: SimpleNamespace) -> None:
    p = c.est["engine_profile"]
    cal = (
        "calibrated on the published measurements"
        if p["calibrated"]
        else "defaults, NOT calibrated"
    )
    fam = "calibrated" if p["family_calibrated"] else "priors (not calibrated)"
    us = p["kernel_dispatch_us"]
    dispatch = (
        f"a prefill at least {us:.1f} µs per kernel (host dispatch of an eager pass)"
        if us >= 0.05  # what the one decimal shows
        else "a prefill's host dispatch fitted at about 0 µs per kernel (no floor under it)"
        if us > 0
        else "no host-dispatch floor under a prefill (this engine does not run it kernel by "
        "kernel from Python)"
    )
    moe = (
        f" Routed-expert (MoE) kernels at {p['moe_efficiency']:.0%} of that efficiency "
        f"({'fp8/fp4' if p['low_precision_experts'] else '16-bit'} experts, fitted), plus "
        f"{p['moe_expert_overhead_us']:.2f} µs per expert a GPU holds in each MoE layer and pass, "
        "whatever the batch (fitted per accelerator family). A batch of n sequences reads the "
        f"experts n^{p.get('routing_draw_exponent') or 1.0:.2f} independent tokens would pick "
        "(fitted: routers share popular experts)."
        if p.get("moe_efficiency") is not None
        else ""
    )
    fabric = fabric_names().get(p["collective_fabric"], p["collective_fabric"])
    comm = (
        f"All-reduces over {fabric} move their data at {p['collective_efficiency']:.0%} of its "
        f"nccl-tests rate, their latencies as measured ({p['collective_note']})."
        if p["collective_calibrated"]
        else f"All-reduces over {fabric} move their data at {p['collective_efficiency']:.0%} of "
        f"its nccl-tests rate, **uncalibrated** ({p['collective_note']})."
    )
    fp4 = (
        f", fp4 compute {p['eta_compute_fp4']:.0%}"
        if p["eta_compute_fp4"] != p["eta_compute_fp8"]
        else ""
    )
    st.info(
        f"Engine profile **{p['name']}** ({cal}): step overhead {p['step_overhead_ms']:.2f} ms, "
        f"{p['layer_overhead_here_us']:.1f} µs per layer ({p['layer_kernels']:.1f} kernels; "
        f"{p['layer_overhead_us']:.1f} µs per {REFERENCE_LAYER_KERNELS:.0f}-kernel reference layer), "
        f"{dispatch}, "
        f"{p['seq_overhead_us']:.2f} µs per running sequence, request overhead "
        f"{p['request_overhead_ms']:.1f} ms, kernel efficiency ×{p['efficiency']:.2f} compute, "
        f"×{p['mem_efficiency']:.2f} memory, "
        f"max {p['max_num_seqs']:,} running sequences. {c.gpu.family} efficiencies ({fam}): "
        f"memory bandwidth {p['eta_mem']:.0%}, 16-bit compute {p['eta_compute_16']:.0%}, "
        f"fp8 compute {p['eta_compute_fp8']:.0%}{fp4} of datasheet.{moe} {comm}"
    )


def focus_section(c: SimpleNamespace) -> bool:
    """The deployment in focus at the scenario's load: the search's percentiles (the numbers
    of the Recommendation page). False when it cannot run at all."""
    f, pct = c.focus, c.scenario.sla.percentile
    if not f.result.fits:  # the banner above says why
        return False
    d = f.deployment
    m = st.columns(6)
    for col, name in zip(m[:3], ("ttft", "tpot", "e2e"), strict=True):
        col.metric(f"P{pct} {name.upper()}", fmt_ms(getattr(d, f"{name}_ms").at(pct)))
    m[3].metric("Tok/s per GPU", f"{d.throughput_per_gpu_tok_s:,.0f}",
                help="output tokens/s per GPU at the offered load")  # fmt: skip
    m[4].metric("USD / M tokens", usd(d.usd_per_million_tokens),
                help="per million output tokens at the offered load")  # fmt: skip
    m[5].metric("Meets the SLA", sla_answer(d), help=c.scenario.sla.describe())
    rows = [
        {"metric": name.upper(),
         **{p.upper(): fmt_ms(getattr(getattr(d, f"{name}_ms"), p)) for p in ("p50", "p90", "p95", "p99")}}
        for name in ("ttft", "tpot", "e2e")
    ]  # fmt: skip
    st.dataframe(rows, hide_index=True)
    if ranges := interval_text(
        d.intervals, percentile_points_ms(d, pct)
    ):  # the same ranges as the Recommendation page
        st.caption(ranges)
    st.caption(
        f"SLA: {c.scenario.sla.describe()}. Percentiles of the whole deployment from the "
        f"search's queueing model ({plural(d.gpus, 'GPU')}, decode batch "
        f"{decode_batch_seqs(d.running_batch)} per replica (1 + the mean {sig3(d.running_batch)} "
        f"running, rounded: a token's own sequence and the others), saturates at "
        f"{sig3(d.max_rate_req_s)} requests/s)." + _step_text(d)
    )
    return True


def _step_text(d) -> str:
    """The decode step the search priced for the deployment in focus, with its communication:
    the figure of Recommendation, Interconnect and the PDF (search/results.priced_step_ms)."""
    priced = priced_step_ms(d)
    if priced is None or not d.stable:
        return ""
    parts, step_ms, batch = priced
    what = (
        "collectives" if d.ep > 1 or d.attention_dp > 1
        else "all-reduce" if d.tp > 1
        else "pipeline hand-offs"  # TP=1: no all-reduce (the Interconnect page says so)
    )  # fmt: skip
    comm = parts.get("communication", 0.0)
    return (
        f" Its decode step at decode batch {batch:.0f}: {step_ms:.2f} ms"
        + (f", {what} {comm:.2f} ms" if comm > 0 else "")
        + " (the step the search priced; the chart below draws it)."
    )


def summary_section(c: SimpleNamespace) -> bool:
    st.subheader("One replica in detail (performance model, means)")
    e = c.est
    for w in e.get("warnings") or []:
        st.warning(md_escape(w))
    if not e["fits"] or e.get("stable") is False:
        st.error("Not servable as set: " + "; ".join(e["reasons"]))
        if e.get("suggestions"):
            st.info("Would fit with: " + "; ".join(e["suggestions"]))
        return False
    m = st.columns(6)
    m[0].metric("Mean TTFT", fmt_ms(e["ttft_ms"]), help="time to first token (mean)")
    m[1].metric("Mean TPOT", fmt_ms(e["tpot_ms"]), help="time per output token (mean)")
    m[2].metric("Mean E2E", fmt_ms(e["e2e_ms"]), help=f"TTFT + {c.inp.osl - 1} × TPOT")
    m[3].metric("Output tok/s", f"{e['throughput_tok_s']:,.0f}",
                help="output tokens/s over the DP replicas")  # fmt: skip
    m[4].metric("Tok/s per GPU", f"{e['throughput_tok_s_per_gpu']:,.0f}",
                help="output tokens/s per GPU of these replicas")  # fmt: skip
    # a mean, beside the caption's decode batch (1 + the mean, rounded): both say which
    # (issue 38: "Running seqs / replica 21.8" read as a second figure for "decode batch 23").
    # At the scenario's load it is the search's mean, the caption's: the estimate re-evaluates
    # the step exactly where the search interpolates it, which moves an EP layout's mean by ~1%
    # (TP=2 EP=2 on B200: 21.4 searched, 21.7 here), as the breakdown below keeps the search's.
    d = c.focus.deployment
    searched = c.view.concurrency is None and d is not None and d.stable
    running = d.running_batch if searched else e["running_per_replica"]
    exact = (f" (the search's queueing model, as in the caption above; the exact step here "
             f"gives {sig3(e['running_per_replica'])})" if searched else "")  # fmt: skip
    m[5].metric("Mean running seqs / replica", sig3(running),
                help=f"sequences decoding on a replica, on average{exact}; the decode batch a "
                "token waits for is 1 + this mean (its own sequence and the others). "
                f"{sig3(e['concurrency'])} in flight over the deployment; a replica's KV cache "
                f"holds up to {e['max_concurrency']:,}")  # fmt: skip
    for n in e.get("notes") or []:
        st.caption(n)
    return True


def breakdown_section(c: SimpleNamespace) -> None:
    d = c.focus.deployment
    if c.view.concurrency is None and d is not None and d.stable and priced_step_ms(d):
        # the search's priced step, as in the PDF's chart (report/figures.latency_rows): the
        # estimate above re-evaluates the step exactly at its mean running batch, a few %
        # off (issue 38: all-reduce 2.76 ms here, 2.70 ms on Recommendation)
        rows = latency_rows(d, c.scenario)
    else:
        rows = lc.breakdown_rows(c.est)
    title = f"Where the time goes: {c.model.name}, {c.focus.spec.layout}, PP={c.inp.pp}"
    st.plotly_chart(lc.breakdown_figure(rows, title), width="stretch")
    if "TTFT" not in rows:
        st.caption(
            "The deployment in focus as the search priced it (the PDF's chart): one prompt's "
            "prefill alone, and the mean TPOT as the decode step at the decode batch plus the "
            "prefills that stall it. Compute and memory overlap (roofline): the step shows only "
            "the binding one."
        )
        return
    st.caption(
        "Compute and memory overlap (roofline): the step shows only the binding one. "
        "Dequantization appears only when it is not hidden under the weight reads. Host "
        "dispatch: an eager prefill (SGLang, TensorRT-LLM's PyTorch backend) waits for the CPU "
        "to issue its kernels when the GPU's work is the shorter. TTFT bar = "
        "the prefill plus queueing: with a fixed number of sequences, the wait for the decode "
        "iteration in flight and for prompts queued ahead (a closed loop of clients); under a "
        "request rate, the queueing model's mean wait. TPOT bar = "
        "one decode step at the running batch (plus prefill interruptions per token). Under a "
        "request rate the bar is one decode step at the mean running batch; the TPOT metric is "
        "the queueing model's mean, which also counts prefills interleaved with decoding."
    )


def roofline_section(c: SimpleNamespace) -> None:
    cfg = replica_config(c.model, c.gpu, c.inp)
    r = build_replicas([cfg])
    ctx = c.inp.isl + c.inp.osl / 2.0
    cap = batch_cap(r, c.inp.isl + c.inp.osl)
    if cap < 1:
        st.warning("No sequence fits in the KV budget: no batch sweep.")
        return
    sweep = batch_sweep(r, ctx, batch_grid(cap))
    d, priced = c.focus.deployment, None
    if c.view.concurrency is None and d is not None and d.stable:
        priced = priced_step_ms(d)
    # the decode batch the captions above state (search/results.decode_batch; issue 38: "decode
    # batch 23" above "decode (batch 22)", the estimate's mean running batch, on the charts)
    batch = priced[2] if priced else max(float(c.est.get("running_per_replica") or 1.0), 1.0)
    pts = roofline_points(r, c.inp.isl, batch, ctx)
    wd = c.inp.weights
    g = c.gpu.peak_flops_per_s
    ds_peak = (g.fp8 if wd == "fp8" and g.fp8 else (g.bf16 or g.fp16)) or pts["peak_flops_per_s"]
    left, right = st.columns(2)
    left.plotly_chart(
        lc.roofline_figure(pts, sweep, f"Roofline: {c.gpu.name}, {wd} weights",
                           datasheet=(ds_peak, c.gpu.hbm_bandwidth_bytes_per_s)),
        width="stretch",
    )  # fmt: skip
    left.caption(
        f"Achievable peak {pts['peak_flops_per_s'] / 1e12:,.0f} TFLOP/s and memory bandwidth "
        f"{pts['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s per GPU (datasheet × calibrated "
        f"efficiency): ridge at {pts['ridge_flops_per_byte']:,.0f} FLOP/byte. Left of it a step "
        "is memory-bound, right of it compute-bound."
    )
    right.plotly_chart(
        lc.batch_figure(sweep, f"Decode step and throughput vs batch (max {cap:,})", batch),
        width="stretch",
    )
    right.caption(
        f"One replica, context {ctx:,.0f} tokens (input + half the output). Up to {cap:,} "
        "sequences: the KV budget or the engine's max_num_seqs, whichever is lower."
    )


def benchmark_section(c: SimpleNamespace) -> None:
    """What the engine's benchmark client would print for a finite run of this load: a
    client's own `vllm bench serve` figures read against the tool's (a short run's first wave
    puts its mean TTFT far above the steady state's)."""
    from advisor.perf.model.intervals import side_of_range
    from advisor.perf.validation.bench_forecast import (
        CLIENTS,
        MAX_PROMPTS,
        ForecastInputError,
        forecast_for,
        unsupported,
    )

    inp = c.inp
    with st.expander(
        "What your benchmark run would print (vllm bench serve / sglang.bench_serving)"
    ):
        why = unsupported(inp)
        if why or not c.est.get("fits"):
            st.caption(f"Not replayed: {why or 'the deployment does not fit'}.")
            return
        per = (f"from {inp.concurrency:,} clients (--max-concurrency)" if inp.qps is None
               else f"sent at {sig3(inp.qps)} requests/s (--request-rate)")  # fmt: skip
        default = (min(10 * int(inp.concurrency), MAX_PROMPTS) if inp.qps is None
                   else int(min(max(100, inp.qps * 120), MAX_PROMPTS)))  # fmt: skip
        cols = st.columns(3)
        prompts = cols[0].number_input("Prompts (--num-prompts)", 1, MAX_PROMPTS * inp.dp,
                                       default, step=10, key="bench_prompts")  # fmt: skip
        client = cols[1].selectbox("Client", CLIENTS, key="bench_client",
                                   index=CLIENTS.index("sglang" if inp.engine == "sglang" else "vllm"),
                                   help="vllm draws lengths on [L(1-r), L(1+r)], sglang on [rL, L]")  # fmt: skip
        ratio = cols[2].number_input("Range ratio (--random-range-ratio)", 0.0, 0.99, 0.0,
                                     step=0.05, key="bench_ratio")  # fmt: skip
        try:
            run = forecast_for(c.model, c.gpu, inp, prompts=int(prompts), client=client,
                               range_ratio=float(ratio), regime=c.est.get("load_regime"))  # fmt: skip
        except ForecastInputError as exc:
            st.error(f"{exc.field.replace('_', ' ')}: {md_escape(exc)}")
            return
        st.code(run.command, language="bash")
        pct = f"{run.confidence:.0%}"
        rows = []
        for metric in ("ttft", "tpot", "itl", "e2e"):
            row = {"metric": metric.upper()}
            for st_name, label in (
                ("mean", "mean"),
                ("median", "P50"),
                ("p90", "P90"),
                ("p99", "P99"),
            ):
                v = run.ms[metric][st_name]
                lo, hi = run.ranges[metric].get(st_name, (v, v))
                side = side_of_range(v, lo, hi)  # as the CLI prints it
                row[label] = f"{fmt_ms(v)} ({fmt_ms(lo)}–{fmt_ms(hi)}{', ' + side if side else ''})"
            rows.append(row)
        st.dataframe(rows, hide_index=True)
        st.caption(
            f"{run.prompts:,} prompts {per}: the run lasts {sig3(run.duration_s)} s, "
            f"{run.output_tok_s:,.0f} output tok/s. Replayed iteration by iteration on this "
            f"replica's modelled step times (seeded lengths, as the client draws them); in "
            f"brackets the {pct} range from held-out errors of published rows of that statistic. "
            "The figures above this one are the steady service, without the run's start-up wave."
        )
        for n in run.notes:
            st.caption(n)


st.title("Latency")
ctx = guarded("Scenario", setup)
if ctx is not None:
    guarded("Deployment in focus", focus_section, ctx)
    guarded("Engine profile", profile_section, ctx)
    if guarded("Latency estimate", summary_section, ctx):
        guarded("Breakdown", breakdown_section, ctx)
        guarded("Benchmark run", benchmark_section, ctx)
    guarded("Roofline and batch sweep", roofline_section, ctx)

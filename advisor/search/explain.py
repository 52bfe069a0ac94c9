"""Plain-language reasons the winner wins, and the decision-matrix agreement check.

Every sentence is computed from the evaluated arrays (no canned text): the all-reduce share of
the winner's step, what TP x 2 and TP / 2 would change, what the weight dtype saves against
fp16, the speculative speedup at the operating batch, and the cost/GPU trade-offs.
"""

from __future__ import annotations

import numpy as np

from advisor.catalog.drafts import draft_name
from advisor.physics.queueing.results import unstable_text
from advisor.search.deployment_spec import layout_text
from advisor.search.evaluate import decode_step_ms, interp_step
from advisor.search.ranking import (
    deciding_key,
    lexsort_first,
    rank_first,
    same_price,
    tie_break_text,
)
from advisor.search.results import DecisionMatrix, decode_batch
from advisor.search.sla import AT_RISK, VERDICTS
from advisor.search.space import Shape, scenario_draft, search_weights


def _find(st, **want) -> int | None:
    """Row of the shape with exactly these fields (gpu, tp, pp, weights, kv, spec, layout), or
    None."""
    return st.row_of.get(Shape(**want))


def _step_ms(st, k: int, b: float) -> float:
    return float(interp_step(st.step_tab_s[k : k + 1], np.array([b]))[0]) * 1e3


def explain(sc, t, best_i: int, ratio, lat, metric: str, risk: list[str] = ()) -> list[str]:
    """Why candidate ``best_i`` wins; ``risk``: its ``Deployment.at_risk`` lines when it is
    recommended "at risk" (search/sla.py)."""
    st = t.st
    k = int(t.shape_of[best_i])
    s = st.shapes[k]
    b = decode_batch(float(t.running[best_i]))
    warning, verdict = confidence_lines(sc, t, best_i)
    out = [warning] if warning else []
    disagg = best_i >= t.na
    pool = "Decode pool: " if disagg else ""
    if disagg:
        out.extend(_disaggregated_lines(sc, t, best_i, ratio, b, lat, metric))
    # the step as the search priced it (the Deployment's step_breakdown_ms, the PDF's chart)
    parts, step = decode_step_ms(st, k, b)
    total = sum(parts.values()) / 1e3
    comm = parts["communication"] / 1e3
    link = str(st.r.tp_link_id[k])
    what = "all-reduce" if not (s.ep or s.dpa) else "collectives"
    if s.tp > 1:
        out.append(
            f"{pool}{s.layout} on {link}: {what} {comm * 1e3:.2f} ms, {comm / total:.0%} of the "
            f"{total * 1e3:.2f} ms decode step at batch {b:.0f}."
        )
    else:
        out.append(
            f"{pool}TP=1: no all-reduce; the {total * 1e3:.2f} ms decode step at batch {b:.0f} is "
            f"{parts['memory'] / 1e3 / total:.0%} memory reads, "
            f"{parts['compute'] / 1e3 / total:.0%} compute, "
            f"{parts['overhead'] / 1e3 / total:.0%} engine overhead."
        )
    for tp2, word in ((s.tp * 2, "double"), (s.tp // 2, "halve")):
        if tp2 < 1 or tp2 == s.tp:
            continue
        # EP and attention DP spread over the TP GPUs: on one GPU the layout is plain TP=1.
        ep2, dpa2 = (s.ep, s.dpa) if tp2 > 1 else (False, False)
        k2 = _find(
            st,
            gpu=s.gpu,
            tp=tp2,
            pp=s.pp,
            weights=s.weights,
            kv=s.kv,
            spec=s.spec,
            ep=ep2,
            dpa=dpa2,
        )
        label = layout_text(tp2, ep2, dpa2)
        if k2 is None:
            if word == "halve":
                out.append(f"{label} does not fit in memory with {s.weights} weights.")
            continue
        d_all = _step_ms(st, k2, b) - _step_ms(st, k, b)
        c2 = decode_step_ms(st, k2, b)[0]["communication"] / 1e3
        over = f" ({st.r.tp_link_id[k2]})" if tp2 > 1 else ""
        out.append(
            f"{pool}{label}{over} would {'add' if d_all > 0 else 'save'} "
            f"{abs(d_all):.2f} ms per decode step at batch {b:.0f} ({what} "
            f"{c2 * 1e3:.2f} ms vs {comm * 1e3:.2f} ms) on {tp2 * s.pp} instead of "
            f"{s.tp * s.pp} GPU{'' if s.tp * s.pp == 1 else 's'} per replica."
        )
    if s.weights != "fp16":
        k16 = _find(
            st,
            gpu=s.gpu,
            tp=s.tp,
            pp=s.pp,
            weights="fp16",
            kv=s.kv,
            spec=s.spec,
            ep=s.ep,
            dpa=s.dpa,
        )
        mem = float(step.bytes_per_gpu[0])
        if k16 is None:
            out.append(f"{s.weights.upper()} weights make TP={s.tp} fit; fp16 would not.")
        else:
            s16 = _step_ms(st, k16, b)
            dq = parts["dequant"] / 1e3
            out.append(
                f"{s.weights.upper()} weights: decode step {_step_ms(st, k, b):.2f} ms vs "
                f"{s16:.2f} ms at fp16 (batch {b:.0f}; {mem / 1e9:.1f} GB read per GPU per step"
                + (f"; dequantization {dq * 1e3:.2f} ms" if dq > 0 else "")
                + ")."
            )
    if s.spec:
        speed = float(st.plain_tab_s[k, 0] / st.step_tab_s[k, 0])
        sp_b = float(
            interp_step(st.plain_tab_s[k : k + 1], np.array([b]))[0]
            / interp_step(st.step_tab_s[k : k + 1], np.array([b]))[0]
        )
        out.append(
            f"Speculative decoding ({draft_name(sc.model_spec(), scenario_draft(sc)[0])}, "
            f"k={sc.options.spec_tokens}, "
            f"acceptance {sc.options.spec_acceptance:g}: {st.tokens_per_step:.2f} tokens/step): "
            f"{speed:.2f}x faster per token at batch 1, {sp_b:.2f}x at batch {b:.0f}."
        )
    elif sc.options.speculative and scenario_draft(sc)[0] is None:
        out.append(f"Speculative decoding not searched: {scenario_draft(sc)[1]}.")
    elif sc.options.speculative and disagg:
        out.append("Speculative decoding is not modelled inside disaggregated pools.")
    elif sc.options.speculative:
        k2 = _find(st, gpu=s.gpu, tp=s.tp, pp=s.pp, weights=s.weights, kv=s.kv, spec=True,
                   ep=s.ep, dpa=s.dpa)  # fmt: skip
        if k2 is not None:
            sp_b = float(
                interp_step(st.plain_tab_s[k2 : k2 + 1], np.array([b]))[0]
                / interp_step(st.step_tab_s[k2 : k2 + 1], np.array([b]))[0]
            )
            out.append(
                f"Speculative decoding not chosen: {sp_b:.2f}x per-token speedup at batch "
                f"{b:.0f} does not pay for the draft's memory and cost at this load."
            )
    risky = VERDICTS[t.verdict[best_i]] == AT_RISK
    # the deployments the winner was chosen from: those that meet, or with none, those at risk
    feas = np.nonzero(t.verdict == t.verdict[best_i])[0]
    room = float(t.cap[best_i] / max(t.rate[best_i], 1e-300))
    won = (
        f"{feas.size} of {t.n} evaluated deployments meet the SLA; the winner"
        if not risky
        else f"None of the {t.n} evaluated deployments meets the SLA at "
        f"{sc.sla.confidence:.0%} confidence; {feas.size} meet it on their predictions (at "
        "risk), and the cheapest of those"
    )
    out.append(
        f"{won} costs ${float(t.cost[best_i]):.3f} per million output tokens on "
        f"{_n(int(t.gpus[best_i]), 'GPU')} with {metric} {float(lat[best_i]):.1f} ms; headroom "
        f"{room:.1f}x the offered rate before saturation."
    )
    out.extend(_tie_break_lines(sc, t, best_i, feas, room))
    if feas.size > 1:
        fastest = feas[np.argmin(lat[feas])]
        if fastest != best_i:
            out.append(
                f"The lowest-latency deployment that meets the SLA{' on its predictions' if risky else ''} "
                f"has {metric} {float(lat[fastest]):.1f} ms on {_n(int(t.gpus[fastest]), 'GPU')} at "
                f"${float(t.cost[fastest]):.3f}/M tokens."
            )
    # The measurement that narrows an "at risk" range is in the headline every view shows
    # (sla.risk_headline); the explanation names the targets only, so it is said once.
    out.append(verdict if not risky else "At risk: " + "; ".join(risk[:-1]) + ".")
    return out


def _tie_break_lines(sc, t, best_i: int, pool: np.ndarray, room: float) -> list[str]:
    """Bought whole servers: the deployments of the pool at the winner's price per hour, and why
    the winner wins among them (search/ranking.py), with its spare GPUs."""
    if sc.cost.mode != "purchase" or sc.rank_by != "cost":
        return []
    same = pool[same_price(t.usd_h[pool], t.usd_h[best_i])]
    others = int(same.size) - 1
    if others < 1:
        return []
    bought = int(t.servers[best_i]) * sc.hardware.gpus_per_node
    out = [f"{tie_break_text(int(t.gpus[best_i]), bought, room, others)}."]
    if sc.workload.concurrent_users is not None:
        out.append(
            "Under a closed loop of users a faster deployment makes a few % more tokens only "
            "because its users wait less, so at the same price per hour its cost per token "
            "looks lower: the search compares the price per hour."
        )
    return out


def confidence_lines(sc, t, best_i: int) -> tuple[str | None, str]:
    """The headline when the winner is predicted from priors (else None), and the confidence of
    the verdict.

    "MI300X is uncalibrated: predictions from priors, 80% range P99 TPOT 30.1-55.2 ms" comes
    first in the explanation, so a reader sees it before the reasons the winner wins.
    """
    from advisor.catalog import get_accelerator
    from advisor.perf.model.intervals import is_calibrated
    from advisor.physics.queueing.results import QUANTILES
    from advisor.search.sla import TARGETS, percentile_intervals

    qi = QUANTILES.index(sc.sla.percentile / 100)
    gpu = get_accelerator(t.st.shapes[int(t.shape_of[best_i])].gpu)
    got = [float(a[best_i, qi]) * 1e3 for a in (t.ttft, t.tpot, t.e2e)]
    iv = percentile_intervals(sc, gpu.id, *got, utilisation=float(t.util[best_i]))
    pct, conf = sc.sla.percentile, f"{sc.sla.confidence:.0%}"
    stated = [(n, k) for n, k, f in TARGETS if getattr(sc.sla, f) is not None] or [("E2E", "e2e")]
    ranges = ", ".join(
        f"P{pct} {n} {iv[k + '_ms'][0]:.1f}-{iv[k + '_ms'][1]:.1f} ms" for n, k in stated
    )
    fam_ok, eng_ok = is_calibrated(sc.options.engine, gpu.family)
    who = [x for x, ok in ((gpu.name, fam_ok), (f"engine {sc.options.engine}", eng_ok)) if not ok]
    warning = None
    if who:
        warning = (
            f"{' and '.join(who)} {'is' if len(who) == 1 else 'are'} uncalibrated: predictions "
            f"from priors, {conf} steady range {ranges}; "
            + ("it wins only with that range inside the SLA."
               if VERDICTS[t.verdict[best_i]] != AT_RISK
               else "that range reaches past the SLA: recommended at risk.")
        )  # fmt: skip
    verdict = (
        f"Meets the SLA at {conf} confidence: the upper end of the {conf} steady-service range of "
        f"each target ({ranges}) is within it (ranges from out-of-sample errors of means and "
        "medians, advisor/perf/model/intervals.py)."
    )
    return warning, verdict


def unmet_lines(sc, t, checks, describe, cheapest_over: int | None = None) -> list[str]:
    """Why no deployment meets the SLA, from the evaluated arrays.

    Per stated target: how many of the deployments that sustain the offered load meet it at
    the stated confidence, or, if none, the lowest upper end any reaches (and its prediction);
    then whether the targets are met one at a time but never together, how many deployments
    meet every latency target but break the utilisation cap, how many cannot sustain the load,
    and the bounds the sidebar put on the search. ``checks``: ``recommend._sla``'s (name,
    predicted percentile s per candidate, target ms, upper factor per candidate);
    ``describe(i)``: candidate i's description; ``cheapest_over``: the first, in the ranking's
    order, of those that meet the SLA above the budget cap (the one the near misses lead with).
    """
    pct, conf = sc.sla.percentile, f"{sc.sla.confidence:.0%}"
    stable = np.asarray(t.stable, dtype=bool)
    n, n_stable = int(t.n), int(stable.sum())
    out: list[str] = []
    if n_stable == 0:
        cap = np.where(np.isfinite(t.cap), t.cap, 0.0)
        i = int(np.argmax(cap))
        most = (
            f" The most any could sustain is {cap[i]:,.3g} requests/s, with {describe(i)}; the "
            f"offered "
            f"{float(t.rate[i]):,.3g} requests/s is {float(t.rate[i]) / cap[i]:,.1f}× that."
            if cap[i] > 0
            else ""
        )
        out.append(
            f"None of the {n:,} deployments searched sustains the offered load: each one's "
            f"queue would grow without bound.{most}"
        )
        return out + [_search_bounds(sc)]
    together = stable.copy()
    reachable = []
    for name, v, target, factor in checks:
        point_ms = np.asarray(v, dtype=float) * 1e3
        high_ms = point_ms * np.asarray(factor, dtype=float)
        ok = stable & (high_ms <= target)
        together &= ok
        reachable.append(bool(ok.any()))
        if ok.any():
            out.append(
                f"P{pct} {name} ≤ {target:,g} ms is within reach: {int(ok.sum()):,} of the "
                f"{n_stable:,} deployments that sustain the load meet it at {conf} confidence."
            )
            continue
        i = int(np.flatnonzero(stable)[np.argmin(high_ms[stable])])
        out.append(
            f"No deployment reaches P{pct} {name} ≤ {target:,g} ms at {conf} confidence: the "
            f"lowest is {high_ms[i]:,.1f} ms ({point_ms[i]:,.1f} ms predicted), with {describe(i)}"
            + (
                f"; that prediction is within the target, the upper end of its {conf} range is "
                f"not{_at_half(sc, t, i, name, point_ms[i], target)}."
                if point_ms[i] <= target
                else "."
            )
        )
    meets = together & (np.asarray(t.util) <= sc.options.max_utilisation)
    if meets.any() and sc.cost.max_capex_usd is not None:  # then every one is over the budget
        i = (
            cheapest_over
            if cheapest_over is not None
            else int(np.flatnonzero(meets)[np.argmin(t.capex[meets])])
        )
        out.append(
            f"{int(meets.sum()):,} deployments meet the SLA, but none within the "
            f"${sc.cost.max_capex_usd:,.0f} budget: the cheapest to buy, {describe(i)}, costs "
            f"${float(t.capex[i]):,.0f} (whole servers). Raise the budget or relax the SLA."
        )
    elif together.any():
        lightest = float(t.util[together].min())
        out.append(
            f"{int(together.sum()):,} deployments meet every latency target but would run above "
            f"the {sc.options.max_utilisation:.0%} utilisation cap (the most lightly loaded at "
            f"{lightest:.0%}): more GPUs, as more replicas, would take the load."
        )
    elif len(checks) > 1 and all(reachable):
        out.append("Each target is met by some deployment, but none meets them all together.")
    if n_stable < n:
        out.append(
            f"{n - n_stable:,} of the {n:,} deployments searched cannot sustain the offered "
            "load at all."
        )
    return out + [_search_bounds(sc)]


def _at_half(sc, t, i: int, name: str, point_ms: float, target_ms: float) -> str:
    """ ", and at 50% confidence it is met" when the sidebar's lowest confidence would accept
    candidate i's prediction on target ``name``, else ""."""
    from advisor.search.sla import sla_checks

    if sc.sla.confidence <= 0.5:
        return ""
    half = sc.model_copy(update={"sla": sc.sla.model_copy(update={"confidence": 0.5})})
    gpu = t.st.shapes[int(t.shape_of[i])].gpu
    factor = next(
        float(f[0]) for n, _, f in sla_checks(half, [gpu], t.util[i : i + 1]) if n == name
    )
    return ", and at 50% confidence it is met" if point_ms * factor <= target_ms else ""


def speculation_line(on, draft: str, published: bool, other) -> str:
    """What the search finds with speculative decoding on (``on``: the scenario with it on;
    ``published``: its acceptance is the pair's published figure; ``other``: that search's
    Recommendation), for an answer that found nothing with it off."""
    o = on.options
    how = (f"{draft_name(on.model_spec(), draft)}, {o.spec_tokens} draft token"
           f"{'s' if o.spec_tokens != 1 else ''} per step, acceptance {o.spec_acceptance:.2f}"
           f"{'' if published else ' assumed: no published figure for this pair'}")  # fmt: skip
    b = other.best
    if b is None:
        return f"With speculative decoding on ({how}) no deployment meets the SLA either."
    pct = on.sla.percentile
    # an at-risk pick meets the SLA on its predictions only: the line says so, as its own
    # answer's headline would (DeepSeek-R1, 100 users, 8 H200, 30 ms: P99 TPOT 26.5 ms, its
    # range reaching past 30 ms)
    why = b.at_risk[:-1]  # the reasons; the last line is the measurement advice (risk_headline)
    risk = (f", at risk ({'; '.join(why) or 'it meets the SLA on its predictions only'})"
            if b.sla_verdict == "at risk" else "")  # fmt: skip
    return (
        f"With speculative decoding on ({how}) the search recommends {b.description}{risk}: "
        f"P{pct} TTFT {b.ttft_ms.at(pct):,.1f} ms, P{pct} TPOT {b.tpot_ms.at(pct):,.1f} ms, "
        f"${b.usd_per_million_tokens:.3f} per 1M output tokens on {b.gpus:,} GPUs. Turn it on in the "
        f"sidebar (Serving: Speculative decoding), or pass --spec-draft {draft} to the CLI."
    )


def _search_bounds(sc) -> str:
    """What the sidebar let the search try: GPUs, dtypes, speculative decoding."""
    h, o = sc.hardware, sc.options
    gpus = h.gpus_per_node * h.nodes
    spec = "off"
    if o.speculative:
        draft, why = scenario_draft(sc)
        spec = f"on ({draft_name(sc.model_spec(), draft)})" if draft else f"not searched: {why}"
    return (
        f"The search tried up to {gpus:,} GPU{'s' if gpus != 1 else ''} ({h.nodes:,} "
        f"node{'s' if h.nodes != 1 else ''} of {h.gpus_per_node}) of {', '.join(h.gpus)}, "
        f"weights in {', '.join(search_weights(sc))}, KV cache in {', '.join(o.kv_dtypes)}, "
        f"speculative decoding {spec}."
    )


def _n(count: int, noun: str) -> str:
    """'1 prefill replica', '4 prefill replicas'."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _disaggregated_lines(sc, t, best_i: int, ratio, b: float, lat, metric: str) -> list[str]:
    """Why a disaggregated pair wins: its pools, the KV move, the best aggregated alternative
    (and, where that costs the same on as many GPUs, the latency that broke the tie: the
    ranking's last key, ``recommend._rank_key``)."""
    st, dg, j = t.st, t.dg, best_i - t.na
    ps, ds = st.shapes[int(dg.pre_shape[j])], st.shapes[int(dg.dec_shape[j])]
    pdp, ddp = int(dg.pre_dp[j]), int(dg.dec_dp[j])
    rate = float(t.rate[best_i])
    pre_s = float(st.prefill_s[int(dg.pre_shape[j])])
    util_p = rate / pdp * pre_s
    step_s = sum(decode_step_ms(st, int(dg.dec_shape[j]), b)[0].values()) / 1e3
    where = "inside one node" if int(t.gpus[best_i]) <= sc.hardware.gpus_per_node else (
        f"over {sc.hardware.inter_link} between nodes")  # fmt: skip
    out = [
        f"Disaggregated serving wins: {_n(pdp, 'prefill replica')} of TP={ps.tp} (a "
        f"{sc.workload.isl_tokens}-token prompt takes {pre_s * 1e3:.1f} ms; pool busy "
        f"{util_p:.0%}) and {_n(ddp, 'decode replica')} of TP={ds.tp} (about {b:.0f} running "
        f"sequences each, {step_s * 1e3:.2f} ms per step) on {ds.gpu}. Decode steps never "
        f"stall for prompts; the KV cache moves once per request {where} in "
        f"{float(dg.kv_transfer_s[j]) * 1e3:.2f} ms."
    ]
    agg = np.nonzero(t.verdict[: t.na] == t.verdict[best_i])[0]
    if agg.size:
        room = np.where(t.rate > 0, t.cap / np.maximum(t.rate, 1e-300), np.inf)
        a = agg[rank_first(sc.rank_by, t.usd_h[agg], t.gpus[agg], room[agg], lat[agg])]
        s = st.shapes[int(t.ev.shape_idx[a])]
        how = " on its predictions" if VERDICTS[t.verdict[best_i]] == AT_RISK else ""
        what = (
            f"The cheapest aggregated deployment meeting the SLA{how} ({int(t.ev.dp[a])} x TP={s.tp}, "
            f"PP={s.pp}, {s.weights}{', speculative' if s.spec else ''})"
        )
        out.append(what + " " + _ranks_below_disaggregated(sc, t, metric, lat, room, best_i, a))
    else:
        out.append("No aggregated deployment meets the SLA at this load.")
    return out


def _ranks_below_disaggregated(sc, t, metric, lat, room, best_i: int, a: int) -> str:
    """Why aggregated candidate ``a`` ranks below the disaggregated pick ``best_i``, on the key
    the ranking decided by (``search.ranking.deciding_key``); the costs per token are each
    deployment's own."""
    ga, gb = int(t.gpus[a]), int(t.gpus[best_i])
    ha, hb = float(t.usd_h[a]), float(t.usd_h[best_i])
    ra, rb = float(room[a]), float(room[best_i])
    la, lb = float(lat[a]), float(lat[best_i])
    key = deciding_key(sc.rank_by, (hb, ha), (gb, ga), (rb, ra), (lb, la))
    per_token = f"(${float(t.cost[a]):.3f}/M tokens vs ${float(t.cost[best_i]):.3f})"
    if key == "price":
        return f"costs ${ha:,.2f}/h vs ${hb:,.2f}/h {per_token} on {ga} GPUs vs {gb}."
    if key == "gpus":
        same = "" if sc.rank_by == "gpus" else f"costs the same per hour (${ha:,.2f}) but "
        return f"{same}uses {ga} GPUs vs {gb} {per_token}."
    same = f"costs the same per hour (${ha:,.2f}) on {ga} GPUs"
    if key == "headroom":
        return (f"{same}; the disaggregated pair ranks first on its larger headroom "
                f"({rb:.1f}x vs {ra:.1f}x the offered rate).")  # fmt: skip
    if key == "latency":
        return (f"{same}; the disaggregated pair ranks first on its lower {metric} "
                f"({lb:.1f} ms vs {la:.1f} ms).")  # fmt: skip
    return f"{same}, with the same headroom and {metric} ({la:.1f} ms): either would do."


def _sla_latency(sc, d) -> tuple[str, float]:
    """(label, ms) of deployment ``d`` on the SLA's first stated metric (TPOT, TTFT, E2E)."""
    pct = sc.sla.percentile
    stated = [n for n, v in (("TPOT", sc.sla.tpot_ms), ("TTFT", sc.sla.ttft_ms),
                             ("E2E", sc.sla.e2e_ms)) if v is not None]  # fmt: skip
    name = stated[0] if stated else "E2E"
    return f"P{pct} {name}", getattr(d, f"{name.lower()}_ms").at(pct)


def compare_with_article_shape(sc, best, shaped) -> str:
    """Why the search's pick ranks above the article-shaped deployment, on the key the ranking
    decided by (``search.ranking.deciding_key``: price per hour, then GPUs in use, then
    headroom, then latency), with each deployment's cost per token as its own figure. At the
    same price per hour a closed loop of users makes a few % more tokens on the faster
    deployment, so the one that ranks second can read cheaper per token: Qwen3-235B for 400
    users on B200 said the article's 8-GPU shape "meets the SLA at the same cost ($1.195/M
    tokens)", the pick's figure, beside a caption giving the shape's own $1.02. At the same
    price on as many GPUs the sentence named the latency where the ranking had decided on
    headroom.

    >>> from types import SimpleNamespace as N
    >>> from advisor.search.results import Percentiles
    >>> sc = N(rank_by="cost", sla=N(percentile=99, tpot_ms=50.0, ttft_ms=None, e2e_ms=None))
    >>> def dep(gpus, usd_h, usd_m, tpot, room=3.0):
    ...     return N(description=f"{gpus} GPUs", stable=True, meets_sla=True, gpus=gpus,
    ...              usd_per_hour=usd_h, usd_per_million_tokens=usd_m,
    ...              tpot_ms=Percentiles(p50=tpot, p90=tpot, p95=tpot, p99=tpot), headroom=room)
    >>> t = compare_with_article_shape(sc, dep(6, 16.86, 1.195, 36.0), dep(8, 16.86, 1.02, 32.0))
    >>> print(*t.split("; "), sep=chr(10))
    the article's shape (8 GPUs) also meets the SLA at the same price per hour ($16.86/h: the same servers bought) but on 8 GPUs vs 6
    its $1.020/M tokens against the pick's $1.195 come from its users waiting less (a closed loop of users sends more), not from a lower price
    >>> print(compare_with_article_shape(sc, dep(6, 16.86, 1.195, 36.0, 2.5),
    ...                                  dep(6, 16.86, 1.195, 32.0, 1.4)))
    the article's shape (6 GPUs) also meets the SLA at the same price per hour ($16.86/h on 6 GPUs) but ranks second on headroom (1.4x vs 2.5x the offered rate); its own P99 TPOT is lower (32.0 ms vs 36.0 ms)
    """
    head = f"the article's shape ({shaped.description}) "
    if not shaped.stable:
        return head + "is " + unstable_text(shaped.unstable_reason)
    if not shaped.meets_sla:
        return head + f"misses the SLA (worst target at {shaped.sla_ratio:.2f}x)"
    c_s = round(shaped.usd_per_million_tokens, 3)
    c_b = round(best.usd_per_million_tokens, 3)
    per_token = "" if c_s == c_b else f" (${c_s:.3f}/M tokens vs ${c_b:.3f})"
    h_s, h_b = shaped.usd_per_hour, best.usd_per_hour
    label, l_b = _sla_latency(sc, best)
    l_s = _sla_latency(sc, shaped)[1]
    r_b, r_s = best.headroom, shaped.headroom
    key = deciding_key(sc.rank_by, (h_b, h_s), (best.gpus, shaped.gpus), (r_b, r_s), (l_b, l_s))
    if sc.rank_by == "gpus" and key == "gpus":
        return head + f"also meets the SLA but uses {shaped.gpus} GPUs vs {best.gpus}"
    if key == "price":
        return head + f"also meets the SLA but costs ${h_s:,.2f}/h vs ${h_b:,.2f}/h" + per_token
    same = f"at the same price per hour (${h_b:,.2f}/h"
    if c_s < c_b:
        why = (f"; its ${c_s:.3f}/M tokens against the pick's ${c_b:.3f} come from its users "
               "waiting less (a closed loop of users sends more), not from a lower price")  # fmt: skip
    else:
        why = per_token
    if key == "gpus":
        return (
            head + f"also meets the SLA {same}: the same servers bought) but on "
            f"{shaped.gpus} GPUs vs {best.gpus}" + why
        )
    on = f"{same} on {_n(best.gpus, 'GPU')})"
    if key == "headroom":
        own = f"; its own {label} is lower ({l_s:.1f} ms vs {l_b:.1f} ms)" if l_s < l_b else ""
        return (
            head + f"also meets the SLA {on} but ranks second on headroom ({r_s:.1f}x vs "
            f"{r_b:.1f}x the offered rate){why}{own}"
        )
    if key == "latency" and round(l_b, 1) < round(l_s, 1):
        return (
            head + f"also meets the SLA {on}{why}; "
            f"the search's pick has the lower {label} ({l_b:.1f} ms vs {l_s:.1f} ms)"
        )
    return (
        head + f"meets the SLA equally well ({same} on {_n(best.gpus, 'GPU')}, "
        f"{label} {l_s:.1f} ms){why}: either would do"
    )


def agreement(sc, t, best, ans, params, ratio, deployment):
    """Compare the search's winner with the article's decision-matrix answer for the size."""

    diffs = []
    shaped = None
    st = t.st
    # the article-shaped aggregated candidate: one replica of the row's TP x PP as the article
    # writes it (decision_matrix.ArticleAnswer.shape), its dtype and speculative decoding
    want = ans.shape(sc.hardware.gpus_per_node)
    want_spec = ans.speculative and sc.options.speculative
    shape_ok = np.array(
        [want is not None and (s.tp, s.pp) == want
         and (not ans.weights or s.weights == ans.weights)
         and s.spec == want_spec for s in st.shapes], dtype=bool,
    )  # fmt: skip
    sel = np.nonzero(shape_ok[t.ev.shape_idx] & (t.ev.dp == 1))[0]
    if sel.size:
        j = int(sel[lexsort_first((t.cost[sel], ratio[sel]))])
        shaped = deployment(j)
    article_shape = ans.shape_text(sc.hardware.gpus_per_node)
    if best is None:
        agrees = None
        diffs.append("the search found no deployment meeting the SLA")
    else:
        if best.kind == "disaggregated":
            diffs.append(
                f"layout: search disaggregated (prefill {best.prefill_pool['dp']} x "
                f"TP={best.prefill_pool['tp']} + decode {best.decode_pool['dp']} x "
                f"TP={best.decode_pool['tp']}, {best.gpus} GPUs), article {ans.gpus} GPUs per "
                f"replica ({article_shape})"
            )
        elif best.tp * best.pp != ans.gpus:
            diffs.append(
                f"GPUs per replica: search {best.tp * best.pp} (TP={best.tp}, PP={best.pp}), "
                f"article {ans.gpus} ({article_shape})"
                + (f" ({best.dp} replicas for the load)" if best.dp > 1 else "")
            )
        elif (best.tp, best.pp) != want:
            diffs.append(f"shape: search TP={best.tp}, PP={best.pp}, article {article_shape}")
        if ans.weights and best.weights != ans.weights:
            diffs.append(f"weights: search {best.weights}, article {ans.weights}")
        if ans.speculative and not best.speculative:
            off = " (not enabled: the app's Serving section, or --spec-draft)"
            diffs.append(
                "speculative decoding: article yes, search no"
                + ("" if sc.options.speculative else off)
            )
        agrees = not diffs
        if shaped is not None and diffs:
            diffs.append(compare_with_article_shape(sc, best, shaped))
        elif shaped is None and diffs:
            diffs.append("the article's shape does not fit in memory or the GPUs available")
    return DecisionMatrix(
        model_params_b=params / 1e9, row=ans.row, article_answer=ans.text, note=ans.note,
        agrees=agrees, differences=diffs, article_shaped=shaped, article_shape=article_shape,
    )  # fmt: skip

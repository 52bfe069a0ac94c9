"""Appendix A: the calibration constants (data/calibration.yaml) with the collectives'
efficiencies, and the in-sample fit."""

from __future__ import annotations

from advisor.catalog import accelerators, fabric_names, interconnects
from advisor.perf.model.step import REFERENCE_LAYER_KERNELS
from advisor.report.context import Context, calibration_file, validation
from advisor.report.document import Doc
from advisor.report.facts import fmt, pick
from advisor.report.text import clean


def collective_text(ctx: Context) -> str:
    """Each kernel-bound fabric's in-engine collective efficiency, and the one the described
    deployment's TP link uses (``profiles.collective_efficiency``, as its estimate)."""
    from advisor.perf.model.profiles import collective_efficiency
    from advisor.perf.model.replica import ReplicaConfig, tp_link_for
    from advisor.physics.collectives import kernel_bound

    links = interconnects()
    fabrics = {x.kind: x for x in links.values() if kernel_bound(x)}
    parts = []
    for kind, link in sorted(fabrics.items()):
        ce = collective_efficiency(link)
        flag = "" if ce.calibrated else "uncalibrated: "
        parts.append(f"over {fabric_names()[kind]} at {ce.value:.2f} ({flag}{ce.note})")
    text = ("all-reduces / all-to-alls move their data at a fraction of its nccl-tests rate "
            "(their latencies as measured): " + "; ".join(parts)
            + "; over PCIe at that rate (the link sets it).")  # fmt: skip
    spec = pick(ctx.described, "spec") if ctx.described is not None else None
    gpus, hw = accelerators(), ctx.scenario.hardware
    if spec is None or spec.tp == 1 or spec.gpu not in gpus:
        return text
    cfg = ReplicaConfig(model=ctx.scenario.model_spec(), gpu=gpus[spec.gpu], tp=spec.tp,
                        pp=spec.pp, weights=spec.weights, kv=spec.kv,
                        intra_link=links.get(hw.intra_link or ""),
                        inter_link=links.get(hw.inter_link or ""),
                        gpus_per_node=hw.gpus_per_node)  # fmt: skip
    link = tp_link_for(cfg, links)
    ce = collective_efficiency(link)
    return text + (f" The deployment described (TP {spec.tp} over {clean(link.name, 80)}) uses "
                   f"{ce.value:.2f}{'' if ce.calibrated else ' (uncalibrated)'}.")  # fmt: skip


def calibration_appendix(doc: Doc, ctx: Context) -> None:
    doc.h1("Appendix A: calibration")
    cal = calibration_file()
    doc.h2("Calibration constants (data/calibration.yaml)")
    if cal:
        doc.para(
            f"Fitted by '{clean(cal.get('generated_by', '?'), 80)}' on "
            f"{clean(cal.get('generated_on', '?'), 40)} from {clean(cal.get('source', '?'), 120)}. "
            "η = achieved fraction of datasheet memory bandwidth / dense tensor peak.",
            8.5,
        )
        from advisor.perf.model.profiles import (
            ENGINES,
            engine_profile,
            moe_efficiency,
            moe_expert_overhead_s,
        )

        # fp8/fp4 routed experts: the value the model uses (profiles.moe_efficiency), labelled
        # where the family has none of its own and the 16-bit experts' one serves; the fixed
        # time per expert of a MoE layer (profiles.moe_expert_overhead_s), 16-bit / fp8-fp4
        rows = [("GPU family", "η memory", "η compute 16-bit", "η compute fp8 / fp4",
                 "fp8/fp4 MoE kernels ×", "MoE μs/expert 16-bit / fp8")]  # fmt: skip
        for fam, v in (cal.get("families") or {}).items():
            own = "" if "moe_efficiency_lowp" in v else " (16-bit)"
            per_expert = (f"{fmt(moe_expert_overhead_s(False, fam) * 1e6, '.2f')} / "
                          f"{fmt(moe_expert_overhead_s(True, fam) * 1e6, '.2f')}")  # fmt: skip
            rows.append((fam, fmt(v.get("eta_mem"), ".3f"), fmt(v.get("eta_compute_16"), ".3f"),
                         fmt(v.get("eta_compute_fp8"), ".3f")
                         + (f" / {fmt(v['eta_compute_fp4'], '.3f')}" if "eta_compute_fp4" in v else ""),
                         fmt(moe_efficiency(True, fam), ".3f") + own, per_expert))  # fmt: skip
        doc.table(rows, (24, 24, 30, 28, 34, 38), align="RIGHT")

        rows = [("Engine", "step overhead μs", f"μs per {REFERENCE_LAYER_KERNELS:.0f}-kernel layer", "per-sequence μs",
                 "per-request ms", "prefill dispatch μs/kernel", "× compute",
                 "× memory")]  # fmt: skip
        for eng in ENGINES:  # the profiles the model uses (fitted values, else defaults)
            pr = engine_profile(eng)
            mark = " (this scenario)" if eng == ctx.scenario.options.engine else ""
            mark += "" if pr.fitted else " (defaults)"
            rows.append((eng + mark, fmt(pr.step_overhead_s * 1e6, ".0f"),
                         fmt(pr.layer_overhead_s * 1e6, ".1f"),
                         fmt(pr.seq_overhead_s * 1e6, ".2f"),
                         fmt(pr.request_overhead_s * 1e3, ".1f"),
                         fmt(pr.kernel_dispatch_s * 1e6, ".1f"),
                         fmt(pr.efficiency, ".3f"), fmt(pr.mem_efficiency, ".3f")))  # fmt: skip
        doc.table(rows, (36, 22, 20, 22, 22, 22, 17, 17), align="RIGHT")
        g = cal.get("global") or {}
        doc.para(
            "Every engine: attention kernels at "
            f"{fmt(g.get('attention_efficiency'), '.2f')} of the GEMM efficiency, routed-expert "
            f"(MoE) kernels at {fmt(g.get('moe_efficiency'), '.2f')} with 16-bit experts (with "
            "fp8/fp4 experts, the family's value in the table above; a batch of n sequences "
            f"touches the experts n^{fmt(g.get('routing_draw_exponent', 1.0), '.2f')} independent "
            "tokens would), and " + collective_text(ctx),
            8.5,
        )
    else:
        doc.para("No calibration file: the model uses its prior efficiencies.", 9)

    doc.h2("In sample: the fitted rows themselves (second to the out-of-sample table)")
    try:
        v = validation()
        rows = [("Prediction", "rows", "median |error| %", "p90 |error| %", "bias %")]
        for fam, r in v["families"].items():
            rows.append((fam, str(r.get("rows", 0)), fmt(r.get("median_ape_pct")),
                         fmt(r.get("p90_ape_pct")), fmt(r.get("bias_pct"), "+.1f")))  # fmt: skip
        doc.table(rows, (58, 22, 34, 32, 32), align="RIGHT")
        doc.para(
            f"{v['rows_used']} of {v['rows_total']} rows of data/measurements*.csv predicted "
            f"({v['rows_skipped']} cannot be represented); the constants were fitted on these "
            "same rows. Bias = median of predicted / measured − 1.",
            8.5,
        )
    except Exception as exc:  # noqa: BLE001
        doc.para(f"Validation unavailable: {type(exc).__name__}", 9)

"""The scenario table: every input with its unit, the weight dtypes and draft the search
tried."""

from __future__ import annotations

from advisor.catalog import accelerators, interconnects
from advisor.report.context import Context
from advisor.report.document import Doc
from advisor.report.text import clean
from advisor.scenario import RANKING_TEXT, Scenario


def _scenario_rows(s: Scenario) -> list[tuple[str, str, str]]:
    w, h, o, c = s.workload, s.hardware, s.options, s.cost
    gpus = accelerators()
    links = interconnects()
    model = s.model_spec()
    rows = [
        ("Model", f"{clean(model.name, 120)} ({s.model})", ""),
        (
            "Accelerators considered",
            ", ".join(gpus[g].name if g in gpus else g for g in h.gpus),
            "",
        ),
        ("GPUs per node × nodes", f"{h.gpus_per_node} × {h.nodes} = {h.total_gpus}", "GPUs"),
        (
            "Intra-node link",
            links[h.intra_link].name if h.intra_link in links else "each GPU's own",
            "",
        ),
        (
            "Inter-node link",
            links[h.inter_link].name if h.inter_link in links else h.inter_link,
            "",
        ),
        ("Input length (ISL)", f"{w.isl_tokens:,} (CV {w.isl_cv:g})", "tokens"),
        ("Output length (OSL)", f"{w.osl_tokens:,} (CV {w.osl_cv:g})", "tokens"),
    ]
    if w.arrival_rate_per_s is not None:
        rows.append(("Load: Poisson arrival rate", f"{w.arrival_rate_per_s:g}", "requests/s"))
    else:
        rows.append(("Load: concurrent users, whole deployment (closed loop)",
                     f"{w.concurrent_users:,}", "users"))  # fmt: skip
        rows.append(("Think time per user (X = N / (Z + R))", f"{w.think_time_s:g}", "s"))
    rows += [
        ("SLA percentile", f"P{s.sla.percentile}", ""),
        ("SLA time to first token", _opt(s.sla.ttft_ms), "ms"),
        ("SLA time per output token", _opt(s.sla.tpot_ms), "ms"),
        ("SLA end-to-end latency", _opt(s.sla.e2e_ms), "ms"),
        ("Weight dtypes allowed", _weights_words(s), ""),
        ("KV-cache dtypes allowed", ", ".join(o.kv_dtypes), ""),
        ("Serving engine", o.engine, ""),
        ("Max TP / max PP", f"{o.max_tp} / {o.max_pp}", ""),
        ("Speculative decoding", "considered" if o.speculative else "off", ""),
    ]
    if o.speculative:
        rows += [
            ("Draft model", _draft_words(s), ""),
            ("Draft tokens per step (k)", str(o.spec_tokens), "tokens"),
            ("Acceptance rate", f"{o.spec_acceptance:g}", "fraction"),
        ]
    rows.append(("Disaggregated prefill/decode", "considered" if o.disaggregated else "off", ""))
    if o.redundancy == "n+1":
        rows.append(("Redundancy", "N+1 (a spare replica)", ""))
    rows.append(("Pricing", "purchase (data stays on-prem)" if c.on_prem else c.mode, ""))
    if c.mode == "purchase":
        rows += [
            ("GPU price / server without GPUs",
             f"{_opt(c.gpu_price_usd, 'catalog')} / {_opt(c.server_usd, 'catalog')}", "USD"),
        ]  # fmt: skip
        if c.max_capex_usd is not None:
            rows.append(("Budget cap on the purchase", f"{c.max_capex_usd:,.0f}", "USD"))
        rows += [
            ("Amortisation", f"{c.amortisation_years:g}", "years"),
            ("Utilisation", f"{c.utilisation:g}", "fraction of hours"),
            ("PUE", f"{c.pue:g}", ""),
            ("Electricity", f"{c.usd_per_kwh:g}", "USD/kWh"),
            (
                "Hosting (colocation)",
                _opt(c.hosting_usd_per_kw_month, "catalog default"),
                "USD/kW-month",
            ),
        ]
    else:
        rows.append(("GPU-hour price", _opt(c.gpu_hour_usd, "catalog default"), "USD/GPU-hour"))
    rows.append(("Ranked by", RANKING_TEXT[s.rank_by], ""))
    return rows


def _opt(v: float | None, none: str = "no target") -> str:
    return none if v is None else f"{v:g}"


def scenario_section(doc: Doc, ctx: Context) -> None:
    if ctx.compared:
        doc.h1(f"Scenario in detail: {clean(ctx.scenario.name or '(unnamed)', 80)}")
    else:
        doc.h1("The scenario")
    rows = [("Input", "Value", "Unit"), *_scenario_rows(ctx.scenario)]
    doc.table(rows, (62, 80, 36))


def _draft_words(s) -> str:
    """The draft the search ran, in words ("DeepSeek-R1's own MTP head"), or why none."""
    from advisor.catalog.drafts import draft_name
    from advisor.search.space import scenario_draft

    draft, why = scenario_draft(s)
    return draft_name(s.model_spec(), draft) if draft else f"none ({why})"


def _weights_words(s) -> str:
    """The weight dtypes the search tried, the model's released precision marked."""
    from advisor.search.space import search_weights_text

    return search_weights_text(s)

"""The PDF's budget section (advisor/search/budget.py) for the deployment the report details."""

from __future__ import annotations

import math
from typing import Any

from advisor.catalog.quality import quality_lines
from advisor.report.text import clean
from advisor.scenario import Scenario
from advisor.search.budget import ITEMS, Budget, budget, other_text, purchase_text, spare_text, usd
from advisor.search.results import Deployment


def budget_of(scenario: Scenario, deployment: Any) -> Budget | None:
    """The budget of a search Deployment (or its JSON dict); None when it cannot be read."""
    try:
        d = deployment if isinstance(deployment, Deployment) else Deployment.model_validate(
            deployment)  # fmt: skip
        return budget(scenario, d)
    except (ValueError, TypeError, KeyError):
        return None


def budget_rows(b: Budget) -> list[tuple[str, str, str]]:
    """(item, value, how) rows: servers, GPUs, purchase, each monthly item, totals, per user."""
    rows = [
        ("Servers", f"{b.servers:,}", f"{b.gpus_per_server} GPUs per server"),
        ("GPUs", f"{b.gpus:,}", b.gpu_name + (f"; {spare_text(b)}" if spare_text(b) else "")),
    ]
    if b.purchase_usd is not None:
        rows.append(("Purchase", usd(b.purchase_usd), purchase_text(b)))
    rows += [(f"{ITEMS[x.item]} per month", usd(x.usd_per_month), x.how) for x in b.lines]
    rows.append(("Total per month", usd(b.monthly_usd), ""))
    if b.usd_per_user_month is not None:
        rows.append(("Per user per month", usd(b.usd_per_user_month),
                     f"{usd(b.monthly_usd)} / {b.users:,} concurrent users"))  # fmt: skip
    if not math.isfinite(b.usd_per_million_tokens):
        rows.append(("Per request or token", "none",
                     "cannot serve the offered load: its queue grows without bound"))  # fmt: skip
        return rows
    rows += [
        ("Per 1,000 requests", usd(b.usd_per_thousand_requests),
         f"{b.requests_per_s:,.3g} requests/s"),
        ("Per million output tokens", usd(b.usd_per_million_tokens),
         f"{b.output_tokens_per_month / 1e6:,.0f} M tokens a month"),
    ]  # fmt: skip
    return rows


def budget_section(doc: Any, scenario: Scenario, deployment: Any, which: str) -> None:
    """h1 "Budget", the table of ``budget_rows`` and the assumptions with their sources."""
    b = budget_of(scenario, deployment)
    if b is None:
        return
    doc.h1("Budget")
    doc.para(f"Of the {which} deployment: {clean(b.deployment, 300)}.", 9.5)
    doc.table([("Item", "USD", "How"), *budget_rows(b)], (48, 28, 102))
    if other_text(b):
        doc.para(other_text(b).strip(), 9.5)
    # one paragraph each (a client-facing summary stays short); URLs are in data/prices.yaml
    doc.para(clean("Assumptions: " + " ".join(b.assumptions), 1500), 8.5)
    doc.para(clean("Prices: " + "; ".join(x.split(" (http")[0] for x in b.sources) + ".", 1500),
             8.5)  # fmt: skip


def quality_section(doc: Any, scenario: Scenario, deployment: Any) -> None:
    """h2 "Model quality at these dtypes": the published accuracy effect per quantized dtype."""
    weights = getattr(deployment, "weights", None) or (deployment or {}).get("weights")
    kv = getattr(deployment, "kv", None) or (deployment or {}).get("kv")
    lines = quality_lines(scenario.model, str(weights), str(kv), brief=True)
    if lines:
        doc.h2(f"Model quality at weights {weights}, KV {kv}")
        doc.bullets([clean(x, 700) for x in lines], 8.5)

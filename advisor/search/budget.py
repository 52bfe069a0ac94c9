"""The budget of one deployment: servers and GPUs, purchase cost, monthly cost, cost per user.

Takes any evaluated :class:`~advisor.search.results.Deployment` (the recommended one, or the
deployment in focus) and the scenario's Cost settings; prices come from data/prices.yaml
(advisor/search/cost.py) unless the scenario overrides them. A month is 8760 / 12 = 730 hours.

Bought GPUs (``cost.mode == "purchase"``) come in whole servers (convention: the whole server
is amortised, whatever share of its GPUs the deployment uses; the spare GPUs are said)::

    servers       = the deployment's servers (ceil(GPUs / GPUs per server), or more when a
                    replica spans servers); bought GPUs = servers x GPUs per server
    purchase      = servers x (GPUs per server x price per GPU + host server without GPUs)
    amortisation  = purchase / (years x 12)                        per month
    power         = bought GPUs x TDP_kW x PUE x 730 h x usd/kWh   per month
    hosting       = bought GPUs x TDP_kW x hosting usd/kW-month    per month

Rented GPUs (``"hourly"``): rental = GPUs x usd/GPU-hour x 730 h per month.

Output tokens per month = offered tokens/s x 3600 x 730 h, times the utilisation for bought
GPUs (the fraction of the hours the fleet does useful work, as cost.py divides by it), so the
cost per million tokens equals the search's ``usd_per_million_tokens``. Per user per month:
the monthly cost / the scenario's concurrent users (load given as users only); per 1,000
requests: the monthly cost / the requests served per month.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from advisor.catalog import accelerators
from advisor.scenario import Scenario
from advisor.search.cost import (
    FALLBACK_HOUR_USD,
    HOURS_PER_MONTH,
    default_hosting,
    default_prices,
    default_server,
    gpu_purchase_usd,
    hosting_usd_per_kw_month,
    prices_retrieved,
    server_usd,
)
from advisor.search.results import Deployment

_M = ConfigDict(extra="forbid", frozen=True)
#: Display names of the monthly items.
ITEMS = {
    "amortisation": "Amortised purchase",
    "power": "Power",
    "hosting": "Hosting (colocation)",
    "rental": "Cloud rental",
}


class BudgetLine(BaseModel):
    model_config = _M
    item: str  # "amortisation" | "power" | "hosting" | "rental"
    usd_per_month: float
    how: str  # the formula with the numbers put in


class Budget(BaseModel):
    """What a deployment costs to buy and to run (USD)."""

    model_config = _M
    deployment: str
    gpu: str
    gpu_name: str
    gpus: int
    gpus_per_server: int
    servers: int
    #: GPUs paid for: whole servers' (bought) or the GPUs used (rented)
    billed_gpus: int = 0
    #: GPUs of the N+1 spare replica(s), included in ``gpus``
    spare_replica_gpus: int = 0
    mode: str  # "purchase" | "hourly"
    gpu_price_usd: float | None  # per GPU (purchase)
    server_usd: float | None = None  # per server without its GPUs (purchase)
    gpu_hour_usd: float | None  # per GPU-hour (hourly)
    purchase_usd: float | None
    lines: list[BudgetLine]
    monthly_usd: float
    requests_per_s: float
    output_tokens_per_month: float
    usd_per_million_tokens: float
    usd_per_thousand_requests: float
    users: int | None
    usd_per_user_month: float | None
    #: The same GPUs the other way (renting them when bought, buying them when rented), per
    #: month, at the same settings: the comparison a client asks for next.
    other_mode: str | None = None
    other_mode_monthly_usd: float | None = None
    assumptions: list[str]
    sources: list[str]


def usd(x: float) -> str:
    """Dollars for people: cents below $100, whole dollars with separators above; a cost per
    token of a deployment that serves nothing is infinite, shown as the latencies show it (∞).

    >>> usd(19.754), usd(3950.83), usd(1_234_567.0), usd(math.inf), usd(math.nan)
    ('$19.75', '$3,951', '$1,234,567', '∞', 'n/a')
    """
    if not math.isfinite(x):
        return "n/a" if math.isnan(x) else ("∞" if x > 0 else "-∞")
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


def per_token_text(b: Budget) -> str:
    """The cost per million output tokens and the volume it is spread over; for a deployment
    that cannot serve the offered load (nothing to divide by), why it has none.

    >>> per_token_text(Budget.model_construct(usd_per_million_tokens=2.148,
    ...     output_tokens_per_month=2.759e9, requests_per_s=5.0))
    '$2.15 per million output tokens (2,759 M tokens a month at 5 requests/s). '
    >>> per_token_text(Budget.model_construct(usd_per_million_tokens=math.inf,
    ...     output_tokens_per_month=0.0, requests_per_s=0.0))[:60]
    'No cost per token: this deployment cannot serve the offered '
    """
    if not math.isfinite(b.usd_per_million_tokens):
        return ("No cost per token: this deployment cannot serve the offered load (its queue "
                "grows without bound), so the monthly cost buys no steady output. ")  # fmt: skip
    return (f"{usd(b.usd_per_million_tokens)} per million output tokens "
            f"({b.output_tokens_per_month / 1e6:,.0f} M tokens a month at "
            f"{b.requests_per_s:,.3g} requests/s). ")  # fmt: skip


def other_text(b: Budget) -> str:
    """'Renting the same 4 GPUs instead: $8,614 per month. ' (or buying), '' when unknown."""
    if b.other_mode_monthly_usd is None:
        return ""
    how = "Renting" if b.other_mode == "hourly" else "Buying"
    return f"{how} the same {plural(b.gpus, 'GPU')} instead: {usd(b.other_mode_monthly_usd)} per month. "


def plural(n: int, noun: str) -> str:
    """'1 server', '2 servers'.

    >>> plural(1, "server"), plural(12, "GPU")
    ('1 server', '12 GPUs')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def servers_for(gpus: int, gpus_per_server: int) -> int:
    """Servers that hold ``gpus`` GPUs: ceil(gpus / gpus per server).

    >>> servers_for(12, 8), servers_for(8, 8), servers_for(1, 8)
    (2, 1, 1)
    """
    return math.ceil(gpus / gpus_per_server)


def amortisation_usd_per_month(purchase_usd: float, years: float) -> float:
    """Straight-line depreciation per month: purchase / (years x 12).

    Source: straight-line depreciation (cost.py's purchase_usd_per_gpu_hour, per month).

    >>> amortisation_usd_per_month(296_000.0, 4.0)  # 8 x $37,000 over 48 months
    6166.666666666667
    """
    return purchase_usd / (years * 12.0)


def power_usd_per_month(gpus: int, tdp_w: float, pue: float, usd_per_kwh: float) -> float:
    """Electricity per month at the GPUs' TDP: GPUs x TDP_kW x PUE x 730 h x usd/kWh.

    Source: PUE = facility power / IT power (The Green Grid); 730 h = 8760 h / 12.

    >>> round(power_usd_per_month(8, 700.0, 1.3, 0.12), 2)  # 5.6 kW x 1.3 x 730 h x $0.12
    637.73
    """
    return gpus * tdp_w / 1000.0 * pue * HOURS_PER_MONTH * usd_per_kwh


def hosting_usd_per_month(gpus: int, tdp_w: float, usd_per_kw_month: float) -> float:
    """Colocation per month: GPUs x TDP_kW x usd per kW-month (power billed separately).

    Source: colocation is priced per kW of committed IT load per month (CBRE market reports).

    >>> round(hosting_usd_per_month(8, 700.0, 195.94), 2)  # 5.6 kW x $195.94
    1097.26
    """
    return gpus * tdp_w / 1000.0 * usd_per_kw_month


def rental_usd_per_month(gpus: int, usd_per_gpu_hour: float) -> float:
    """Cloud rental per month: GPUs x usd/GPU-hour x 730 h.

    >>> rental_usd_per_month(8, 2.95)  # 8 x $2.95 x 730 h
    17228.0
    """
    return gpus * usd_per_gpu_hour * HOURS_PER_MONTH


def spare_text(b: Budget) -> str:
    """The bought GPUs a deployment leaves idle, and its N+1 spare, in words ('' for none).

    >>> spare_text(Budget.model_construct(gpus=4, billed_gpus=8, spare_replica_gpus=0,
    ...     mode="purchase"))
    'uses 4 of 8 GPUs; 4 spare'
    >>> spare_text(Budget.model_construct(gpus=8, billed_gpus=8, spare_replica_gpus=1,
    ...     mode="purchase"))
    'uses 8 of 8 GPUs, 1 of them the N+1 spare replica'
    """
    if b.mode != "purchase":
        return ""
    idle = b.billed_gpus - b.gpus
    out = f"uses {b.gpus:,} of {b.billed_gpus:,} GPUs"
    if b.spare_replica_gpus:
        out += f", {b.spare_replica_gpus:,} of them the N+1 spare replica"
    if idle:
        out += f"; {idle:,} spare"
    return out if (idle or b.spare_replica_gpus) else ""


def purchase_text(b: Budget) -> str:
    """How the purchase adds up: '1 server × (8 × $55,000 + $32,010 host) = $472,010'."""
    if b.purchase_usd is None:
        return ""
    return (f"{plural(b.servers, 'server')} × ({b.gpus_per_server} × {usd(b.gpu_price_usd)} + "
            f"{usd(b.server_usd)} host) = {usd(b.purchase_usd)}")  # fmt: skip


def budget(scenario: Scenario, d: Deployment, other: bool = True) -> Budget:
    """The budget of deployment ``d`` under ``scenario.cost`` (module docstring); ``other``:
    also the monthly cost of the other mode (rented instead of bought, or the reverse), never
    for data that must stay on-prem (``cost.on_prem``: nothing is rented)."""
    c, w = scenario.cost, scenario.workload
    alt = "hourly" if c.mode == "purchase" else "purchase"
    other_b = (
        budget(scenario.model_copy(update={"cost": c.model_copy(update={"mode": alt})}), d, False)
        if other and not c.on_prem
        else None
    )
    acc = accelerators()[d.gpu]
    price = default_prices().get(d.gpu)
    per_server = scenario.hardware.gpus_per_node
    servers = max(d.nodes, servers_for(d.gpus, per_server))
    sources = [f"GPU prices: data/prices.yaml, retrieved {prices_retrieved()}"]
    assumptions = [
        f"{plural(d.gpus, 'GPU')} in {plural(servers, 'server')} of {per_server} GPUs (the "
        "scenario's GPUs per node).",
        f"A month is {HOURS_PER_MONTH:g} hours (8760 / 12), every hour paid.",
    ]
    if d.spare_gpus:
        assumptions.append(
            f"N+1 redundancy: {plural(d.spare_gpus, 'GPU')} of a spare replica, bought and "
            "powered, not counted in the capacity"
            + (" (one server: a server failure still stops the service; spread the replicas "
               "over two servers for that)." if servers == 1 else ".")
        )  # fmt: skip
    lines: list[BudgetLine] = []
    srv_usd = None
    if c.mode == "purchase":
        gpu_price, why = gpu_purchase_usd(d.gpu, c)
        srv_usd, srv_why = server_usd(c)
        sources.append(f"{d.gpu} price ${gpu_price:,.0f} per GPU: {why}")
        sources.append(
            f"host server without GPUs ${srv_usd:,.0f}: "
            + (
                "your input"
                if c.server_usd is not None
                else default_server().source.split(" (")[0] + " (data/prices.yaml)"
            )
        )
        host = hosting_usd_per_kw_month(c)
        hosting = default_hosting()
        sources.append(
            f"hosting ${host:,.2f}/kW-month: "
            + (
                "your input"
                if c.hosting_usd_per_kw_month is not None
                else f"{hosting.source} (retrieved {hosting.retrieved})"
            )  # fmt: skip
        )
        billed = servers * per_server
        purchase = servers * (per_server * gpu_price + srv_usd)
        kw = billed * acc.tdp_w / 1000.0
        lines = [
            BudgetLine(item="amortisation",
                       usd_per_month=amortisation_usd_per_month(purchase, c.amortisation_years),
                       how=f"${purchase:,.0f} / ({c.amortisation_years:g} years × 12)"),
            BudgetLine(item="power",
                       usd_per_month=power_usd_per_month(billed, acc.tdp_w, c.pue, c.usd_per_kwh),
                       how=f"{kw:,.1f} kW × PUE {c.pue:g} × {HOURS_PER_MONTH:g} h × "
                           f"${c.usd_per_kwh:g}/kWh"),
            BudgetLine(item="hosting",
                       usd_per_month=hosting_usd_per_month(billed, acc.tdp_w, host),
                       how=f"{kw:,.1f} kW × ${host:,.2f}/kW-month"),
        ]  # fmt: skip
        useful = c.utilisation
        assumptions += [
            f"Bought as whole servers ({per_server} GPUs + host: chassis, CPUs, memory, NICs), "
            f"amortised straight-line over {c.amortisation_years:g} years, spare GPUs included, "
            "in every cost per token and per month.",
            f"Power and hosting at the TDP of every GPU bought ({acc.tdp_w:,.0f} W each), PUE "
            f"{c.pue:g}; the host's own power is not counted.",
            f"The fleet does useful work {c.utilisation:.0%} of the hours (utilisation).",
        ]
        gpu_hour = None
    else:
        billed = d.gpus
        gpu_hour, why = _hour_price(c.gpu_hour_usd, price)
        sources.append(f"{d.gpu} rental ${gpu_hour:,.2f}/GPU-hour: {why}")
        lines = [BudgetLine(item="rental", usd_per_month=rental_usd_per_month(d.gpus, gpu_hour),
                            how=f"{d.gpus} GPUs × ${gpu_hour:,.2f} × {HOURS_PER_MONTH:g} h")]  # fmt: skip
        purchase, gpu_price, useful = None, None, 1.0
        assumptions.append("Rented on demand per GPU, every hour of the month; no purchase, "
                           "power or hosting on top (included in the rate).")  # fmt: skip
    monthly = sum(x.usd_per_month for x in lines)
    rate = d.throughput_tok_s / w.osl_tokens
    tokens = d.throughput_tok_s * 3600.0 * HOURS_PER_MONTH * useful
    requests = rate * 3600.0 * HOURS_PER_MONTH * useful
    users = w.concurrent_users
    if users is None:
        assumptions.append("Load given as a request rate: no cost per user (give concurrent "
                           "users with a think time for one).")  # fmt: skip
    return Budget(
        deployment=d.description, gpu=d.gpu, gpu_name=acc.name, gpus=d.gpus,
        gpus_per_server=per_server, servers=servers, billed_gpus=billed,
        spare_replica_gpus=d.spare_gpus, mode=c.mode, gpu_price_usd=gpu_price,
        server_usd=srv_usd,
        gpu_hour_usd=gpu_hour, purchase_usd=purchase, lines=lines, monthly_usd=monthly,
        requests_per_s=rate, output_tokens_per_month=tokens,
        usd_per_million_tokens=monthly / tokens * 1e6 if tokens > 0 else math.inf,
        usd_per_thousand_requests=monthly / requests * 1e3 if requests > 0 else math.inf,
        users=users, usd_per_user_month=monthly / users if users else None,
        assumptions=assumptions, sources=sources,
        other_mode=other_b.mode if other_b else None,
        other_mode_monthly_usd=other_b.monthly_usd if other_b else None,
    )  # fmt: skip


def _hour_price(user_usd: float | None, price) -> tuple[float, str]:
    """A rental rate (USD per GPU-hour) and where it comes from: the user's, the catalog's
    with its source (data/prices.yaml), else the stated fallback assumption."""
    if user_usd is not None:
        return user_usd, "your input"
    if price:
        return price.hour_usd, price.sources.get("hour_usd", "")
    return FALLBACK_HOUR_USD, "no catalog price: assumed"


def monthly_usd(scenario: Scenario, d: Deployment) -> float:
    """What ``d`` costs per month under the scenario's Cost (``budget``'s total): the one
    monthly figure of every page and PDF. Bought GPUs pay every hour, so it is the search's
    usd_per_hour (per *useful* hour, divided by the utilisation) x 730 h x utilisation."""
    return budget(scenario, d, other=False).monthly_usd

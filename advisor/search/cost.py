"""Cost of a GPU-hour and of a million output tokens.

Purchase mode: amortised capital plus power plus hosting (colocation per kW of TDP), divided
by the utilisation (the fraction of the hours the fleet does useful work)::

    usd_per_gpu_hour = (price / (years x 8760 h) + TDP_kW x PUE x usd_per_kWh
                        + TDP_kW x hosting_usd_per_kW_month x 12 / 8760 h) / utilisation

Bought GPUs come in whole servers (issue 38): a deployment on ``gpus`` GPUs pays for
``servers`` = ceil(gpus / GPUs per server) servers, each its GPUs plus the host around them
(``server.non_gpu_usd``), whether or not it uses every GPU (the spare ones are said)::

    usd_per_hour = servers x (GPUs per server x usd_per_gpu_hour + usd_per_server_hour)

Hourly mode: the rental rate per GPU used (paid for every hour, so no utilisation division).
Cost per million output tokens at a throughput of ``tok_s`` output tokens/s::

    usd_per_mtok = usd_per_hour / (tok_s x 3600) x 1e6

Defaults per accelerator: data/prices.yaml (sourced or labelled as assumptions).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from advisor.catalog import accelerators
from advisor.catalog.files import load_data_yaml
from advisor.catalog.loader import DATA_DIR
from advisor.scenario import Cost, Scenario

HOURS_PER_YEAR = 8760.0


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    hour_usd: Annotated[float, Field(gt=0, le=1000)]
    purchase_usd: Annotated[float, Field(gt=0, le=10_000_000)]
    sources: dict[str, str]


class Server(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    non_gpu_usd: Annotated[float, Field(ge=0, le=10_000_000)]
    source: str
    retrieved: str


class Hosting(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    usd_per_kw_month: Annotated[float, Field(ge=0, le=10_000)]
    source: str
    retrieved: str


@cache
def _prices_doc() -> dict:
    return load_data_yaml((DATA_DIR / "prices.yaml").read_text())


@cache
def default_hosting() -> Hosting:
    """data/prices.yaml ``hosting``: colocation USD per kW-month, its source and date."""
    return Hosting.model_validate(_prices_doc()["hosting"])


@cache
def default_server() -> Server:
    """data/prices.yaml ``server``: the host server's non-GPU price, its source and date."""
    return Server.model_validate(_prices_doc()["server"])


def server_usd(cost: Cost) -> tuple[float, str]:
    """(USD of one server without its GPUs, where it comes from): the user's quote or the
    catalog's sourced figure."""
    if cost.server_usd is not None:
        return cost.server_usd, "your input"
    srv = default_server()
    return srv.non_gpu_usd, f"data/prices.yaml server (retrieved {srv.retrieved})"


def usd_per_server_hour(server_price_usd: float, years: float, utilisation: float) -> float:
    """Amortised host server (no GPUs) per useful hour: price / (years x 8760) / utilisation.

    Source: straight-line depreciation, as purchase_usd_per_gpu_hour.

    >>> round(usd_per_server_hour(35040.0, 4.0, 0.5), 4)  # 35,040 / 35,040 h / 0.5
    2.0
    """
    return server_price_usd / (years * HOURS_PER_YEAR) / utilisation


def prices_retrieved() -> str:
    """When the GPU prices of data/prices.yaml were retrieved (or assumed), e.g. '2026-05'."""
    return str(_prices_doc()["retrieved"])


@cache
def default_prices() -> dict[str, Price]:
    """data/prices.yaml, validated."""
    return {k: Price.model_validate(v) for k, v in _prices_doc()["prices"].items()}


def purchase_usd_per_gpu_hour(
    price_usd: float, years: float, tdp_w: float, pue: float, usd_per_kwh: float,
    utilisation: float, hosting_usd_per_kw_month: float = 0.0,
) -> float:  # fmt: skip
    """Amortised purchase + power + hosting per useful GPU-hour.

    usd/h = (price / (years x 8760) + TDP_kW x PUE x usd/kWh
             + TDP_kW x hosting/kW-month x 12 / 8760) / utilisation.
    Source: straight-line depreciation; power = TDP x PUE (The Green Grid, PUE definition);
    colocation priced per kW per month (CBRE data-center market reports).

    >>> round(purchase_usd_per_gpu_hour(35040.0, 4.0, 700.0, 1.3, 0.12, 1.0), 4)  # 1 + 0.1092
    1.1092
    >>> round(purchase_usd_per_gpu_hour(0.0, 4.0, 1000.0, 1.0, 0.0, 1.0, 730.0), 4)  # 730 x 12 / 8760
    1.0
    """
    capex = price_usd / (years * HOURS_PER_YEAR)
    power = tdp_w / 1000.0 * pue * usd_per_kwh
    hosting = tdp_w / 1000.0 * hosting_usd_per_kw_month * 12.0 / HOURS_PER_YEAR
    return (capex + power + hosting) / utilisation


def usd_per_gpu_hour(gpu_id: str, cost: Cost) -> tuple[float, str]:
    """(USD per GPU-hour, a one-line statement of how it was obtained)."""
    p = default_prices().get(gpu_id)
    if cost.mode == "hourly":
        if cost.gpu_hour_usd is not None:
            return cost.gpu_hour_usd, f"{gpu_id}: ${cost.gpu_hour_usd:.2f}/GPU-h (user rate)"
        rate = p.hour_usd if p else FALLBACK_HOUR_USD
        src = p.sources.get("hour_usd", "") if p else "assumption: no catalog price"
        return rate, f"{gpu_id}: ${rate:.2f}/GPU-h default ({src})"
    price, _ = gpu_purchase_usd(gpu_id, cost)
    tdp = accelerators()[gpu_id].tdp_w
    host = hosting_usd_per_kw_month(cost)
    rate = purchase_usd_per_gpu_hour(
        price, cost.amortisation_years, tdp, cost.pue, cost.usd_per_kwh, cost.utilisation, host
    )
    who = "user price" if cost.gpu_price_usd is not None else "default price, data/prices.yaml"
    return rate, (
        f"{gpu_id}: ${price:,.0f} ({who}) over {cost.amortisation_years:g} years + "
        f"{tdp:.0f} W x PUE {cost.pue:g} x ${cost.usd_per_kwh:g}/kWh + hosting "
        f"${host:,.2f}/kW-month, at {cost.utilisation:.0%} utilisation = ${rate:.2f}/GPU-h"
    )


#: Purchase price per GPU, and rental per GPU-hour, when data/prices.yaml has none.
FALLBACK_PRICE_USD = 30e3
FALLBACK_HOUR_USD = 3.0


def gpu_purchase_usd(gpu_id: str, cost: Cost) -> tuple[float, str]:
    """(USD per GPU, where it comes from): the user's price, else data/prices.yaml's with its
    source, else the stated fallback assumption."""
    if cost.gpu_price_usd is not None:
        return cost.gpu_price_usd, "your input"
    p = default_prices().get(gpu_id)
    if p:
        return p.purchase_usd, p.sources.get("purchase_usd", "")
    return FALLBACK_PRICE_USD, "no catalog price: assumed"


def servers_needed(gpus, gpus_per_replica, gpus_per_server: int, aggregated: int) -> np.ndarray:
    """Whole servers a deployment occupies: a replica of at least a server's GPUs spans
    ceil(replica / server) servers of its own; smaller replicas (and the pools of the
    disaggregated candidates, from index ``aggregated`` on) pack: ceil(GPUs / GPUs per server).

    >>> servers_needed([4, 12, 24, 12], [4, 4, 12, 4], 8, 3).tolist()  # 2 x TP12 -> 2 x 2 servers
    [1, 2, 4, 2]
    """
    g = np.asarray(gpus, dtype=int)
    rep = np.asarray(gpus_per_replica, dtype=int)
    packed = -(-g // gpus_per_server)
    own = -(-rep // gpus_per_server) * (g // np.maximum(rep, 1))
    spans = (rep >= gpus_per_server) & (np.arange(g.size) < aggregated)
    return np.where(spans, own, packed).astype(int)


def deployment_usd_per_hour(sc: Scenario, gpus, servers, usd_per_gpu_hour) -> np.ndarray:
    """USD per (useful) hour of deployments: bought, whole servers (every GPU in them plus the
    amortised host); rented, the GPUs used.

    usd/h = servers x (GPUs per server x usd/GPU-h + server price / (years x 8760) / util)
    (purchase) or GPUs x usd/GPU-h (hourly).
    """
    c = sc.cost
    if c.mode == "hourly":
        return np.asarray(gpus, float) * usd_per_gpu_hour
    host = usd_per_server_hour(server_usd(c)[0], c.amortisation_years, c.utilisation)
    gpn = sc.hardware.gpus_per_node
    return np.asarray(servers, float) * (gpn * np.asarray(usd_per_gpu_hour, float) + host)


def deployment_capex_usd(sc: Scenario, servers, shape_gpus: list[str], shape_of) -> np.ndarray:
    """Purchase price of deployments, USD: servers x (GPUs per server x GPU price + host
    server); 0 for rented GPUs (nothing bought)."""
    c = sc.cost
    if c.mode == "hourly":
        return np.zeros(np.asarray(servers).size)
    price = {g: gpu_purchase_usd(g, c)[0] for g in set(shape_gpus)}
    per_shape = np.array([price[g] for g in shape_gpus], float)
    gpn = sc.hardware.gpus_per_node
    per_server = gpn * per_shape[np.asarray(shape_of, dtype=int)] + server_usd(c)[0]
    return np.asarray(servers, float) * per_server


def server_basis(sc: Scenario) -> list[str]:
    """The whole-server convention in words, for the cost basis ([] for rented GPUs)."""
    c = sc.cost
    if c.mode == "hourly":
        return ["Rented per GPU used, every hour of the month."]
    price, why = server_usd(c)
    rate = usd_per_server_hour(price, c.amortisation_years, c.utilisation)
    return [
        f"Bought as whole servers of {sc.hardware.gpus_per_node} GPUs: every GPU of a server "
        f"is paid for, used or spare, plus the host server without GPUs, ${price:,.0f} ({why}), "
        f"${rate:.2f}/h amortised at {c.utilisation:.0%} utilisation; the cost per token and "
        "per month of every view include both."
    ]


def hosting_usd_per_kw_month(cost: Cost) -> float:
    """The user's hosting rate, or data/prices.yaml's default (``default_hosting``)."""
    if cost.hosting_usd_per_kw_month is not None:
        return cost.hosting_usd_per_kw_month
    return default_hosting().usd_per_kw_month


def usd_per_million_tokens(gpus, usd_per_gpu_hour, tok_per_s) -> np.ndarray:
    """USD per 1e6 output tokens: gpus x rate / (tok/s x 3600) x 1e6 (inf at zero throughput).

    >>> float(usd_per_million_tokens(8, 2.0, 1000.0))  # 16 $/h / 3.6e6 tok/h x 1e6
    4.444444444444444
    """
    with np.errstate(divide="ignore"):
        return (
            np.asarray(gpus, float)
            * usd_per_gpu_hour
            / (np.asarray(tok_per_s, float) * 3600.0)
            * 1e6
        )


HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0


def usd_per_month(usd_per_hour: float) -> float:
    """A deployment's cost over an average month: usd/h x 8760 h / 12 (paid every hour).

    >>> usd_per_month(10.0)  # 10 $/h x 730 h
    7300.0
    """
    return usd_per_hour * HOURS_PER_MONTH

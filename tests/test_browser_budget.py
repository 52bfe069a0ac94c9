"""Real browser: users with a think time show P50-P99 on Latency, and the Recommendation page's
budget adds up to what data/prices.yaml gives by hand (issue 13 checks).

Expected values: the prices file read here with yaml (H100 SXM $37,000 per GPU incl. server
share, hosting $195.94/kW-month), the H100's 700 W TDP (datasheet), the sidebar defaults
(4 years, PUE 1.3, $0.12/kWh) and the GPUs of ``recommend`` on the same scenario.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.app_server import SHOTS, wait_ms

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
QUERY = "users=200&rate=none&think=15&ttft=1000&tpot=50"
PRICES = yaml.safe_load((Path(__file__).resolve().parent.parent / "data/prices.yaml").read_text())


def _metric(page, label: str) -> str:
    """The value of the metric whose label is exactly ``label``: has_text alone is a
    case-insensitive substring, so "Per month" also finds "Per user per month", and which one
    comes first depends on how far the page has rendered."""
    exact = page.locator(
        '[data-testid="stMetricLabel"]', has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")
    )
    m = page.locator('[data-testid="stMetric"]').filter(has=exact).first
    return m.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_users_with_think_time_show_every_percentile_on_latency(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{server}/latency?{QUERY}")
    page.get_by_text("200 users thinking 15 s").first.wait_for(timeout=wait_ms(120_000))
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for(timeout=wait_ms(60_000))
    for col in ("P50", "P90", "P95", "P99"):  # the grid's accessible header cells
        grid.locator("th", has_text=col).first.wait_for(state="attached", timeout=wait_ms(30_000))
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()


def test_budget_adds_up_from_the_prices_file(server, browser):
    from advisor.scenario import SLA, Scenario, Workload
    from advisor.search.recommend import recommend

    s = Scenario(workload=Workload(concurrent_users=200, arrival_rate_per_s=None),
                 sla=SLA(ttft_ms=1000.0, tpot_ms=50.0))  # fmt: skip
    n = recommend(s).best.gpus
    servers = -(-n // 8)  # bought as whole 8-GPU servers, each with its host (data/prices.yaml)
    purchase = servers * (8 * PRICES["prices"]["h100-sxm"]["purchase_usd"]
                          + PRICES["server"]["non_gpu_usd"])  # fmt: skip
    kw = servers * 8 * 0.700
    monthly = (purchase / 48 + kw * 1.3 * 730 * 0.12
               + kw * PRICES["hosting"]["usd_per_kw_month"])  # fmt: skip
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{server}/recommendation?{QUERY}")
    page.get_by_text("Per user per month").first.wait_for(timeout=wait_ms(180_000))
    assert _metric(page, "GPUs") == f"{n:,}"
    assert _metric(page, "Per month") == f"${monthly:,.0f}"
    assert _metric(page, "Per user per month") == f"${monthly / 200:,.2f}"
    assert _metric(page, "Purchase") == f"${purchase:,.0f}"
    page.get_by_text("Budget", exact=True).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "budget-1280.png"))
    page.close()

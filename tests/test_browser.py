"""Real browser: the app served by `streamlit run`, driven with playwright and Debian's chromium.

Changes the GPU in the sidebar and puts a deployment in focus (TP=2) through the link, waits for
the memory chart's title to follow, opens the resulting URL in a fresh page and checks the same
numbers show. Screenshots of every page go to
test-output/screenshots/. Expected numbers: advisor.physics.memory.memory_budget.
"""

from __future__ import annotations

import shutil

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.charts.memory_charts import memory_stack_title
from advisor.physics.memory import memory_budget
from tests.app_server import SHOTS, wait_ms
from ui.format import gb
from ui.nav import PAGES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
# The frontend wraps titles in <b> tags: match the text inside.
TITLE_JS = """(want) => [...document.querySelectorAll('.js-plotly-plot')]
    .some(p => p?.layout?.title?.text?.replace(/<[^>]*>/g, '') === want)"""


def _metric(page, label: str) -> str:
    m = page.locator('[data-testid="stMetric"]', has_text=label).first
    return m.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _wait_title(page, title: str) -> None:
    page.wait_for_function(TITLE_JS, arg=title, timeout=wait_ms(30_000))


def test_change_gpu_and_tp_then_share_the_link(server, browser):
    from advisor.scenario import Scenario
    from advisor.search.recommend import recommend

    SHOTS.mkdir(parents=True, exist_ok=True)
    model = get_model("llama-3.1-70b")
    page = browser.new_page(viewport={"width": 1600, "height": 2400})
    page.goto(server + "/memory")
    best = recommend(Scenario()).best  # the deployment in focus by default
    _wait_title(page, memory_stack_title(model.name, get_accelerator(best.gpu).name, best.tp, 1))

    sidebar = page.locator('[data-testid="stSidebar"]')
    gpus = sidebar.locator('[data-testid="stMultiSelect"]').first
    gpus.locator('button[aria-label="Remove NVIDIA H100 SXM5 80GB"]').first.click()
    gpus.locator("input").fill("MI300X")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.wait_for_function("() => location.search.includes('g=mi300x')", timeout=wait_ms(10_000))
    # a link naming a deployment on the new hardware puts it in focus
    page.goto(page.url.replace("/memory?", "/memory?dep=mi300x.tp2.pp1.dp1.fp16.fp16&"))
    mi300x = get_accelerator("mi300x")
    title = memory_stack_title(model.name, mi300x.name, 2, 1)
    _wait_title(page, title)

    b = memory_budget(model, mi300x, tp=2, context_tokens=1024 + 256)
    shown = {k: _metric(page, k) for k in ("Weights per GPU", "Sequences (paged)")}
    assert shown == {
        "Weights per GPU": gb(b.weights_bytes_per_gpu),
        "Sequences (paged)": f"{b.max_concurrent_sequences:,}",
    }
    page.wait_for_function("() => location.search.includes('g=mi300x') && "
                           "location.search.includes('dep=mi300x.tp2')", timeout=wait_ms(10_000))  # fmt: skip
    page.screenshot(path=str(SHOTS / "memory.png"), full_page=True)

    fresh = browser.new_page(viewport={"width": 1600, "height": 2400})
    fresh.goto(page.url)
    _wait_title(fresh, title)
    assert {k: _metric(fresh, k) for k in shown} == shown
    fresh.close()
    page.close()


#: Waits until a Streamlit run has finished and drawn: the main area has its title, no status
#: widget ("Running..."), no skeleton placeholder, every plotly chart laid out, for 1.5 s.
IDLE_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const h1 = main?.querySelector('h1');
  const busy = document.querySelector('[data-testid="stStatusWidget"]');
  const skeletons = document.querySelectorAll('[data-testid="stSkeleton"]').length;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const drawn = charts.every(c => c.querySelector('.js-plotly-plot')?._fullLayout);
  if (!h1 || busy || skeletons || !drawn) { window.__idleSince = undefined; return false; }
  window.__idleSince = window.__idleSince || Date.now();
  return Date.now() - window.__idleSince > 1500;
}"""


@pytest.mark.parametrize(
    "path,url", [(p, u) for p, _, u, _ in PAGES], ids=[u for _, _, u, _ in PAGES]
)
def test_every_page_renders_without_error_and_is_screenshot(server, browser, path, url):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1600, "height": 2400})
    page.goto(f"{server}/{url}")
    page.wait_for_function(IDLE_JS, timeout=wait_ms(90_000), polling=250)
    assert page.locator('[data-testid="stException"]').count() == 0, path
    assert "Traceback" not in page.locator('[data-testid="stMain"]').inner_text(), path
    page.screenshot(path=str(SHOTS / f"page-{url}.png"), full_page=True)
    page.close()


#: Page coordinates of the first point of a trace in the first plotly chart (data -> pixels).
POINT_JS = """(name) => {
  const gd = document.querySelector('.js-plotly-plot');
  const tr = gd._fullData.find(t => t.name === name && t.xaxis === 'x');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.c2p(tr.x[0]), y: box.top + ya._offset + ya.c2p(tr.y[0]),
          spec: tr.customdata[0][0]};
}"""


def test_clicking_a_pareto_point_puts_it_in_focus_on_every_page(server, browser):
    from advisor.search.deployment_spec import parse_spec

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(server + "/")
    page.wait_for_function(IDLE_JS, timeout=wait_ms(90_000), polling=250)
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    p = page.evaluate(POINT_JS, "meets the SLA")
    page.mouse.click(p["x"], p["y"])
    banner = page.locator('[data-testid="stAlert"]', has_text="In focus").first
    want = parse_spec(p["spec"]).describe()
    page.wait_for_function(
        "(t) => [...document.querySelectorAll('[data-testid=\"stAlert\"]')]"
        ".some(a => a.innerText.includes(t))", arg=want, timeout=wait_ms(30_000),
    )  # fmt: skip
    assert "a Pareto point (clicked)" in banner.inner_text()
    page.wait_for_function("(d) => location.search.includes('dep=' + d)", arg=p["spec"],
                           timeout=wait_ms(10_000))  # fmt: skip
    page.locator('[data-testid="stSidebarNav"] a', has_text="Memory").click()
    page.wait_for_function(IDLE_JS, timeout=wait_ms(90_000), polling=250)
    assert want in page.locator('[data-testid="stAlert"]', has_text="In focus").first.inner_text()
    page.close()

"""App fuzzing under AppTest: every page through random widget combinations and malformed links.

The engine is bench/fuzz_app.py (longer runs: ``.venv/bin/python bench/fuzz_app.py --combos
2000``). Here it is seeded and bounded (about two minutes): 300 combinations over the ten pages,
at most two accelerator types and 256 GPUs in the sidebar so the recommendation search stays fast
(the bench script lifts both limits). Expected: no exception element, no "Traceback", no
``unexpected error`` message from ``ui.state.guarded``, every select-like option picked once.

Also regression tests for the bugs the fuzzing found (each names the bug).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog.user_data import ENV_VAR
from bench.fuzz_app import fuzz, fuzz_url, pages, url_params
from ui.url import URL_KEYS, scenario_from_params

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
COMBOS = 300


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))


def _fmt(findings) -> str:
    return "\n".join(f"[{f.kind}] {f.page} after {f.actions}: {f.message[:400]}" for f in findings)


@pytest.mark.slow
def test_300_random_widget_combinations_render_without_exception():
    rep = fuzz(seed=20260101, combos=COMBOS, max_total_gpus=256, max_gpu_types=2)
    print(rep.summary())
    assert rep.combos == COMBOS
    assert set(rep.per_page) == set(pages())  # every page of app.py's PAGES was driven
    assert min(rep.per_page.values()) >= COMBOS // len(pages()) - 3
    assert not rep.findings, _fmt(rep.findings)
    assert sum(rep.extremes.values()) > 50  # min/max ends of number inputs and sliders were set
    # Every option of the sidebar's select-like widgets was picked at least once.
    # Not the draft model: its options are the target's smaller models, drawn only with
    # speculative decoding on, so which exist depends on the random model picked before.
    # The intra-link option "own" is labelled with the first GPU's link: one option, several
    # labels, so only its label for some GPU has to come up.
    uncovered = {k: {o for o in v if not (k == "select:w.il" and o.startswith("GPU's own ("))}
                 for k, v in rep.uncovered().items()}  # fmt: skip
    sidebar = {k: v for k, v in uncovered.items()
               if v and k.split(":", 1)[1].startswith("w.") and k != "select:w.draft"}  # fmt: skip
    assert not sidebar, sidebar


def test_malformed_links_warn_instead_of_failing():
    n, findings = fuzz_url(seed=7, n=25)
    assert n == 25
    assert not findings, _fmt(findings)


def test_url_generator_produces_invalid_values():
    """The link fuzzer is not vacuous: most generated links carry at least one ignored value."""
    rng = random.Random(7)
    links = [url_params(rng) for _ in range(200)]
    warned = sum(bool(scenario_from_params(p)[2]) for p in links)
    assert warned > 150
    assert {k for p in links for k in p} >= set(URL_KEYS.values())


# -- regressions found by the fuzzing -----------------------------------------------------------
def _app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60).run()


def test_rented_gpus_then_any_page_runs():
    """Bug: choosing rented GPUs hid the purchase fields; Streamlit dropped their state and the
    next run read them (KeyError 'w.price' as an exception on every page)."""
    at = _app()
    at.radio(key="w.cm").set_value("hourly").run()
    at.switch_page("ui/pages/overview.py").run()
    at.run()
    assert not at.exception, at.exception[0].message if at.exception else ""
    at.radio(key="w.cm").set_value("purchase").run()
    assert not at.exception


def test_hidden_sidebar_values_survive_a_mode_switch():
    """Bug: load given as users and back reset the arrival rate to the widget minimum (0.001
    requests/s); rented and back reset amortisation, utilisation, PUE, electricity."""
    at = _app()
    at.number_input(key="w.rate").set_value(12.5).run()
    at.number_input(key="w.yrs").set_value(7.0).run()
    at.radio(key="w.loadmode").set_value("concurrent users").run()
    at.radio(key="w.cm").set_value("hourly").run()
    at.run()
    at.radio(key="w.loadmode").set_value("arrival rate (requests/s)").run()
    at.radio(key="w.cm").set_value("purchase").run()
    assert not at.exception
    assert at.number_input(key="w.rate").value == 12.5
    assert at.number_input(key="w.yrs").value == 7.0
    assert at.session_state["scenario"].workload.arrival_rate_per_s == 12.5
    assert at.session_state["scenario"].cost.amortisation_years == 7.0


def test_app_imports_pandas_and_pyarrow_before_any_page_runs():
    """Bug (20 concurrent sessions on a fresh server): a chart built while another session's first
    run was still importing pandas failed with "partially initialized module 'pandas' has no
    attribute 'Series'" (plotly/narwhals look pandas up in sys.modules). app.py now imports them
    in full before st.navigation, so every run waits on the import lock until they are complete."""
    import ast

    tree = ast.parse((ROOT / "app.py").read_text())
    order = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            order += [a.name for a in node.names]
        elif isinstance(node, ast.Assign) and "navigation" in ast.unparse(node.value):
            order.append("st.navigation")
    nav = order.index("st.navigation")
    for mod in ("pandas", "pyarrow", "plotly.graph_objects"):
        assert mod in order[:nav], mod

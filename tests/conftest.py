"""Shared fixtures: one app server and one headless chromium for the real-browser tests."""

from __future__ import annotations

import pytest

from tests.app_server import CHROMIUM, CHROMIUM_ARGS, running_app
from tests.tiers import mark, spawn_guard  # noqa: F401  (an autouse fixture)

pytest_plugins = ["pytester"]


def pytest_collection_modifyitems(config, items):
    mark(items)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The app, served once for the whole browser suite, with a temporary data folder."""
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH")
    try:
        with running_app(tmp_path_factory.mktemp("ia-data")) as url:
            yield url
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _no_prediction_errors(mp: pytest.MonkeyPatch) -> None:
    import advisor.perf.model.intervals as intervals

    empty = intervals.ErrorTable((), {})
    mp.setattr(intervals, "load_table", lambda path=None: empty)
    _clear_app_caches()


def _clear_app_caches() -> None:
    """The app's st.cache_data outlives an AppTest run: a recommendation cached by an earlier
    test (with the real error table) would be shown under the patch, and the other way round."""
    import streamlit as st

    st.cache_data.clear()


@pytest.fixture
def point_predictions(monkeypatch):
    """No out-of-sample errors: every interval is the point itself (factor 1), so "meets the
    SLA" is decided on the prediction. For tests about the physics or the search's mechanics,
    which data/crossval.yaml's current errors must not decide (advisor/perf/model/intervals.py)."""
    _no_prediction_errors(monkeypatch)
    yield
    _clear_app_caches()


@pytest.fixture(scope="module")
def point_predictions_module():
    """``point_predictions`` for module-scoped fixtures (a recommendation computed once)."""
    with pytest.MonkeyPatch.context() as mp:
        _no_prediction_errors(mp)
        yield
    _clear_app_caches()


@pytest.fixture
def run_cli(capsys):
    """``advisor.cli.main(argv)`` in-process: (exit code, stdout, stderr); an argparse refusal
    (SystemExit) counts as its exit code."""
    from advisor.cli import main

    def run(argv: list[str]) -> tuple[object, str, str]:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        return (code, *capsys.readouterr())

    return run

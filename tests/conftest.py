"""Shared fixtures: one app server and one headless chromium for the real-browser tests."""

from __future__ import annotations

import pytest

from tests.app_server import CHROMIUM, CHROMIUM_ARGS, running_app


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

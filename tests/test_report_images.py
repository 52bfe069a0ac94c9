"""advisor.report.images.prestart: the browser started ahead of the first chart (issue 38).

Without a browser it does nothing and the report lists the charts as missing (as before); a
start that fails is remembered with its reason, so no chart waits for a browser that cannot
come, and the PDF says why.
"""

from __future__ import annotations

from advisor.report import images


def test_prestart_without_browser_is_a_no_op(monkeypatch):
    monkeypatch.setattr(images, "browser_path", lambda: None)
    monkeypatch.setitem(images._state, "broken", None)
    monkeypatch.setitem(images._state, "started", False)
    images.prestart()
    assert images._state == {"started": False, "broken": None}
    ok, why = images.charts_status()
    assert not ok and "no Chrome/Chromium browser found" in why


def test_failed_prestart_is_reported_by_the_first_chart(monkeypatch):
    def fail() -> bool:
        raise RuntimeError("browser exited with code 1\nmore detail")

    monkeypatch.setattr(images, "_start", fail)
    monkeypatch.setitem(images._state, "broken", None)
    monkeypatch.setitem(images._state, "started", False)
    images.prestart()
    assert images.figure_png(object(), 10, 10) is None  # no second attempt, no wait
    ok, why = images.charts_status()
    assert not ok and "RuntimeError: browser exited with code 1" in why
    assert "more detail" not in why  # one line, for the PDF's list of missing charts

"""ui.cache.trust_figure: the Trust page's scatter built once per filter set (issue 38).

The rows are three hand-written measurements, so each filter's expected point count is read
off them: a changed filter must give a changed figure, the same filter the same one.
"""

from __future__ import annotations

import pytest

from ui import cache

ROWS = [
    {"id": "m1", "gpu": "h100-sxm", "engine": "vllm", "model": "llama-3.1-70b", "family": "TTFT",
     "measured": 0.2, "predicted": 0.22, "error_pct": 10.0},
    {"id": "m2", "gpu": "mi300x", "engine": "vllm", "model": "llama-3.1-70b", "family": "TTFT",
     "measured": 0.3, "predicted": 0.27, "error_pct": -10.0},
    {"id": "m3", "gpu": "h100-sxm", "engine": "sglang", "model": "qwen3-235b-a22b",
     "family": "batch-1 decode", "measured": 0.02, "predicted": 0.025, "error_pct": 25.0},
]  # fmt: skip


@pytest.fixture
def fake_rows(monkeypatch):
    monkeypatch.setattr(cache, "trust_report", lambda: ({}, ROWS, []))
    cache.trust_figure.clear()
    yield
    cache.trust_figure.clear()


def _ids(fig) -> list[str]:
    return sorted(c[0] for t in fig.data if t.mode == "markers" for c in t.customdata)


def test_each_filter_draws_its_rows(fake_rows):
    every = cache.trust_figure((), (), (), ())
    assert _ids(every) == ["m1", "m2", "m3"]
    assert every.layout.title.text == "Predicted vs measured: 3 measurements"
    h100 = cache.trust_figure(("h100-sxm",), (), (), ())
    assert _ids(h100) == ["m1", "m3"] and "2 measurements" in h100.layout.title.text
    assert _ids(cache.trust_figure((), ("vllm",), (), ("TTFT",))) == ["m1", "m2"]
    assert _ids(cache.trust_figure((), (), ("qwen3-235b-a22b",), ())) == ["m3"]


def test_the_same_filter_reuses_the_figure(fake_rows):
    first = cache.trust_figure(("mi300x",), (), (), ())
    assert cache.trust_figure(("mi300x",), (), (), ()) is first
    assert cache.trust_figure(("h100-sxm",), (), (), ()) is not first

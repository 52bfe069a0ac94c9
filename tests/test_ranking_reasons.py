"""The sentences that say why a deployment ranks below the pick name the key the ranking decided
by (search.ranking.deciding_key), in the article-shape comparison, the disaggregated pick's
explanation and the PDF's alternatives.

Until 2026-12-07 each text walked the ranking's keys itself, and the article-shape one skipped
headroom: at the same price per hour on as many GPUs it named the latency, or said "either would
do", where the search had ranked the pick first on its headroom."""

from __future__ import annotations

from types import SimpleNamespace as N

import numpy as np
import pytest

from advisor.report.facts import Deployment
from advisor.report.sections.summary import ranks_lower
from advisor.search.explain import compare_with_article_shape
from advisor.search.ranking import deciding_key, rank_order
from advisor.search.results import Percentiles

SC = N(rank_by="cost", sla=N(percentile=99, tpot_ms=50.0, ttft_ms=None, e2e_ms=None))


def _dep(gpus, usd_h, usd_m, tpot_ms, headroom):
    tpot = Percentiles(p50=tpot_ms, p90=tpot_ms, p95=tpot_ms, p99=tpot_ms)
    return N(description=f"{gpus} GPUs", stable=True, meets_sla=True, gpus=gpus,
             usd_per_hour=usd_h, usd_per_million_tokens=usd_m, tpot_ms=tpot,
             headroom=headroom)  # fmt: skip


def test_article_shape_that_loses_on_headroom_says_so():
    """Hand case: both on one 8-GPU server ($24.09/h), 6 GPUs each; the pick serves 2.5x the
    offered rate, the article's shape 1.4x but with the lower P99 TPOT (32 ms vs 36 ms). The
    ranking (price, GPUs, headroom, latency) puts the pick first on headroom; the sentence said
    "meets the SLA equally well ... either would do"."""
    best, shaped = _dep(6, 24.09, 1.195, 36.0, 2.5), _dep(6, 24.09, 1.195, 32.0, 1.4)
    assert rank_order("cost", [24.09, 24.09], [6, 6], [2.5, 1.4], [36.0, 32.0]).tolist() == [0, 1]
    text = compare_with_article_shape(SC, best, shaped)
    assert "either would do" not in text
    assert "but ranks second on headroom (1.4x vs 2.5x the offered rate)" in text
    assert "its own P99 TPOT is lower (32.0 ms vs 36.0 ms)" in text


def test_article_shape_that_loses_on_latency_names_it():
    """Same price, GPUs and headroom: the lower P99 TPOT decides (33.8 ms vs 36.0 ms)."""
    text = compare_with_article_shape(
        SC, _dep(6, 24.09, 1.2, 33.8, 2.5), _dep(6, 24.09, 1.2, 36.0, 2.5)
    )
    assert "the search's pick has the lower P99 TPOT (33.8 ms vs 36.0 ms)" in text


def test_pdf_alternative_that_loses_on_latency_says_so():
    """The PDF's alternatives: same price per hour, GPUs and headroom, a higher P99 TPOT (38.2 ms
    against the pick's 36.0 ms). It said "ranked after it", with no reason."""
    best = Deployment("pick", gpus=6, usd_per_mtok=1.195, usd_per_hour=24.09, headroom=2.5,
                      tpot_ms=36.0)  # fmt: skip
    p = N(gpus=6, usd_per_million_tokens=1.2, usd_per_hour=24.09, headroom=2.5, latency_ms=38.2)
    text = ranks_lower(p, best, "P99 TPOT")
    assert "ranked after it" not in text
    assert "a higher P99 TPOT (38.2 ms vs 36.0 ms)" in text


@pytest.mark.parametrize("rank_by", ["cost", "gpus"])
def test_the_deciding_key_is_the_one_the_order_follows(rank_by):
    """For 2,000 random pairs drawn on a coarse grid (so that ties on each key are common), the
    key named is one where the pair differs, every key before it ties, and ordering the pair on
    that key alone gives rank_order's order."""
    rng = np.random.default_rng(7)
    names = {"price": 0, "gpus": 1, "headroom": 2, "latency": 3}
    order = {"cost": ("price", "gpus", "headroom", "latency"),
             "gpus": ("gpus", "price", "headroom", "latency")}[rank_by]  # fmt: skip
    # larger headroom ranks first: compare it negated
    sign = {"price": 1.0, "gpus": 1.0, "headroom": -1.0, "latency": 1.0}
    for _ in range(2000):
        cols = (rng.choice([16.86, 24.09], 2), rng.choice([4, 6, 8], 2),
                rng.choice([1.4, 2.5], 2), rng.choice([32.0, 36.0], 2))  # fmt: skip
        key = deciding_key(rank_by, *cols)
        first = rank_order(rank_by, *cols).tolist()[0]
        if key is None:
            assert all(c[0] == c[1] for c in cols)
            continue
        before = order[: order.index(key)]
        assert all(cols[names[k]][0] == cols[names[k]][1] for k in before)
        a, b = (sign[key] * cols[names[key]][i] for i in (0, 1))
        assert a != b
        assert first == (0 if a < b else 1)


def test_l40s_article_shape_names_headroom(capsys):
    """Llama-3.1-8B for 50 users on L40S: the pick and the article's shape (1 x TP=1, fp16
    weights) each take one GPU at $6.92/h; the pick serves 4.5x the offered rate, the shape 3.8x.
    The sentence said "the search's pick has the lower P99 TPOT (20.4 ms vs 35.3 ms)", a key the
    ranking never reached."""
    import json

    from advisor.cli import main

    argv = ["recommend", "--model", "llama-3.1-8b", "--gpu", "l40s", "--users", "50", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    best, shaped = doc["best"], doc["decision_matrix"]["article_shaped"]
    assert shaped["gpus"] == best["gpus"] and shaped["usd_per_hour"] == pytest.approx(
        best["usd_per_hour"], abs=1e-6
    )
    assert shaped["headroom"] < best["headroom"]
    text = next(d for d in doc["decision_matrix"]["differences"] if "article's shape" in d)
    assert "the search's pick has the lower" not in text
    assert f"ranks second on headroom ({shaped['headroom']:.1f}x vs {best['headroom']:.1f}x" in text

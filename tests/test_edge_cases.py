"""Numerical edge cases through estimate / memory / recommend: results stay finite and explained.

Documented non-finite values: an unstable open-loop estimate (offered load above capacity) has
infinite latencies, shown as JSON null, with ``stable: false`` and a reason; a deployment that
does not fit has null latencies with ``fits: false`` and a reason. Nothing else may be NaN/inf.
"""

from __future__ import annotations

import json
import math

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.catalog.specs import ModelSpec
from advisor.cli import main
from advisor.perf.model.estimate import EstimateInput, estimate
from advisor.physics.memory import memory_budget

H100 = get_accelerator("h100-sxm")
L8B = get_model("llama-3.1-8b")  # 32 query heads, 8 KV heads, 131,072-token context (HF config)
DRAFT = get_model("llama-3.2-1b")
LATENCIES = ("ttft_ms", "tpot_ms", "e2e_ms")


def non_finite(obj, path=""):
    """Paths of every NaN/inf float in a nested result."""
    if isinstance(obj, float):
        return [] if math.isfinite(obj) else [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in non_finite(v, f"{path}.{k}")]
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in non_finite(v, f"{path}[{i}]")]
    return []


def cli_json(capsys, *argv):
    try:
        code = main([*argv, "--json"])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    if code != 0:
        return code, out.err
    return code, json.loads(out.out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def assert_finite_result(r):
    assert non_finite(r) == [], non_finite(r)
    assert r["fits"] and all(r[k] > 0 or k == "tpot_ms" for k in LATENCIES)


@pytest.mark.parametrize(
    "label, inp",
    [
        ("1-token prompt, 1 output token", EstimateInput(isl=1, osl=1, concurrency=1)),
        ("1-token prompt, open loop", EstimateInput(isl=1, osl=128, qps=1.0)),
        ("osl 1 (no decode step)", EstimateInput(isl=1024, osl=1, qps=1.0)),
        ("context at the maximum", EstimateInput(isl=131_071, osl=1, concurrency=1)),
        ("TP 16 > 8 KV heads", EstimateInput(isl=128, osl=128, tp=16, concurrency=8)),
        ("TP 64 > 8 KV heads", EstimateInput(isl=128, osl=128, tp=64, concurrency=8)),
        ("10,000 GPUs (DP)", EstimateInput(isl=128, osl=128, dp=10_000, qps=1e5)),
        ("10,000 GPUs offline", EstimateInput(isl=128, osl=128, dp=10_000, concurrency="max")),
        ("vanishing load", EstimateInput(isl=128, osl=1, qps=1e-300)),
        ("acceptance 0", EstimateInput(isl=128, osl=128, concurrency=4, spec_draft=DRAFT, spec_acceptance=0)),
        ("acceptance 1", EstimateInput(isl=128, osl=128, concurrency=4, spec_draft=DRAFT, spec_acceptance=1)),
    ],
)  # fmt: skip
def test_estimate_edge_cases_are_finite(label, inp):
    assert_finite_result(estimate(L8B, H100, inp))


def test_osl_1_has_no_inter_token_time():
    """One output token: E2E is the TTFT (the first token is the last)."""
    r = estimate(L8B, H100, EstimateInput(isl=1024, osl=1, qps=1.0))
    assert r["e2e_ms"] == pytest.approx(r["ttft_ms"])


def test_speculative_acceptance_bounds_order_tpot():
    """Acceptance 1 accepts every drafted token (k+1 tokens per verify), 0 only the bonus token:
    TPOT(1) < TPOT(no speculation) < TPOT(0) (Leviathan et al. 2023, expected tokens per step)."""
    base = EstimateInput(isl=128, osl=128, concurrency=4)
    plain = estimate(L8B, H100, base)["tpot_ms"]
    t0 = estimate(L8B, H100, base.model_copy(update={"spec_draft": DRAFT, "spec_acceptance": 0.0}))
    t1 = estimate(L8B, H100, base.model_copy(update={"spec_draft": DRAFT, "spec_acceptance": 1.0}))
    assert t1["tpot_ms"] < plain < t0["tpot_ms"]


def test_tp_beyond_kv_heads_replicates_kv():
    """TP 16 on 8 KV heads: each GPU still holds one whole KV head (replicated), so the KV bytes
    per sequence per GPU stop shrinking at TP = 8 (vLLM replicates KV heads when TP > KV heads)."""
    kv = {
        tp: memory_budget(L8B, H100, tp=tp, pp=1, weights_dtype="fp16", kv_dtype="fp16",
                          context_tokens=4096).kv_bytes_per_sequence_per_gpu
        for tp in (4, 8, 16, 64)
    }  # fmt: skip
    assert kv[4] == pytest.approx(2 * kv[8])
    assert kv[16] == pytest.approx(kv[8]) and kv[64] == pytest.approx(kv[8])


def test_moe_with_one_expert_per_token():
    """Mixtral with top-1 routing: finite, and a single decode sequence reads about half the
    expert weights of top-2, so its TPOT is lower (Mixtral config: 8 experts, 2 per token)."""
    mixtral = get_model("mixtral-8x7b")
    top1 = ModelSpec.model_validate(
        {**mixtral.model_dump(), "id": "mixtral-top1", "num_experts_per_tok": 1}
    )
    inp = EstimateInput(isl=128, osl=128, tp=2, concurrency=1)
    r1, r2 = estimate(top1, H100, inp), estimate(mixtral, H100, inp)
    assert_finite_result(r1)
    assert r1["tpot_ms"] < r2["tpot_ms"]
    assert_finite_result(estimate(top1, H100, inp.model_copy(update={"concurrency": 64})))


def test_overload_is_infinite_only_where_documented(capsys):
    code, r = cli_json(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                       "--isl", "128", "--osl", "128", "--qps", "1e7")  # fmt: skip
    assert code == 0 and r["stable"] is False and "grows without bound" in r["reasons"][0]
    assert all(r[k] is None for k in LATENCIES)  # inf -> null in strict JSON


def test_too_long_for_memory_is_a_result_with_reasons(capsys):
    code, r = cli_json(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "l40s",
                       "--isl", "131000", "--osl", "72", "--concurrency", "64")  # fmt: skip
    assert code == 0 and (r["fits"] is False or r.get("notes")), r
    if not r["fits"]:
        assert r["reasons"] and all(r[k] is None for k in LATENCIES)


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["memory", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "131073"], "--context"),
        (["recommend", "--model", "llama-3.1-8b", "--isl", "131072", "--osl", "1"], "--isl"),
    ],
)  # fmt: skip
def test_context_above_the_model_maximum_is_refused(capsys, argv, flag):
    """Above max_position_embeddings a serving plan (and a memory sizing) is refused: exit 2
    naming the limit. ``estimate`` runs it with a warning (next test)."""
    code, err = cli_json(capsys, *argv)
    assert code == 2 and flag in err and "maximum context of 131,072" in err


def test_estimate_above_the_trained_context_warns_instead_of_refusing(capsys):
    """Llama-3.1-8B's config: max_position_embeddings 131,072; 131,072 + 1 tokens are estimated
    (engines run it when the limit is raised; issue 12), with a warning naming the limit."""
    argv = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "131072",
            "--osl", "1"]  # fmt: skip
    code, r = cli_json(capsys, *argv)
    assert code == 0 and r["fits"] and r["ttft_ms"] > 0, r
    assert len(r["warnings"]) == 1 and "trained context of 131,072" in r["warnings"][0]
    assert main(argv) == 0  # the text output shows the warning once, before the figures
    assert capsys.readouterr().out.count("WARNING: isl + osl = 131,073 tokens") == 1


def test_context_at_the_maximum_is_accepted(capsys):
    code, r = cli_json(capsys, "memory", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                       "--context", "131072")  # fmt: skip
    assert code == 0 and r["fits"] and r["max_concurrent_sequences"] >= 1 and non_finite(r) == []


def test_sla_nothing_can_meet_is_explained(capsys):
    code, r = cli_json(capsys, "recommend", "--model", "llama-3.1-8b", "--tpot-p99-ms", "0.001")
    assert code == 0 and r["best"] is None
    assert "no deployment meets P99 TPOT" in r["no_best_reason"] and r["near_misses"]
    assert non_finite(r) == []
    assert r["explanation"][0].startswith("No deployment reaches P99 TPOT ≤ 0.001 ms")
    assert main(["recommend", "--model", "llama-3.1-8b", "--tpot-p99-ms", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "why no deployment meets the SLA:\n  - No deployment reaches P99 TPOT" in out


@pytest.mark.parametrize("acceptance", ["0", "1"])
def test_recommend_speculative_acceptance_bounds(capsys, acceptance):
    code, r = cli_json(capsys, "recommend", "--model", "llama-3.1-8b", "--isl", "1", "--osl", "1",
                       "--spec-draft", "llama-3.2-1b", "--spec-acceptance", acceptance)  # fmt: skip
    assert code == 0 and r["best"] is not None and r["explanation"]


def test_recommend_10000_gpus(capsys):
    """1,000 nodes x 10 GPUs = 10,000 GPUs: a result in bounded time, finite apart from nulls."""
    code, r = cli_json(capsys, "recommend", "--model", "llama-3.1-8b", "--nodes", "1000",
                       "--gpus-per-node", "10", "--osl", "1")  # fmt: skip
    assert code == 0 and r["best"] is not None and r["best"]["gpus"] <= 10_000


def test_collective_extremes_are_finite(capsys):
    code, r = cli_json(capsys, "collective", "--gpu", "h100-sxm", "--n", "4096", "--bytes", "1e12")
    assert code == 0 and r["time_us"] > 0 and non_finite(r) == []
    code, r = cli_json(capsys, "collective", "--gpu", "h100-sxm", "--n", "1", "--bytes", "1")
    assert code == 0 and r["time_us"] == 0.0 and r["algbw_gbps"] is None  # no transfer: no rate

"""A client profile knows the MoE layout of the runs it was fitted on (expert parallel, attention
data parallel) and applies only to that layout. The search recommends such layouts (the hospital
workshop: Qwen3-235B on B200, TP=2, EP=2, attention DP=2); a client measuring that answer had to
state it as plain TP=2, the fit then ran plain TP's physics against DEP measurements, and the
profile applied to plain-TP replicas it never saw (and to DEP ones as if they were plain TP)."""

from __future__ import annotations

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.cli import main
from advisor.perf.calibration.client_profile import DeploymentDoc, deployment_problem
from advisor.perf.importers import Deployment
from advisor.perf.importers.cases import replica_config
from advisor.perf.model.overlay import Overlay, active
from advisor.perf.model.profile_range import Domain, Work
from advisor.perf.model.profiles import engine_profile
from advisor.perf.model.replica import ReplicaConfig, build_replicas

QWEN = "qwen3-235b-a22b"


#: The workload of the runs in ``test_a_profile_applies_only_to_the_layout_it_was_fitted_on``
#: (a profile applies only where its replica's workload is inside its runs' range).
WORK = Work(1024, 1024, "concurrency", 32)


def _replica(ep: bool, dpa: bool):
    cfg = ReplicaConfig(model=get_model(QWEN), gpu=get_accelerator("b200"), tp=2,
                        weights="fp8", kv="fp8", engine="vllm", ep=ep, dp_attention=dpa,
                        work=WORK)  # fmt: skip
    return build_replicas([cfg])


def test_a_profile_applies_only_to_the_layout_it_was_fitted_on():
    """An overlay fitted on TP=2, EP=2, attention DP=2 (its step overhead 50 ms, far from the
    shipped vLLM value) reaches a DEP replica of that deployment and not a plain TP=2 one."""
    runs = (("concurrency", (1024, 1024), (1024, 1024), (32, 32)),)
    dom = Domain(QWEN, 2, 1, "fp8", "fp8", runs, ep=True, dp_attention=True)
    ov = Overlay(1.0, 1.0, 0.05, None, domain=dom)
    shipped = engine_profile("vllm").step_overhead_s
    assert shipped != pytest.approx(0.05)
    with active("b200", "vllm", ov):
        assert float(_replica(True, True).step_overhead_s[0]) == pytest.approx(0.05)
        assert float(_replica(False, False).step_overhead_s[0]) == pytest.approx(shipped)
        assert float(_replica(True, False).step_overhead_s[0]) == pytest.approx(shipped)
    assert dom.text().startswith("qwen3-235b-a22b TP=2 EP=2 attention DP=2 PP=1 fp8/fp8")
    assert dom.deployment_problem(QWEN, 2, 1, "fp8", "fp8") == (
        "layout TP=2 (the profile was fitted on qwen3-235b-a22b TP=2 EP=2 attention DP=2 PP=1 "
        "fp8/fp8)"
    )


def test_the_runs_are_replayed_on_the_stated_layout():
    cfg = replica_config(Deployment(QWEN, "b200", 2, 1, "fp8", "fp8", "vllm", ep=True,
                                    dp_attention=True))  # fmt: skip
    assert (cfg.ep, cfg.dp_attention) == (True, True)


def test_profiles_written_before_the_layout_read_as_plain_tp():
    base = dict(model=QWEN, gpu="b200", gpu_family="blackwell", tp=2, pp=1, weights="fp8",
                kv="fp8", engine="vllm")  # fmt: skip
    old = DeploymentDoc.model_validate(base)
    assert (old.ep, old.dp_attention) == (False, False)
    new = DeploymentDoc.model_validate({**base, "ep": True, "dp_attention": True})
    assert (new.ep, new.dp_attention) == (True, True)


def test_a_layout_the_model_cannot_take_is_refused_before_any_fit():
    """Llama-3.1-8B has no experts (physics.memory.moe_spread_blocker); Mixtral's 8 experts do not
    split whole over 16 GPUs (expert_parallel_blocker)."""
    dense = Deployment("llama-3.1-8b", "h100-sxm", 2, 1, "bf16", "bf16", "vllm", ep=True)
    assert deployment_problem(dense) == (
        "expert parallel over TP=2 cannot apply to llama-3.1-8b: the model is dense"
    )
    wide = Deployment("mixtral-8x7b", "h100-sxm", 16, 1, "bf16", "bf16", "vllm", ep=True)
    assert "EP=16 > 8 experts" in deployment_problem(wide)
    ok = Deployment(QWEN, "b200", 2, 1, "fp8", "fp8", "vllm", ep=True, dp_attention=True)
    assert deployment_problem(ok) is None


def test_the_cli_names_the_layout_flags_when_it_refuses(tmp_path, capsys):
    from pathlib import Path

    fix = Path(__file__).parent / "fixtures" / "client" / "vllm_bench_throughput.json"
    out = tmp_path / "p.yaml"
    code = main(["calibrate", "--from", str(fix), "--model", "llama-3.1-8b", "--gpu",
                 "h100-sxm", "--engine", "vllm", "--tp", "2", "--ep", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "--ep" in err and "the model is dense" in err

"""The in-engine collective efficiency, one per scale-up fabric (issue 37).

Each kernel-bound fabric of the interconnect catalog (NVLink, Infinity Fabric:
``physics.collectives.kernel_bound``) has its own value in data/calibration.yaml: the shared
``global.collective_efficiency`` times the fabric's ``collective_factor`` (prior at 1), fitted by
``python -m advisor calibrate``; a fabric without rows takes the shared value, flagged
uncalibrated.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from advisor.catalog import get_accelerator, get_interconnect, get_model
from advisor.catalog.loader import DATA_DIR
from advisor.perf.model import profiles
from advisor.perf.model.replica import ReplicaConfig, build_replicas
from advisor.perf.model.step import decode_step


@pytest.fixture(scope="module")
def cal() -> dict:
    return yaml.safe_load((DATA_DIR / "calibration.yaml").read_text(encoding="utf-8"))


@pytest.fixture
def active():
    """Run the model under a calibration document of the test's own, then back to the file."""
    yield profiles.set_active
    profiles.set_active(None)


def _with(cal: dict, shared: float, fabrics: dict) -> dict:
    """The calibration file with the shared in-engine value and the fabrics' factors replaced."""
    doc = copy.deepcopy(cal)
    doc["global"]["collective_efficiency"] = shared
    doc["fabrics"] = fabrics
    return doc


def _replica(gpu: str, tp: int = 8):
    cfg = ReplicaConfig(model=get_model("llama-3.1-70b"), gpu=get_accelerator(gpu), tp=tp,
                        weights="fp8", kv="fp8")  # fmt: skip
    return build_replicas([cfg])


def test_each_fabric_has_its_own_fitted_value_and_the_link_picks_it(cal):
    fabrics = cal["fabrics"]
    # The calibration has NVLink rows (H100/H200/B200/A100 TP>1) and Infinity Fabric rows
    # (MI300X TP 4/8), so both are fitted, within the fit's bounds (calibrate._BOUNDS)
    assert set(fabrics) == {"nvlink", "xgmi"}
    shared = cal["global"]["collective_efficiency"]
    for v in fabrics.values():  # within calibrate._BOUNDS; the file's product is the one used
        assert 0.5 <= v["collective_factor"] <= 2.0 and v["rows"] >= 3
        assert v["collective_efficiency"] == pytest.approx(shared * v["collective_factor"])
    # The MI300X's scale-up link is Infinity Fabric (data/accelerators.yaml scale_up_link xgmi),
    # the H100 SXM's NVLink 4: each replica reads its fabric's value, not its GPU's name.
    nvl, xgmi = (fabrics[k]["collective_efficiency"] for k in ("nvlink", "xgmi"))
    assert float(_replica("mi300x").comm_eff[0]) == pytest.approx(xgmi)
    assert float(_replica("h100-sxm").comm_eff[0]) == pytest.approx(nvl)
    ce = profiles.collective_efficiency(get_interconnect("xgmi-mi350"))
    assert (ce.fabric, ce.calibrated, ce.value) == ("xgmi", True, pytest.approx(xgmi))
    assert f"fitted on {fabrics['xgmi']['rows']} multi-GPU rows over Infinity Fabric" == ce.note


def test_one_fabrics_value_moves_only_its_own_deployments(cal, active):
    # Hand check: the decode step's communication is the nccl-tests latencies plus the bytes at
    # the fabric's value x the nccl-tests rate, affine in 1/value: from 1.0 to 0.9 it grows by
    # (1/0.9 - 1) / (1/0.6 - 1) = 1/6 of what it grows from 1.0 to 0.6 (same algorithm: one
    # token's 16 KiB stays one-shot), and an H100's (NVLink) does not move.
    def comm(gpu: str, xgmi: float) -> float:
        doc = copy.deepcopy(cal)
        doc["global"]["collective_efficiency"] = 0.6
        doc["fabrics"] = {"nvlink": {"collective_factor": 1.0},
                          "xgmi": {"collective_factor": xgmi / 0.6}}  # fmt: skip
        active(doc)
        return float(decode_step(_replica(gpu), 1.0, 2048.0).communication[0])

    bench = comm("mi300x", 1.0)
    grew = (comm("mi300x", 0.9) - bench) / (comm("mi300x", 0.6) - bench)
    assert grew == pytest.approx((1 / 0.9 - 1) / (1 / 0.6 - 1))
    assert comm("h100-sxm", 0.9) == pytest.approx(comm("h100-sxm", 0.6))


def test_a_fabric_without_rows_borrows_and_says_so(cal, active):
    doc = _with(cal, 0.6, {"nvlink": {"collective_factor": 1.1, "rows": 700}})
    active(doc)
    ce = profiles.collective_efficiency(get_interconnect("xgmi"))
    assert (ce.value, ce.calibrated) == (0.6, False)  # the shared value, not NVLink's 0.66
    assert ce.note == ("not calibrated on Infinity Fabric (no rows): the value shared by the "
                       "fabrics with rows")  # fmt: skip
    nvl = profiles.collective_efficiency(get_interconnect("nvlink4"))
    assert (nvl.value, nvl.calibrated) == (pytest.approx(0.66), True)
    del doc["global"]["collective_efficiency"]
    doc["fabrics"] = {}
    active(doc)
    ce = profiles.collective_efficiency(get_interconnect("nvlink4"))
    assert (ce.value, ce.calibrated) == (1.0, False)  # nccl-tests speed, flagged
    # PCIe: the link sets the rate, no efficiency applies (issue 37's L40S fix)
    assert profiles.collective_efficiency(get_interconnect("pcie4")).value == 1.0


def test_a_fitted_product_above_one_runs_at_the_benchmark_rate(cal, active):
    # The fit's bounds (calibrate._BOUNDS: shared 0.2-1.2, factor 0.5-2.0) allow 1.1 x 1.05 =
    # 1.155. An engine's copy kernels do not beat nccl-tests, and the collectives refuse a
    # kernel efficiency above 1: before 2026-12-07 such a trial ended `advisor calibrate` in
    # "internal error: ValueError: kernel_efficiency=1.0275... must be in (0, 1]". It now runs
    # at the benchmark rate, the same step as a value of exactly 1.
    active(_with(cal, 1.1, {"nvlink": {"collective_factor": 1.05, "rows": 700}}))
    ce = profiles.collective_efficiency(get_interconnect("nvlink4"))
    assert (ce.value, ce.calibrated) == (1.0, True)
    over = float(decode_step(_replica("h100-sxm"), 64.0, 2048.0).communication[0])
    active(_with(cal, 1.0, {"nvlink": {"collective_factor": 1.0, "rows": 700}}))
    assert over == pytest.approx(
        float(decode_step(_replica("h100-sxm"), 64.0, 2048.0).communication[0])
    )


def test_estimate_shows_the_value_its_link_uses_and_flags_a_borrowed_one(cal, active):
    from advisor.cli.estimate_cmd import render
    from advisor.perf.model.estimate import EstimateInput, estimate

    m, g = get_model("llama-3.1-70b"), get_accelerator("mi300x")
    r = estimate(m, g, EstimateInput(tp=8, weights="fp8", kv="fp8"))
    ep = r["engine_profile"]
    assert ep["collective_efficiency"] == pytest.approx(
        cal["fabrics"]["xgmi"]["collective_efficiency"]
    )
    assert (ep["collective_fabric"], ep["collective_calibrated"]) == ("xgmi", True)
    assert "UNCALIBRATED: all-reduces" not in render(r)
    doc = copy.deepcopy(cal)
    del doc["fabrics"]["xgmi"]
    active(doc)
    r = estimate(m, g, EstimateInput(tp=8, weights="fp8", kv="fp8"))
    shared = cal["global"]["collective_efficiency"]
    assert r["engine_profile"]["collective_efficiency"] == pytest.approx(shared)
    assert r["engine_profile"]["collective_calibrated"] is False
    assert (f"UNCALIBRATED: all-reduces' data at {shared:.2f} x its nccl-tests rate, not calibrated "
            "on Infinity Fabric (no rows): the value shared by the fabrics with rows"
            ) in render(r)  # fmt: skip


def _predict(row_id: str) -> tuple[float, float]:
    from advisor.perf.validation.measurements import cases
    from advisor.perf.validation.validate import predict_cases

    case = next(c for c in cases()[0] if c.id == row_id)
    return float(predict_cases([case])[0]), case.measured


def test_published_mi300x_tp8_row_within_10_percent():
    # data/measurements-amd-2026.csv A0300 (github:ROCm/vllm docs/dev-docker/README.md
    # @07ee15e, Latency Measurements): Llama-3.1-405B FP8 on 8 x MI300X (Infinity Fabric), vLLM
    # 0.8.3, batch 1, 128 in / 2048 out: 46.601 s end to end. At batch 1 and TP 8 each of the
    # 252 layers' two all-reduces is a 32 KiB, latency-bound RCCL call: the fabric's efficiency
    # is a visible part of the step.
    pred, meas = _predict("A0300")
    assert meas == 46.601
    assert pred / meas == pytest.approx(1.0, abs=0.10)


def test_published_nvlink_tp8_row_within_10_percent():
    # data/measurements-serving3-2026.csv C0005 (github:sgl-project/sgl-cookbook docs/Qwen/Qwen3.md
    # @eeda7bb, 5.1.1.1 Low Concurrency): Qwen3-235B-A22B BF16 on 8 x B200 (NVLink 5), SGLang
    # 0.5.6, one client: mean TPOT 10.27 ms.
    pred, meas = _predict("C0005")
    assert meas == pytest.approx(10.27e-3)
    assert pred / meas == pytest.approx(1.0, abs=0.10)


def test_calibration_fits_one_constant_per_fabric_and_rows_read_their_own(cal):
    from advisor.perf.calibration import calibrate
    from advisor.perf.validation.measurements import cases

    items = cases()[0]
    params = calibrate._parameters(items)
    assert ("global", "collective", "collective_efficiency") in params
    assert ("fabrics", "nvlink", "collective_factor") in params
    assert ("fabrics", "xgmi", "collective_factor") in params
    mi = next(c for c in items if c.id == "A0300")
    h = next(c for c in items if c.id == "C0005")
    assert (calibrate.fabric_of(mi), calibrate.fabric_of(h)) == ("xgmi", "nvlink")
    dep = calibrate.dependence([mi, h], params)
    col = {p: j for j, p in enumerate(params)}
    nvl, xg = (
        col[("fabrics", "nvlink", "collective_factor")],
        col[("fabrics", "xgmi", "collective_factor")],
    )
    assert dep[0, xg] and not dep[0, nvl] and dep[1, nvl] and not dep[1, xg]
    # the rows counted in the file are the fit's (TP > 1 over the fabric)
    n = np.sum([calibrate.fabric_of(c) == "xgmi" for c in items])
    assert cal["fabrics"]["xgmi"]["rows"] == n


def test_pdf_appendix_names_the_value_the_described_deployments_link_uses(cal):
    # The report's calibration appendix lists each fabric's value and the one the deployment it
    # describes uses: 8 x MI300X at TP 8 crosses Infinity Fabric (data/accelerators.yaml).
    from types import SimpleNamespace

    from advisor.report.sections.calibration import collective_text
    from advisor.scenario import Scenario
    from advisor.search.deployment_spec import DeploymentSpec

    spec = DeploymentSpec(gpu="mi300x", tp=8, weights="fp8", kv="fp8")
    ctx = SimpleNamespace(scenario=Scenario(), described=SimpleNamespace(spec=spec))
    text = collective_text(ctx)
    xgmi = cal["fabrics"]["xgmi"]["collective_efficiency"]
    assert f"over Infinity Fabric at {xgmi:.2f} (fitted on {cal['fabrics']['xgmi']['rows']}" in text
    assert text.endswith(
        f"(TP 8 over AMD Infinity Fabric (MI300X / MI325X 8-GPU OAM)) uses {xgmi:.2f}."
    )


def test_an_engines_slowdown_costs_a_decode_step_its_bytes_not_its_latencies(cal, active):
    """Llama-3.1-70B (hidden 8192, 80 layers, two all-reduces each) on 8 x H100, engine k = 0.5.

    One decode token sends 8192 x 2 B = 16 KiB: the custom one-shot kernel, 8.48 us fitted base
    + 2.2 us NVLink step + 7 x 16384 B / (0.3773 x 0.783 x 450 GB/s) = 0.86 us of bytes, 11.54 us
    in the benchmark (``collectives.allreduce_time_s`` hand check). In the engine its bytes take
    twice as long: 12.41 us, 160 x 12.41 = 1.99 ms per step. Before 2026-12-07 the whole time
    was slowed (11.54 / 0.5 = 23.1 us, 3.69 ms per step): an SM shared with the GEMMs copies
    slower, it does not make a flag exchange slower. 4,096 tokens (64 MiB, NVLS: 29.4 us of
    latencies + 246.9 us of bytes in the benchmark) take 29.4 + 2 x 246.9 = 523.1 us each.
    """
    doc = copy.deepcopy(cal)
    doc["global"]["collective_efficiency"] = 0.5
    doc["fabrics"] = {"nvlink": {"collective_factor": 1.0}}
    active(doc)
    cfg = ReplicaConfig(model=get_model("llama-3.1-70b"), gpu=get_accelerator("h100-sxm"), tp=8,
                        weights="bf16", kv="bf16", engine="vllm")  # fmt: skip
    r = build_replicas([cfg])
    assert float(r.comm_eff[0]) == pytest.approx(0.5)
    per_allreduce = {
        tokens: float(decode_step(r, tokens, 1024.0).communication[0]) / 160
        for tokens in (1.0, 4096.0)
    }
    assert per_allreduce[1.0] * 1e6 == pytest.approx(12.41, abs=0.01)
    assert per_allreduce[4096.0] * 1e6 == pytest.approx(523.1, abs=0.1)

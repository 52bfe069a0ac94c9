"""The routed experts' kernel efficiency: 16-bit experts one value, fp8/fp4 ones per accelerator.

advisor/perf/model/profiles.moe_efficiency, replica.low_precision_experts and perf.model.step's expert
reads. Expected values are hand calculations on a calibration document set in the test.
"""

from __future__ import annotations

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.perf.model import profiles
from advisor.perf.model.replica import ReplicaConfig, build_replicas
from advisor.perf.model.step import decode_step


@pytest.fixture
def calibration():
    """A calibration document with both expert efficiencies (restored afterwards)."""

    def use(doc: dict) -> None:
        profiles.set_active(doc)

    yield use
    profiles.set_active(None)


def _replica(model: str, weights: str, gpu: str = "h100-sxm"):
    cfg = ReplicaConfig(model=get_model(model), gpu=get_accelerator(gpu), tp=8,
                        weights=weights, kv="bf16", engine="vllm")  # fmt: skip
    return build_replicas([cfg])


def _doc(moe: float, lowp: float) -> dict:
    """16-bit experts at ``moe`` everywhere, fp8/fp4 experts at ``lowp`` on Hopper only."""
    return {
        "global": {"moe_efficiency": moe},
        "families": {"hopper": {"moe_efficiency_lowp": lowp}},
    }


def test_each_expert_precision_reads_its_own_value(calibration):
    calibration(_doc(0.8, 0.5))
    assert profiles.moe_efficiency() == 0.8
    assert profiles.moe_efficiency(low_precision=True, family="hopper") == 0.5
    # DeepSeek-V3 ships FP8 experts; Mixtral served in bf16 keeps 16-bit experts; gpt-oss's
    # MXFP4 experts are fp4 even though its attention stays bf16 (its quantization_config).
    assert float(_replica("deepseek-v3", "fp8").moe_eff[0]) == 0.5
    assert float(_replica("mixtral-8x7b", "bf16").moe_eff[0]) == 0.8
    assert float(_replica("gpt-oss-120b", "mxfp4").moe_eff[0]) == 0.5
    # Weight-only int4 experts dequantize to 16-bit tiles: the 16-bit value.
    assert float(_replica("mixtral-8x7b", "int4").moe_eff[0]) == 0.8


def test_without_a_low_precision_fit_the_16_bit_value_serves(calibration):
    # An accelerator family without fp8/fp4 MoE rows (here CDNA3: MI300X) has no value of its
    # own, nor has a calibration written before the split.
    calibration(_doc(0.8, 0.5))
    assert profiles.moe_efficiency(low_precision=True, family="cdna3") == 0.8
    assert float(_replica("deepseek-v3", "fp8", "mi300x").moe_eff[0]) == 0.8
    calibration({"global": {"moe_efficiency": 0.6}})
    assert profiles.moe_efficiency(low_precision=True, family="hopper") == 0.6
    calibration({})
    assert profiles.moe_efficiency(low_precision=True) == profiles.DEFAULT_MOE_EFFICIENCY


def test_the_expert_reads_of_a_memory_bound_step_scale_with_one_over_the_efficiency(calibration):
    # DeepSeek-V3 fp8 at batch 1 on 8 x H100 is memory-bound: the step reads the dense weights
    # once and the touched experts' bytes 1 / moe_eff times (perf.model.step: expert_bytes x (1 +
    # slow), slow = 1 / moe_eff - 1). Halving the efficiency from 1.0 to 0.5 therefore adds
    # exactly one more read of the expert bytes, and nothing else moves.
    calibration(_doc(1.0, 1.0))
    fast = decode_step(_replica("deepseek-v3", "fp8"), 1.0, 1024.0)
    calibration(_doc(1.0, 0.5))
    r = _replica("deepseek-v3", "fp8")
    slow = decode_step(r, 1.0, 1024.0)
    # the one extra read of the expert bytes this step touched, at the replica's bandwidth: one
    # token picks 8 distinct experts of 256 (DeepSeek-V3 config.json), 8/256 of them
    extra = float((slow.memory - fast.memory)[0])
    touched_bytes = float(r.expert_weight_bytes[0]) * 8 / 256
    assert extra == pytest.approx(touched_bytes / float(r.hbm_bw[0]), rel=1e-9)
    assert float((slow.compute - fast.compute)[0]) == 0.0
    assert float((slow.total - fast.total)[0]) == pytest.approx(extra)
    # ...and a 16-bit model's step does not move with the fp8/fp4 value
    calibration(_doc(1.0, 1.0))
    a = decode_step(_replica("mixtral-8x7b", "bf16"), 1.0, 1024.0).total
    calibration(_doc(1.0, 0.5))
    b = decode_step(_replica("mixtral-8x7b", "bf16"), 1.0, 1024.0).total
    assert float(a[0]) == float(b[0])


def test_a_routing_draw_exponent_below_one_reads_fewer_experts_at_a_middle_batch(calibration):
    # Qwen3-235B-A22B (config.json: 128 experts, 8 per token) at 16 sequences on 8 x H100, bf16,
    # memory-bound. Independent routing touches 128 x (1 - (120/128)^16) = 82.43 experts; with
    # the batch worth 16^0.8 = 9.190 draws, 128 x (1 - (120/128)^9.190) = 57.26 (hand
    # calculation). The expert bytes read fall by that ratio; at one token both touch exactly 8.
    calibration({"global": {"moe_efficiency": 1.0}})
    r1 = _replica("qwen3-235b-a22b", "bf16")
    assert float(r1.routing_exp[0]) == profiles.DEFAULT_ROUTING_DRAW_EXPONENT == 1.0
    full = decode_step(r1, 16.0, 1024.0)
    calibration({"global": {"moe_efficiency": 1.0, "routing_draw_exponent": 0.8}})
    r = _replica("qwen3-235b-a22b", "bf16")
    assert float(r.routing_exp[0]) == 0.8
    fewer = decode_step(r, 16.0, 1024.0)
    expert_bytes = float(r.expert_weight_bytes[0])
    saved = (82.43 - 57.26) / 128 * expert_bytes / float(r.hbm_bw[0])
    assert float((full.memory - fewer.memory)[0]) == pytest.approx(saved, rel=1e-3)
    one_a = decode_step(r1, 1.0, 1024.0).total
    one_b = decode_step(r, 1.0, 1024.0).total
    assert float(one_a[0]) == float(one_b[0])

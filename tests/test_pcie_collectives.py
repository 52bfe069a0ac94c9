"""All-reduces over PCIe inside an engine (issue 37): the link sets their rate, not the kernels.

The in-engine collective efficiency (``profiles.collective_efficiency``, fitted per fabric on
NVLink and on Infinity Fabric rows, ~0.6) slows the copy kernels that move the data; over PCIe
the link is ~20 x slower than those kernels, so the all-reduce takes its nccl-tests time.
Applied to PCIe, it had put 8 x L40S TP 4/8 offline throughput at 0.67 x of measured.
"""

from __future__ import annotations

import numpy as np
import pytest

from advisor.catalog import get_accelerator, get_interconnect, get_model
from advisor.perf.model.profiles import collective_efficiency
from advisor.perf.model.replica import ReplicaConfig, build_replicas
from advisor.perf.model.step import allreduce_time_s, decode_step
from advisor.physics import collectives as c


def _replica(gpu: str, tp: int = 8):
    cfg = ReplicaConfig(model=get_model("llama-3.1-70b"), gpu=get_accelerator(gpu), tp=tp,
                        weights="fp8", kv="fp8")  # fmt: skip
    return build_replicas([cfg])


def test_pcie_allreduce_in_an_engine_takes_its_nccl_tests_time():
    # 8 x L40S on PCIe Gen4 x16 (datasheet: 31.5 GB/s per direction; ring at the fitted 0.4444 of
    # it, 14.0 GB/s bus bandwidth, data/measurements.csv M1049), a decode step of 256 sequences of
    # Llama-3.1-70B (hidden 8192): 256 x 8192 x 2 B = 4 MiB per all-reduce. NCCL's Simple ring
    # (tuning.cc: base 8.4 us, 5.7 us per PCI step): 8.4 + 14 x 5.7 + 1.75 x 4194304 /
    # (0.4444 x 31.5e9) = 612.5 us; the LL protocol (half bandwidth) would take 1069 us.
    r = _replica("l40s")
    assert float(r.comm_eff[0]) == 1.0
    t = float(allreduce_time_s(r, np.array([4 * 2**20]))[0])
    assert t == pytest.approx(612.5e-6, rel=1e-3)
    # 160 of them per step (2 per layer, Megatron-LM), at the benchmark's time, no 1/0.65.
    step = decode_step(r, 256.0, 256.0)
    assert float(step.communication[0]) == pytest.approx(160 * t, rel=1e-6)
    # On NVLink the fitted in-engine efficiency still applies.
    h100 = _replica("h100-sxm")
    assert float(h100.comm_eff[0]) == pytest.approx(
        collective_efficiency(get_interconnect("nvlink4")).value
    )
    assert c.kernel_bound(get_interconnect("nvlink4")) and c.kernel_bound(get_interconnect("xgmi"))
    assert not c.kernel_bound(get_interconnect("pcie5"))


def test_l40s_tp8_offline_throughput_against_the_published_row():
    # TensorRT-LLM perf overview (v0.17 tables, docs/source/performance/perf-overview.md), row
    # M0116: Llama-3.1-70B FP8 on 8 x L40S (PCIe), 128/128 tokens, offline: 1464.03 output tok/s.
    # At these batches the step is mostly all-reduce over PCIe (above: ~0.6 ms each, 160 per
    # step, against ~20 ms of weights and KV reads), so throughput scales with the all-reduce's
    # speed: the NVLink-fitted 0.65 made the prediction 0.61 x of measured (-39%); at the
    # benchmark's speed it must come within 15%.
    from advisor.perf.validation.measurements import parse_row
    from advisor.perf.validation.validate import predict_cases

    row = dict(id="M0116", source="test", engine="TensorRT-LLM 0.17 (trtllm-bench, TRT engine)",
               model="Llama-3.1-70B", gpu="L40S", num_gpus="8", tp="8", pp="1",
               precision_weights="FP8", precision_kv="FP8", isl="128", osl="128",
               batch_or_concurrency="max (offline; all requests queued, infinite rate)",
               metric="throughput_tok_s_total", value="1464.03",
               unit="output tok/s (all GPUs)", notes="")  # fmt: skip
    case = parse_row(row)
    pred = float(predict_cases([case])[0])
    assert pred / 1464.03 == pytest.approx(1.0, abs=0.15)

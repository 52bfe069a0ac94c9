"""The deployment space a scenario's hardware allows: replica shapes x data-parallel copies.

A *replica shape* is (accelerator, TP, PP, weight dtype, KV dtype, speculative on/off); its step
times are computed once. A *candidate* is a shape with a number of data-parallel replicas DP; all
(shape, DP) pairs are evaluated together as arrays (evaluate.py).

Enumeration rules (documented choices):
- TP: powers of two up to ``min(options.max_tp, total GPUs)``; TP above the GPUs per node (or the
  accelerator's scale-up domain) crosses the inter-node link (``tp_link_for``).
- PP: powers of two up to ``min(options.max_pp, layers)`` with TP x PP <= total GPUs.
- DP: every count from 1 to floor(total GPUs / (TP x PP)) (fewer replicas are cheaper, more are
  faster; the search decides).
- Weight x KV dtype: the product of the allowed lists (fp8 weights on a GPU without fp8 tensor
  cores run weight-only; the performance model handles it).
- Speculative decoding: off, and on when ``options.speculative`` (draft at the target's TP).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.catalog import accelerators, interconnects
from advisor.perf.replica import ReplicaConfig
from advisor.scenario import Scenario


@dataclass(frozen=True)
class Shape:
    """One replica shape (before DP)."""

    gpu: str
    tp: int
    pp: int
    weights: str
    kv: str
    spec: bool

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


def powers_of_two_upto(limit: int) -> list[int]:
    """1, 2, 4, ... <= limit.

    >>> powers_of_two_upto(12)
    [1, 2, 4, 8]
    """
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def shapes(scenario: Scenario) -> list[Shape]:
    """Every replica shape the hardware and options allow (memory not yet checked)."""
    hw, opt = scenario.hardware, scenario.options
    total = hw.total_gpus
    layers = scenario.model_spec().num_hidden_layers
    specs = [False, True] if opt.speculative and opt.draft_model else [False]
    out = []
    for gpu in hw.gpus:
        for tp in powers_of_two_upto(min(opt.max_tp, total)):
            for pp in powers_of_two_upto(min(opt.max_pp, layers, total // tp)):
                for w in opt.weight_dtypes:
                    for kv in opt.kv_dtypes:
                        for sp in specs:
                            out.append(Shape(gpu, tp, pp, w, kv, sp))
    return out


def replica_config(scenario: Scenario, s: Shape, *, model=None, tp: int | None = None,
                   pp: int | None = None, weights: str | None = None) -> ReplicaConfig:  # fmt: skip
    """The performance model's ReplicaConfig of a shape (or of its draft model)."""
    hw = scenario.hardware
    links = interconnects()
    return ReplicaConfig(
        model=model or scenario.model_spec(),
        gpu=accelerators()[s.gpu],
        tp=tp or s.tp,
        pp=pp or s.pp,
        weights=weights or s.weights,
        kv=s.kv,
        engine=scenario.options.engine,
        intra_link=links[hw.intra_link] if hw.intra_link else None,
        inter_link=links[hw.inter_link],
        gpus_per_node=hw.gpus_per_node,
    )


def dp_pairs(gpus_per_replica: np.ndarray, total_gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """All (shape index, DP) pairs with DP x gpus <= total, as two int arrays.

    >>> idx, dp = dp_pairs(np.array([1, 4]), 4)
    >>> idx.tolist(), dp.tolist()
    ([0, 0, 0, 0, 1], [1, 2, 3, 4, 1])
    """
    max_dp = np.maximum(total_gpus // np.maximum(gpus_per_replica, 1), 0).astype(int)
    idx = np.repeat(np.arange(gpus_per_replica.size), max_dp)
    starts = np.cumsum(max_dp) - max_dp
    dp = np.arange(idx.size) - np.repeat(starts, max_dp) + 1
    return idx, dp

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
from advisor.physics.memory import tp_head_split
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
    model = scenario.model_spec()
    layers = model.num_hidden_layers
    specs = [False, True] if opt.speculative and opt.draft_model else [False]
    out = []
    for gpu in hw.gpus:
        for tp in powers_of_two_upto(min(opt.max_tp, total)):
            if tp_head_split(model, tp)[0]:  # an engine refuses this TP at start-up
                continue
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


#: Every replica count up to this, then a geometric grid: on a huge cluster (1,024 nodes x 72
#: GPUs) trying every DP would be tens of millions of candidates; latency only improves with
#: more replicas, so the cheapest count meeting the SLA is found within 10% above 64.
DP_DENSE_UP_TO = 64
DP_GROWTH = 1.1


def dp_values(total_gpus: int) -> np.ndarray:
    """Replica counts tried: 1..64, then x1.1 steps up to ``total_gpus``.

    >>> dp_values(5).tolist()
    [1, 2, 3, 4, 5]
    >>> v = dp_values(73_728)
    >>> int(v.size), int(v[63]), int(v[64]), int(v[-1])
    (138, 64, 70, 73728)
    """
    dense = np.arange(1, min(total_gpus, DP_DENSE_UP_TO) + 1)
    if total_gpus <= DP_DENSE_UP_TO:
        return dense
    n = int(np.ceil(np.log(total_gpus / DP_DENSE_UP_TO) / np.log(DP_GROWTH)))
    grid = np.unique(np.round(DP_DENSE_UP_TO * DP_GROWTH ** np.arange(1, n + 1)).astype(int))
    grid = grid[(grid > DP_DENSE_UP_TO) & (grid < total_gpus)]
    return np.concatenate([dense, grid, [total_gpus]])


def dp_pairs(gpus_per_replica: np.ndarray, total_gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """(shape index, DP) pairs with DP x gpus <= total, DP from ``dp_values``, as two int arrays.

    >>> idx, dp = dp_pairs(np.array([1, 4]), 4)
    >>> idx.tolist(), dp.tolist()
    ([0, 0, 0, 0, 1], [1, 2, 3, 4, 1])
    """
    max_dp = np.maximum(total_gpus // np.maximum(gpus_per_replica, 1), 0).astype(int)
    values = dp_values(max(int(total_gpus), 1))
    fits = values[None, :] <= max_dp[:, None]
    idx, col = np.nonzero(fits)
    return idx, values[col]

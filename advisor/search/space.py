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
- Speculative decoding: off, and on when ``options.speculative`` (draft at the target's TP;
  not at PP > 1 with a separate draft model on TensorRT-LLM, ``draft_pipeline_blocker``).
- Left out for the scenario's engine: a block-FP8 checkpoint's experts split into slices that
  are not whole blocks (SGLang; ``block_quantized_moe_tp_blocker``).
- MoE layouts (``layouts``): for a mixture-of-experts model at TP >= 2 and PP = 1 (where the
  engines publish them), besides plain TP, expert
  parallelism over the TP GPUs (EP = TP, when EP divides the expert count) and attention data
  parallel over them (DP-attention = TP), alone and together ("DEP"). A replica wider than a
  node runs them across nodes (wide EP: the all-to-alls cross the inter-node link, as
  ``tp_link_for`` says). Attention DP keeps every head on one GPU, so the head-count limit on
  TP does not apply to it. Engines: vLLM (``--enable-expert-parallel``; attention DP as
  ``--data-parallel-size`` ranks of TP 1 sharing the MoE layers), SGLang
  (``--enable-dp-attention --dp-size``, ``--ep-size``), TensorRT-LLM PyTorch backend
  (``enable_attention_dp``, ``moe_expert_parallel_size``); advisor/deploy/engines.py writes
  them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.catalog import accelerators, interconnects
from advisor.catalog.drafts import MTP, has_own_head, tokenizer_problem
from advisor.perf.model.replica import ReplicaConfig
from advisor.physics.engine_limits import block_quantized_moe_tp_blocker, draft_pipeline_blocker
from advisor.physics.memory import expert_parallel_blocker, moe_spread_blocker, tp_head_split
from advisor.scenario import Scenario
from advisor.search.deployment_spec import layout_text


@dataclass(frozen=True)
class Shape:
    """One replica shape (before DP)."""

    gpu: str
    tp: int
    pp: int
    weights: str
    kv: str
    spec: bool
    #: MoE expert parallelism over the TP GPUs (EP = TP).
    ep: bool = False
    #: MoE attention data parallel over the TP GPUs (DP-attention = TP).
    dpa: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def layout(self) -> str:
        """The replica's parallel layout in words, e.g. "TP=8, EP=8, attention DP=8"."""
        return layout_text(self.tp, self.ep, self.dpa)


#: Plain TP: no expert parallelism, no attention data parallel.
PLAIN = (False, False)


def layouts(model, tp: int) -> list[tuple[bool, bool]]:
    """(EP, attention DP) pairs a replica of ``model`` at ``tp`` may run: plain TP (if the heads
    split over ``tp``), and for an MoE model EP (if ``tp`` divides the experts), attention DP,
    and both.

    >>> from advisor.catalog import get_model
    >>> layouts(get_model("deepseek-v3"), 8)
    [(False, False), (True, False), (False, True), (True, True)]
    >>> layouts(get_model("mixtral-8x7b"), 16)  # 8 experts: no EP; 32 heads: TP 16 splits them
    [(False, False), (False, True)]
    >>> layouts(get_model("llama-3.1-70b"), 8)
    [(False, False)]
    """
    heads_ok = tp_head_split(model, tp)[0] is None
    out = [(False, False)] if heads_ok else []
    if moe_spread_blocker(model, tp) is not None:
        return out
    ep_ok = expert_parallel_blocker(model, tp) is None
    if ep_ok and heads_ok:
        out.append((True, False))
    out.append((False, True))
    if ep_ok:
        out.append((True, True))
    return out


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


def scenario_draft(scenario: Scenario) -> tuple[str | None, str | None]:
    """(the draft the scenario's speculative decoding runs, or None; why none): the chosen
    ``options.draft_model`` if it shares the target's tokenizer, else the target's default
    (its own MTP head, else the smallest catalog model with its tokenizer).

    >>> from advisor.scenario import Options
    >>> scenario_draft(Scenario(model="deepseek-r1"))
    ('mtp', None)
    >>> scenario_draft(Scenario(model="qwen3-235b-a22b"))
    ('qwen3-8b', None)
    >>> scenario_draft(Scenario(model="qwen3-235b-a22b", options=Options(draft_model="llama-3.2-1b")))[1][:60]
    'draft llama-3.2-1b uses another tokenizer than qwen3-235b-a2'
    """
    from advisor.catalog import models
    from advisor.perf.model.speculative_sweep import default_draft

    model = scenario.model_spec()
    chosen = scenario.options.draft_model
    if chosen is None:
        d = default_draft(model)
        if d is None:
            return None, (f"no draft for {model.id}: it has no MTP head of its own and no "
                          "smaller catalog model shares its tokenizer")  # fmt: skip
        return d, None
    if chosen == MTP:
        return (MTP, None) if has_own_head(model) else (None, f"{model.id} has no MTP head")
    why = tokenizer_problem(model, models()[chosen])
    return (None, why) if why else (chosen, None)


def search_weights(scenario: Scenario) -> list[str]:
    """The weight dtypes the search tries: a model released quantized in its released precision
    only (``options.released_weights``), else ``options.weight_dtypes``.

    >>> from advisor.scenario import Options
    >>> search_weights(Scenario(model="gpt-oss-120b")), search_weights(Scenario(model="deepseek-r1"))
    (['mxfp4'], ['fp8'])
    >>> search_weights(Scenario(model="gpt-oss-120b", options=Options(released_weights=False)))
    ['fp16', 'fp8', 'int8', 'int4']
    >>> search_weights(Scenario(model="llama-3.1-70b"))
    ['fp16', 'fp8', 'int8', 'int4']
    """
    o = scenario.options
    released = scenario.model_spec().released_weights
    return [released] if o.released_weights and released else list(o.weight_dtypes)


def search_weights_text(scenario: Scenario) -> str:
    """The weight dtypes the search tries, the model's released precision marked: what the
    Scenario page, Compare and the PDF say (issue 38: the Scenario page said "weights fp16,
    fp8, int8, int4" for gpt-oss-120b, searched in its released mxfp4 only).

    >>> search_weights_text(Scenario(model="gpt-oss-120b"))
    'mxfp4 (released)'
    """
    released = scenario.model_spec().released_weights
    return ", ".join(w + (" (released)" if w == released else "") for w in search_weights(scenario))


def shapes(scenario: Scenario) -> list[Shape]:
    """Every replica shape the hardware and options allow (memory not yet checked)."""
    hw, opt = scenario.hardware, scenario.options
    total = hw.total_gpus
    model = scenario.model_spec()
    layers = model.num_hidden_layers
    draft = scenario_draft(scenario)[0] if opt.speculative else None
    out = []
    weights = search_weights(scenario)
    # an engine refuses a TP that does not split the heads, unless attention is not split
    by_tp = {tp: layouts(model, tp) for tp in powers_of_two_upto(min(opt.max_tp, total))}
    for gpu in hw.gpus:
        acc = accelerators()[gpu]
        for tp, lays in by_tp.items():
            for pp in powers_of_two_upto(min(opt.max_pp, layers, total // tp)):
                # layouts the scenario's engine refuses at start (physics/engine_limits.py)
                specs = [False] + ([True] if draft and not draft_pipeline_blocker(
                    opt.engine, draft, tp, pp) else [])  # fmt: skip
                for w in weights:
                    for kv in opt.kv_dtypes:
                        for ep, dpa in lays if pp == 1 else [x for x in lays if x == PLAIN]:
                            if block_quantized_moe_tp_blocker(model, acc, tp, ep, w, opt.engine):
                                continue
                            for sp in specs:
                                out.append(Shape(gpu, tp, pp, w, kv, sp, ep, dpa))
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
        ep=s.ep and model is None,  # a draft model runs plain TP
        dp_attention=s.dpa and model is None,
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
    grid = np.round(DP_DENSE_UP_TO * DP_GROWTH ** np.arange(1, n + 1)).astype(int)
    grid = np.unique(grid, return_index=True)[0]  # plain np.unique imports numpy.ma (30-100 ms)
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

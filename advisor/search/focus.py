"""``evaluate_spec(scenario, spec) -> Focus``: one hand-set deployment through the search's code.

The deployment in focus on every page is either one the search returned (it carries its
``DeploymentSpec``) or one the user set by hand. A hand-set one is evaluated by the search's
own steps restricted to it, not by a second model: the shape table (``evaluate.build_shapes``'
memory rejections and step tables), latency under load (``evaluate_aggregated`` or
``evaluate_disaggregated`` on the given pools), the candidate table, SLA check and Deployment of
``recommend.py``. The same spec as the search's winner therefore gives the same percentiles,
cost and ``meets_sla``. A deployment that does not fit is a result with reasons, not an error.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from pydantic import BaseModel, ConfigDict

from advisor.catalog.drafts import draft_spec
from advisor.perf.model.estimate import EstimateInput
from advisor.perf.model.sweeps import users_load
from advisor.physics.memory import expert_parallel_blocker, moe_spread_blocker, tp_head_split
from advisor.scenario import Scenario
from advisor.search.deployment_spec import DeploymentSpec
from advisor.search.disaggregated import Disagg, evaluate_disaggregated
from advisor.search.evaluate import _build, evaluate_aggregated
from advisor.search.recommend import _deployment, _sla, _Table, misses
from advisor.search.results import Deployment, decode_batch_seqs
from advisor.search.space import Shape, replica_config, scenario_draft


class Focus(BaseModel):
    """A deployment evaluated for a scenario: its behaviour, or why it cannot run."""

    model_config = ConfigDict(extra="forbid")
    spec: DeploymentSpec
    fits: bool
    #: Why it cannot run at all (memory, GPUs, context); empty when it fits.
    reasons: list[str] = []
    deployment: Deployment | None = None
    #: The SLA targets it misses (or "unstable ..."); empty when it meets the SLA.
    fails: list[str] = []

    @property
    def meets_sla(self) -> bool:
        return self.deployment is not None and self.deployment.meets_sla


def _precheck(sc: Scenario, spec: DeploymentSpec) -> list[str]:
    hw, model = sc.hardware, sc.model_spec()
    out = []
    if spec.gpu not in hw.gpus:
        out.append(f"{spec.gpu} is not one of the scenario's accelerators ({', '.join(hw.gpus)})")
    if spec.gpus > hw.total_gpus:
        out.append(
            f"needs {spec.gpus} GPUs; the cluster has {hw.total_gpus} ({hw.nodes} node(s) × "
            f"{hw.gpus_per_node})"
        )
    for pool, tp, ep, dpa in (("", spec.tp, spec.ep, spec.dpa),
                              ("prefill pool: ", spec.prefill_tp, spec.prefill_ep,
                               spec.prefill_dpa)):  # fmt: skip
        if not tp:
            continue
        out += [pool + why for why in layout_problems(model, tp, ep > 1, dpa > 1)]
    draft, why = scenario_draft(sc)
    if spec.speculative and draft is None:
        out.append(f"speculative decoding needs a draft: {why}")
    context = sc.workload.isl_tokens + sc.workload.osl_tokens
    if context > model.max_position_embeddings:
        out.append(
            f"a request of {context:,} tokens exceeds {model.name}'s maximum context of "
            f"{model.max_position_embeddings:,} tokens"
        )
    return out


def layout_problems(model, tp: int, ep: bool, dpa: bool) -> list[str]:
    """Why a replica of ``model`` at ``tp`` cannot run this layout (an engine would refuse it):
    heads TP cannot split (unless attention is data parallel), EP that does not give each GPU
    whole experts, attention DP on a dense model.

    >>> from advisor.catalog import get_model
    >>> layout_problems(get_model("mixtral-8x7b"), 16, True, False)
    ['expert parallelism: EP=16 > 8 experts: a GPU holds whole experts (allowed EP: 2, 4, 8)']
    """
    out = []
    why = None if dpa else tp_head_split(model, tp)[0]
    if why:
        out.append(why)
    why = expert_parallel_blocker(model, tp) if ep else None
    if why:
        out.append(f"expert parallelism: {why}")
    why = moe_spread_blocker(model, tp) if dpa else None
    if why:
        out.append(f"attention data parallel: {why}")
    return out


def spec_shapes(spec: DeploymentSpec) -> list[tuple[str, Shape, int]]:
    """(role, replica shape, replicas) of each pool of ``spec``: "prefill" then "decode", or
    one "server" pool."""
    if spec.disaggregated:
        return [
            ("prefill", Shape(spec.gpu, spec.prefill_tp, 1, spec.weights, spec.kv, False,
                              spec.prefill_ep > 1, spec.prefill_dpa > 1), spec.prefill_dp),
            ("decode", Shape(spec.gpu, spec.tp, 1, spec.weights, spec.kv, False, spec.ep > 1,
                             spec.dpa > 1), spec.dp),
        ]  # fmt: skip
    shape = Shape(spec.gpu, spec.tp, spec.pp, spec.weights, spec.kv, spec.speculative,
                  spec.ep > 1, spec.dpa > 1)  # fmt: skip
    return [("server", shape, spec.dp)]


def evaluate_spec(scenario: Scenario, spec: DeploymentSpec) -> Focus:
    """Evaluate ``spec`` at the scenario's load, SLA and cost (see the module docstring)."""
    reasons = _precheck(scenario, spec)
    if reasons:
        return Focus(spec=spec, fits=False, reasons=reasons)
    shapes = [shape for _, shape, _ in spec_shapes(spec)]
    uniq = list(dict.fromkeys(shapes))
    cfg_row = np.array([uniq.index(s) for s in shapes])
    # the client profile's twin row at the deployment's own DP (a pool of a disaggregated one
    # is outside any profile's range: search/profile_scope.py)
    dps = [] if spec.disaggregated else [spec.dp]
    cfgs = [replica_config(scenario, s) for s in uniq]
    st, rejected = _build(scenario, shapes, cfgs, cfg_row, dps)
    if rejected:
        return Focus(spec=spec, fits=False, reasons=list(rejected))
    if spec.disaggregated:
        # The candidate table needs an aggregated part (the queueing arrays take no empty
        # input): one replica of the decode shape, ahead of the pool pair (the last row).
        ev = evaluate_aggregated(scenario, st, (np.array([1]), np.array([1])))
        dg = evaluate_disaggregated(scenario, st, (np.array([0, 1]), np.array([spec.prefill_dp, spec.dp])))  # fmt: skip
        j = _pair(dg, spec)
        dg = Disagg(**{f.name: getattr(dg, f.name)[[j]] for f in fields(Disagg)})
    else:
        ev = evaluate_aggregated(scenario, st, (np.array([0]), np.array([spec.dp])))
        dg = None
    t = _Table(scenario, st, ev, dg)
    ratio, checks = _sla(scenario, t)
    i = t.n - 1
    d = _deployment(scenario, t, i, ratio, True)
    return Focus(
        spec=spec, fits=True, deployment=d,
        fails=[] if d.meets_sla else misses(scenario, checks, i, d),
    )  # fmt: skip


def _pair(dg: Disagg | None, spec: DeploymentSpec) -> int:
    """Index of the pair (prefill pool = shape row 0, decode pool = row 1) in ``dg``."""
    hit = (
        np.nonzero(
            (dg.pre_shape == 0)
            & (dg.pre_dp == spec.prefill_dp)
            & (dg.dec_shape == 1)
            & (dg.dec_dp == spec.dp)
        )[0]  # fmt: skip
        if dg is not None
        else np.zeros(0, int)
    )
    if hit.size == 0:  # _precheck bounds the GPUs, so the pair is always enumerated
        raise AssertionError(f"pool pair of {spec} not evaluated")
    return int(hit[0])


def estimate_input(scenario: Scenario, spec: DeploymentSpec, running_batch: float | None = None,
                   concurrency: int | None = None) -> EstimateInput:  # fmt: skip
    """The performance model's EstimateInput of ``spec`` (one replica's shape, its DP
    replicas) at the scenario's load (the Latency and Speculative pages' detail: breakdown,
    roofline, batch sweeps).

    Load: ``concurrency`` if given (requests in flight over the whole deployment, set on a
    page; ``EstimateInput.concurrency`` spreads them over the DP replicas); an aggregated
    deployment under an arrival rate gets ``qps`` over its DP replicas (steady-state queueing);
    concurrent users with their think time put the closed-loop request rate on them
    (``perf.model.sweeps.users_load``: X = N / (Z + E2E(X))). A decode-pool replica of a disaggregated
    deployment, and a speculative one (the estimate models speculation at a fixed batch), run
    at ``running_batch`` (the search's mean running batch per replica), rounded up, on each
    replica.
    Disaggregated: the decode pool's replica (TP, PP = 1, its DP).
    """

    hw, w, o = scenario.hardware, scenario.workload, scenario.options
    load: dict = {"dp": spec.dp}
    fixed_batch = spec.disaggregated or spec.speculative
    if concurrency is not None:
        load["concurrency"] = int(concurrency)
    elif fixed_batch and running_batch is not None:
        load["concurrency"] = decode_batch_seqs(running_batch) * spec.dp
    elif w.concurrent_users is not None:
        load["concurrency"] = w.concurrent_users
    elif fixed_batch:
        load["concurrency"] = spec.dp
    else:
        load.update(qps=float(w.arrival_rate_per_s), concurrency=None)
    draft = scenario_draft(scenario)[0]
    if spec.speculative and draft:
        load.update(spec_draft=draft_spec(scenario.model_spec(), draft), spec_tokens=o.spec_tokens,
                    spec_acceptance=o.spec_acceptance)  # fmt: skip
    inp = EstimateInput(
        tp=spec.tp, pp=spec.pp, weights=spec.weights, kv=spec.kv, isl=w.isl_tokens,
        osl=w.osl_tokens, link=hw.intra_link, inter_link=hw.inter_link,
        gpus_per_node=hw.gpus_per_node, engine=o.engine, **load,
        prefill_elsewhere=spec.disaggregated, ep=spec.ep > 1, dp_attention=spec.dpa > 1,
    )  # fmt: skip
    if concurrency is None and not fixed_batch and w.concurrent_users is not None:
        # users with think time: the closed-loop request rate, so percentiles as under a rate
        inp = users_load(scenario, inp, spec.gpu)
    return inp

"""Where a client profile prices the search's candidates, and whether it priced the answer.

A profile applies only inside the deployment and load it was checked on
(advisor/perf/model/profile_range.py), decided for every replica by
advisor/perf/model/replica.applied. The search's shapes are built once for all their DPs, and a
shape's load per replica is the scenario's load over its DP: each shape is built without a
workload (the shipped calibration), and a shape of the profile's deployment gets a twin built
with it, which prices the DPs whose load lies inside the range (``profile_twins``). Each
deployment then says whether the profile priced it (``Deployment.client_profile_fallback``,
from ``fallback_of``); the CLI (recommend, report: ``recommend.recommend_within``) and the app's
Recommendation page and PDF show the recommended one's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from advisor.perf.model.profile_range import NO_WORKLOAD, Work, work_of
from advisor.perf.model.replica import profile_problem

if TYPE_CHECKING:
    import numpy as np

    from advisor.perf.model.replica import ReplicaConfig
    from advisor.scenario import Scenario


def scenario_work(sc: Scenario, dp: int, disaggregated: bool = False) -> Work:
    """What each of ``dp`` replicas serves under the scenario's workload (a pool of a
    disaggregated deployment: ``profile_range.DISAGGREGATED``)."""
    w = sc.workload
    return work_of(w.isl_tokens, w.osl_tokens, w.arrival_rate_per_s, None, "continuous", dp,
                   w.concurrent_users, w.think_time_s, disaggregated)  # fmt: skip


def fallback_of(
    sc: Scenario, cfg: ReplicaConfig, dp: int, disaggregated: bool = False
) -> str | None:
    """Why the active client profile does not price the replica ``cfg`` at ``dp`` replicas, or
    None (it does, or no profile is active for its accelerator and engine)."""
    return profile_problem(replace(cfg, work=scenario_work(sc, dp, disaggregated)))


def profile_twins(sc: Scenario, shapes: list, cfgs: list, cfg_row: np.ndarray,
                  dps: list[int] | None = None):  # fmt: skip  # noqa: ANN201
    """(shapes, cfgs, cfg_row, twins) with a twin appended for each shape whose replica the
    active client profile prices at some of the DPs ``dps`` (None: every DP the GPUs allow):
    the twin's replica is built with the workload of the first such DP; ``twins`` maps the
    shape's row to (its twin's row, those DPs). Without a profile on the shapes' accelerators
    nothing is added (one ``profile_problem`` per replica)."""
    import numpy as np

    from advisor.search.space import dp_values

    total = sc.hardware.total_gpus
    twin_cfg: dict[int, tuple[int, frozenset[int]]] = {}
    for j, cfg in enumerate(list(cfgs)):
        if profile_problem(cfg) != NO_WORKLOAD:  # no profile here, or another deployment
            continue
        per = cfg.tp * cfg.pp
        cands = dp_values(total).tolist() if dps is None else dps
        ok = [int(d) for d in cands if d * per <= total and fallback_of(sc, cfg, d) is None]
        if ok:
            twin_cfg[j] = (len(cfgs), frozenset(ok))
            cfgs = [*cfgs, replace(cfg, work=scenario_work(sc, ok[0]))]
    if not twin_cfg:
        return shapes, cfgs, cfg_row, {}
    rows = [i for i in range(len(shapes)) if int(cfg_row[i]) in twin_cfg]
    twins = {i: (len(shapes) + k, twin_cfg[int(cfg_row[i])][1]) for k, i in enumerate(rows)}
    extra = np.array([twin_cfg[int(cfg_row[i])][0] for i in rows], dtype=int)
    return [*shapes, *(shapes[i] for i in rows)], cfgs, np.concatenate([cfg_row, extra]), twins

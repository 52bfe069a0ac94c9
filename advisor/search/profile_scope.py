"""Whether a client profile applies to a recommendation, and the search that keeps to it.

A profile applies only inside the deployment and load it was checked on
(advisor/perf/model/profile_range.py). The search ranks candidates with it where their replica
is inside its deployment (advisor/perf/model/replica.py); when the recommended deployment's load per replica, or
its lengths, lie outside, the whole search is run again with the shipped calibration, so the
answer rests on one calibration and says which. The CLI (recommend, report) and the app's
Recommendation page and PDF use these functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.perf.model.overlay import set_global
from advisor.perf.model.profile_range import load_of

if TYPE_CHECKING:
    from advisor.perf.calibration.client_profile import ProfileDoc
    from advisor.scenario import Scenario


def recommendation_fallback(doc: ProfileDoc, sc: Scenario, best: dict | None) -> str | None:
    """Why the profile does not apply to the recommended deployment (its deployment or its load
    per replica outside the profile's range), or None (also when it runs on another accelerator,
    which the profile never touched)."""
    if not isinstance(best, dict) or best.get("gpu") != doc.deployment.gpu:
        return None
    dom = doc.domain()
    w = sc.workload
    why = dom.deployment_problem(sc.model, best["tp"], best["pp"], best["weights"], best["kv"],
                                 int(best.get("ep") or 1) > 1,
                                 int(best.get("attention_dp") or 1) > 1)  # fmt: skip
    if why:
        return why
    if w.concurrent_users is not None and w.think_time_s > 0:
        return (f"{w.concurrent_users} users with {w.think_time_s:g} s think time (the profile's "
                "runs are benchmark loads without think time)")  # fmt: skip
    mode, load = load_of(w.arrival_rate_per_s, w.concurrent_users, "continuous", best["dp"])
    return dom.workload_problem(w.isl_tokens, w.osl_tokens, mode, load)


def recommend_within(sc: Scenario, profile: ProfileDoc | None):  # noqa: ANN201
    """(the recommendation, why the profile does not apply to it or None); a recommendation
    outside the profile's range is searched again with the shipped calibration alone (for the
    rest of this context: a CLI run)."""
    from advisor.search.recommend import recommend

    rec = recommend(sc)
    if profile is None:
        return rec, None
    fallback = recommendation_fallback(profile, sc, rec.model_dump(mode="json").get("best"))
    if fallback:
        set_global(profile.deployment.gpu, profile.deployment.engine, None)
        rec = recommend(sc)
    return rec, fallback

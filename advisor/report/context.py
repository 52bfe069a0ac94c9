"""What the report reads (the search, memoised per scenario; the validation, the calibration
file, the measurement sources, the article's claims) and what it carries from section to
section (:class:`Context`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from advisor.catalog.loader import measurement_rows
from advisor.report.facts import Deployment
from advisor.scenario import Scenario


@lru_cache(maxsize=64)
def _recommend_json(scenario_json: str) -> Any:
    from advisor.search.recommend import recommend

    return recommend(Scenario.model_validate_json(scenario_json))


def recommendation_for(scenario: Scenario) -> Any:
    """``recommend(scenario)``, memoised per scenario (sensitivity re-runs repeat across exports)."""
    return _recommend_json(scenario.model_dump_json())


def try_recommend(scenario: Scenario) -> tuple[Any, str | None]:
    """``recommend(scenario)`` if the search is installed; (None, why) otherwise."""
    try:
        import advisor.search.recommend  # noqa: F401
    except ImportError:
        return None, "the recommendation engine (advisor.search.recommend) is not available"
    return recommendation_for(scenario), None


@cache
def validation() -> dict:
    from advisor.perf.validation.validate import validation_report

    return validation_report()


@cache
def measurement_sources() -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in measurement_rows()}


def calibration_file() -> dict:
    from advisor.perf.model.profiles import _calibration as cal

    return cal()


def article_claims(scenario: Scenario, rec: Any) -> tuple[list[Any], str | None]:
    try:
        from advisor import article_check
    except ImportError:
        return [], "the article check (advisor.article_check) is not available in this version"
    fn = None
    for name in ("check", "check_claims", "claims", "article_claims", "run"):
        fn = getattr(article_check, name, None)
        if callable(fn):
            break
    if fn is None:
        return [], "advisor.article_check has no check function"
    try:
        return list(fn()), None
    except Exception as exc:  # noqa: BLE001 - a note, never a failed report
        return [], f"the article check failed: {type(exc).__name__}"


@dataclass
class Context:
    scenario: Scenario
    rec: Any
    rec_note: str | None
    best: Deployment | None
    alternatives: list[tuple[str, str]]
    missing_charts: list[tuple[str, str]] = field(default_factory=list)
    images: int = 0
    #: The compared scenarios (their sources are listed too); empty for a single scenario.
    compared: list[Scenario] = field(default_factory=list)
    #: How the app's deployment in focus was chosen when it is not the recommendation.
    focus_note: str = ""
    #: The report describes that deployment (False: it cannot run; the recommendation follows).
    focused: bool = False
    #: The search's Deployment the report describes (the charts are drawn for it); when nothing
    #: meets the SLA and nothing is in focus, the closest near miss, which the summary names.
    described: Any = None

    @property
    def closest_miss(self) -> Any:
        """The near miss the charts draw for want of a recommendation (None if there is one)."""
        return self.described if self.best is None else None

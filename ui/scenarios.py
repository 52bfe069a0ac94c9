"""App-layer helpers for saved and example scenarios: the store, loading into the sidebar,
examples. Cached advisor calls live in ui.cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st
from pydantic import ValidationError

from advisor.examples import EXAMPLES
from advisor.scenario import Scenario, ScenarioError
from advisor.store import Store, StoreError
from ui.format import md_escape
from ui.state import UPLOAD_KEY, _seed
from ui.url import View, scenario_to_params

SS = st.session_state
ENGAGEMENT_KEY = "sc.engagement"


@dataclass(frozen=True)
class Choice:
    """A scenario the user can pick: its label, the scenario and its page-local settings."""

    label: str
    scenario: Scenario
    view: View


def open_store() -> tuple[Store | None, str | None]:
    """The store (path from the environment), or None and the message saying why not."""
    try:
        return Store(), None
    except StoreError as exc:
        return None, str(exc)


def view_from(doc: dict[str, Any] | None) -> View:
    """A View from saved settings; unknown or invalid keys are dropped (defaults kept)."""
    doc = doc or {}
    fields = {k: v for k, v in doc.items() if k in View.model_fields}
    try:
        return View(**fields)
    except ValidationError:
        return View()


def can_load_into_sidebar(scenario: Scenario) -> str | None:
    """None, or why the sidebar cannot show this scenario exactly."""
    if scenario.model_config_json is not None:
        return (
            f"its model {scenario.model!r} is an imported config.json; the sidebar takes a "
            "config.json through its uploader (upload the file there)"
        )
    return None


def load_into_sidebar(scenario: Scenario, view: View, label: str) -> None:
    """Button callback: put the scenario into the sidebar widgets and the URL.

    Runs as ``on_click`` (before the script), the only time widget values may be set.
    """
    why = can_load_into_sidebar(scenario)
    if why:
        SS["sc.flash"] = (
            "error",
            f"“{md_escape(label)}” cannot be loaded into the sidebar: {md_escape(why)}.",
        )
        return
    _seed(scenario, view)
    st.query_params.from_dict(scenario_to_params(scenario, view))
    note = ""
    if SS.get(UPLOAD_KEY) is not None:
        note = (
            " Remove the uploaded config.json in the sidebar: it takes precedence over the model."
        )
    SS["sc.flash"] = ("success", f"Loaded “{md_escape(label)}” into the sidebar.{note}")


def flash() -> None:
    """Show (once) the message a callback left."""
    msg = SS.pop("sc.flash", None)
    if msg:
        getattr(st, msg[0])(msg[1])


def examples() -> list[Choice]:
    return [Choice(ex.title, ex.scenario, View()) for ex in EXAMPLES.values()]


__all__ = [
    "Choice",
    "ScenarioError",
    "StoreError",
    "can_load_into_sidebar",
    "examples",
    "flash",
    "load_into_sidebar",
    "open_store",
    "view_from",
]

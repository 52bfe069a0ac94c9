"""The session's client profile (advisor/perf/calibration/client_profile.py): kept as its YAML text in the
session, applied at the start of every run (app.py) and named on every page while active."""

from __future__ import annotations

import contextvars

import streamlit as st

from advisor.perf.calibration.client_profile import (
    ProfileDoc,
    ProfileError,
    describe,
    parse_profile,
)
from advisor.perf.model.overlay import use_only
from ui.format import md_escape

SS = st.session_state
KEY = "client_profile.yaml"  # the profile's YAML text
NAME = "client_profile.name"  # the uploaded or written file's name, for messages


@st.cache_data(max_entries=32, show_spinner=False)
def _parse(text: str, name: str) -> tuple[ProfileDoc | None, str]:
    try:
        return parse_profile(text, name), ""
    except ProfileError as exc:
        return None, str(exc)


def session_profile() -> ProfileDoc | None:
    """The session's profile, or None (a profile that no longer validates is dropped, said once)."""
    text = SS.get(KEY)
    if not text:
        return None
    doc, err = _parse(text, SS.get(NAME, "profile.yaml"))
    if doc is None:
        SS.pop(KEY, None)
        st.sidebar.error(f"Client profile removed: {md_escape(err)}")
    return doc


def apply_session_profile() -> ProfileDoc | None:
    """Make the session's profile (or none) active for this run, and say so in the sidebar."""
    doc = session_profile()
    if doc is None:
        use_only(None, None, None)
        return None
    use_only(doc.deployment.gpu, doc.deployment.engine, doc.overlay())
    st.sidebar.info(active_text(doc), icon=":material/tune:")
    return doc


def active_text(doc: ProfileDoc) -> str:
    d = describe(doc)
    return (
        f"Client profile **{md_escape(d['name'])}** active: predictions for "
        f"{md_escape(d['gpu'])} with {md_escape(d['engine'])} use constants fitted to the "
        f"client's files (median error {_pct(d['median_ape_before_pct'])} shipped, "
        f"{_pct(d['loo_median_ape_pct'])} out of sample on {d['points']} measurements), over "
        f"{md_escape(d['range'])} only; elsewhere the shipped calibration."
    )


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v}%"


def pdf_kw(fallback: str | None = None) -> dict:
    """``client_profile`` for report_bytes_for_app when a profile is active; ``fallback``: why
    it did not price the deployment described (ui/cache.profile_fallback), said in the PDF."""
    doc = session_profile()
    if doc is None:
        return {}
    block = describe(doc)
    return {"client_profile": {**block, "applied": False, "fallback": fallback} if fallback
            else block}  # fmt: skip


def in_this_context(fn):  # noqa: ANN001, ANN201
    """``fn`` run later (a download button's callable) with this run's profile active."""
    snap = contextvars.copy_context()
    return lambda *a, **k: snap.copy().run(fn, *a, **k)

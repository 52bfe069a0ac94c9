"""Inference Architect: the Streamlit entry point (page config, scenario sidebar, navigation).

Run with ``make run``. Pages live in ui/pages/ and are listed once in ``ui.nav.PAGES``: add a
line there to add a page (file, title, URL path, icon). Not pages/: a folder of that name puts
Streamlit in its legacy multipage mode, where the first visit to a deep link such as /memory on a
fresh server runs the page without app.py (no sidebar, no st.navigation). The sidebar
(ui/state.py) is drawn on every run, so its values survive page switches; it is mirrored into
the URL after the page has run.
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Inference Architect", page_icon="🧮", layout="wide")

# Imported in full before any page runs. plotly (through narwhals) looks these up in sys.modules:
# a session building a chart while another session's first run was still importing pandas saw a
# half-initialised module ("partially initialized module 'pandas' has no attribute 'Series'",
# found with 20 concurrent sessions on a fresh server). Every run passes here first, and the
# import lock makes it wait until the import has finished.
import pandas  # noqa: E402, F401
import plotly.graph_objects  # noqa: E402, F401
import pyarrow  # noqa: E402, F401

from advisor.scenario import Scenario  # noqa: E402
from ui.client_profile import apply_session_profile  # noqa: E402
from ui.format import md_escape  # noqa: E402
from ui.nav import PAGES  # noqa: E402
from ui.state import show_url_warnings, sidebar, sync_url  # noqa: E402

# Streamlit serves the default page at "/" only (the frontend knows it by the empty pathname), so
# a fresh tab on /recommendation showed "Page not found". The first page is therefore listed
# as an ordinary page with its own URL, and "/" runs a hidden twin of it (same file, URL "start").
_first_path, _first_title, _first_url, _first_icon = PAGES[0]
pg = st.navigation(
    [
        st.Page(
            _first_path,
            title=_first_title,
            url_path="start",
            icon=_first_icon,
            default=True,
            visibility="hidden",
        )  # fmt: skip
    ]
    + [st.Page(path, title=title, url_path=url, icon=icon) for path, title, url, icon in PAGES]
)
scenario, _ = sidebar()
if scenario.name != Scenario.model_fields["name"].default:
    st.caption(f"Scenario “{md_escape(scenario.name)}”")
apply_session_profile()  # the session's client profile, or none, for this run (ui/client_profile.py)
show_url_warnings()
pg.run()
sync_url()

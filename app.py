"""Inference Architect: the Streamlit entry point (page config, scenario sidebar, navigation).

Run with ``make run``. Pages live in app_pages/ and are listed once in ``PAGES``: add a line
there to add a page (file, title, URL path, icon). Not pages/: a folder of that name puts
Streamlit in its legacy multipage mode, where the first visit to a deep link such as /memory on a
fresh server runs the page without app.py (no sidebar, no st.navigation). The sidebar
(app_state.py) is drawn on every run, so its values survive page switches; it is mirrored into
the URL after the page has run.
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Inference Architect", page_icon="🧮", layout="wide")

from app_state import show_url_warnings, sidebar, sync_url  # noqa: E402

#: (file, title, url path, icon). The first is the default page.
PAGES: list[tuple[str, str, str, str]] = [
    ("app_pages/recommendation.py", "Recommendation", "recommendation", ":material/recommend:"),
    ("app_pages/overview.py", "Scenario", "scenario", ":material/description:"),
    ("app_pages/memory.py", "Memory and KV budget", "memory", ":material/memory:"),
    ("app_pages/interconnect.py", "Interconnect", "interconnect", ":material/lan:"),
    ("app_pages/scenarios.py", "Scenarios", "scenarios", ":material/save:"),
    ("app_pages/compare.py", "Compare", "compare", ":material/compare:"),
    ("app_pages/latency.py", "Latency", "latency", ":material/timer:"),
    ("app_pages/speculative.py", "Speculative decoding", "speculative", ":material/fast_forward:"),
    ("app_pages/trust.py", "Trust", "trust", ":material/verified:"),
    ("app_pages/article.py", "Article check", "article", ":material/fact_check:"),
]

pg = st.navigation(
    [
        st.Page(path, title=title, url_path=url, icon=icon, default=i == 0)
        for i, (path, title, url, icon) in enumerate(PAGES)
    ]
)
sidebar()
show_url_warnings()
pg.run()
sync_url()

"""The app's pages, listed once: app.py builds st.navigation from this; tests and benches read it.

No streamlit import here, so tests can enumerate the pages without running the app.
"""

from __future__ import annotations

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

"""The app's pages, listed once: app.py builds st.navigation from this; tests and benches read it.

No streamlit import here, so tests can enumerate the pages without running the app.
"""

from __future__ import annotations

#: (file, title, url path, icon). The first is the default page.
PAGES: list[tuple[str, str, str, str]] = [
    ("ui/pages/recommendation.py", "Recommendation", "recommendation", ":material/recommend:"),
    ("ui/pages/overview.py", "Scenario", "scenario", ":material/description:"),
    ("ui/pages/memory.py", "Memory and KV budget", "memory", ":material/memory:"),
    ("ui/pages/interconnect.py", "Interconnect", "interconnect", ":material/lan:"),
    ("ui/pages/scenarios.py", "Scenarios", "scenarios", ":material/save:"),
    ("ui/pages/compare.py", "Compare", "compare", ":material/compare:"),
    ("ui/pages/latency.py", "Latency", "latency", ":material/timer:"),
    ("ui/pages/speculative.py", "Speculative decoding", "speculative", ":material/fast_forward:"),
    ("ui/pages/trust.py", "Trust", "trust", ":material/verified:"),
    ("ui/pages/calibrate.py", "Calibrate to your cluster", "calibrate", ":material/tune:"),
    ("ui/pages/article.py", "Article check", "article", ":material/fact_check:"),
    ("ui/pages/deploy.py", "Deploy", "deploy", ":material/rocket_launch:"),
]

"""Figure builders: pure functions from advisor results to plotly Figures.

Every builder applies the one template in ``theme.py`` explicitly and sets a title (the app's
browser tests wait on ``layout.title.text``). Nothing here imports streamlit: the PDF report
reuses the same figures.
"""

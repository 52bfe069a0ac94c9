"""Recommendation search: enumerate deployments, evaluate them under load, rank, explain.

Entry point: :func:`advisor.search.recommend.recommend` (``recommend(scenario) -> Recommendation``).
"""

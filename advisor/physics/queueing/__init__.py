"""Queueing: latency under load of a batching LLM server, and the closed loop of users that
offers it (``model``: the analytic approximation; ``closed_loop``: users with think time)."""

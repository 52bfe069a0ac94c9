"""Queueing: latency under load of a batching LLM server, and the closed loop of users that
offers it. ``model.latency_under_load`` puts the steps together: its inputs (``service``) and
outputs (``results``), the running batch (``running_batch``), the waits (``waits``, and
``static_batch`` for static batches), the spread and percentiles (``tails``, fitted with
``distributions``), the inter-token gap (``inter_token``), on the textbook formulas of
``classic_queues``; ``closed_loop`` holds users with think time."""

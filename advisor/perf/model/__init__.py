"""The model of one deployment: step times (``step``) of replicas as arrays (``replica``), serving
predictions (``predict``, ``closed_loop``), the queueing model's view of a replica (``service``),
the estimate (``estimate``), sweeps for the pages (``sweeps``, ``speculative_sweep``), and what
they read: the fitted efficiency constants (``profiles``), a client's overlay on them
(``overlay``) and the range of conditions it was checked on (``profile_range``), and the
prediction intervals from the held-out errors (``intervals``)."""

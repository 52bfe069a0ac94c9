"""The model against measurements: published rows parsed into cases (``measurements``), predicted
and summarised per family (``validate``), joined with their sources for the Trust page
(``trust``), the all-reduce rows and the collectives model's error on them (``collectives``), the
percentile and load-level checks (``percentiles``, ``load_rows``), and the discrete-event
simulation the queueing formulas are checked against (``queue_sim``)."""

"""Fitting the model's constants: the shipped calibration to the published measurements
(``calibrate``, written to data/calibration.yaml), the collectives' constants (``collective_fit``),
the same fits without one source (engine, accelerator family) at a time to measure the error on
rows never fitted (``crossval``, written to data/crossval*.yaml and data/crossval_ranges.json),
and a client's profile to the client's own benchmark files (``client_profile``), accepted only
if it predicts the client's runs better when each is held out (``client_holdout``)."""

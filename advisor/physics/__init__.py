"""Physics: one formula, one function (params, memory, collectives, roofline, speculative, ...)."""

"""Inference Architect: plan LLM serving on your own hardware.

Layers, bottom up (imports point down only):
catalog (specs, YAML catalogs) -> physics (params, memory, collectives, roofline, speculative,
queueing) -> estimate (combines the physics for one deployment) -> search (recommendation, cost,
decision matrix) -> charts, report -> cli.
"""

__version__ = "0.1.0"

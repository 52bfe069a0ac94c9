"""From a deployment to running servers: launch commands, Compose and Kubernetes files.

``bundle.deploy_bundle(scenario, spec, engine)`` turns the deployment in focus into the
engine's launch commands (vLLM, SGLang, TensorRT-LLM), with the memory fraction, sequence limit
and context length the search's memory budget assumed (``settings.py``), the published
checkpoint or how to quantize (``checkpoints.py``), and the Docker Compose and Kubernetes files
(``manifests.py``), placed on hosts by ``layout.py`` and wired by ``wiring.py`` (multi-node,
disaggregated), started by ``script.py``'s launch.sh, with a quantize-first job
(``quantize.py``) where no checkpoint exists. Every flag written is one the chosen engine
release's parser defines, listed in data/engine-flags/<engine>-<version>.yaml from the
release's wheel (``flags.py`` checks them).
"""

"""From a deployment to running servers: launch commands, Compose and Kubernetes files.

``bundle.deploy_bundle(scenario, spec, engine)`` turns the deployment in focus into the
engine's launch commands (vLLM, SGLang, TensorRT-LLM), with the memory fraction, sequence limit
and context length the search's memory budget assumed (``settings.py``), the published
checkpoint or how to quantize (``checkpoints.py``), and the Docker Compose and Kubernetes files
(``manifests.py``). Every flag written is one the engine's parser defines, listed in
data/engine-flags/ from the engine's source (``flags.py`` checks them).
"""

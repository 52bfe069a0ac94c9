"""The performance model and what checks it, in four subpackages (imports point down this list):

- :mod:`.model`: step times of a replica, the estimate for a deployment, serving predictions,
  sweeps, and the constants and prediction intervals they read;
- :mod:`.validation`: published measurements parsed into cases, predicted and compared (error
  per family, the Trust page's rows, percentile and load checks, the queueing simulation);
- :mod:`.importers`: a client's benchmark files (vLLM, SGLang, GenAI-Perf, trtllm-bench,
  nccl-tests) read into the same cases;
- :mod:`.calibration`: fitting the constants to the published measurements and to a client's
  files.

Imports catalog, scenario and physics from below."""

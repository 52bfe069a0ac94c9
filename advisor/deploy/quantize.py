"""Quantize first: the job that writes the quantized checkpoint the servers then load.

When no published checkpoint holds the weights in the deployment's dtype and the engine does not
quantize at load (vLLM/SGLang do FP8 online), a job quantizes the 16-bit release into
``/models/<name>`` on a volume every server mounts (Compose: ``./models``; Kubernetes: a
ReadWriteMany PersistentVolumeClaim; launch.sh: ``models/`` beside it), and the servers serve
that folder. vLLM and SGLang load llm-compressor's compressed-tensors export; TensorRT-LLM loads
a TensorRT Model Optimizer (ModelOpt) Hugging Face export.
Sources: llm-compressor 0.14.0.1 (``llmcompressor.oneshot(model, dataset, recipe, output_dir,
max_seq_length, num_calibration_samples)``; GPTQModifier / QuantizationModifier schemes W8A8,
W4A16, NVFP4, FP8_DYNAMIC; SmoothQuantModifier in modifiers.transform.smoothquant; its
open_platypus calibration set); ModelOpt (``modelopt.torch.quantization.quantize(model, cfg,
forward_loop)`` with FP8_DEFAULT_CFG, INT8_SMOOTHQUANT_CFG, INT4_AWQ_CFG, NVFP4_DEFAULT_CFG;
``modelopt.torch.export.export_hf_checkpoint``), shipped in the TensorRT-LLM image.
"""

from __future__ import annotations

from dataclasses import dataclass

MODELS_DIR = "/models"
#: llm-compressor release the job installs into the vLLM/SGLang image (pip index, 2026-12-03).
LLM_COMPRESSOR = "llmcompressor==0.14.0.1"
#: Calibration: 512 samples of 2,048 tokens (llm-compressor's defaults in its examples).
SAMPLES, SEQ_LEN = 512, 2048

_RECIPES = {
    "int8": '[SmoothQuantModifier(smoothing_strength=0.8), GPTQModifier(targets="Linear", '
    'scheme="W8A8", ignore=["lm_head"])]',
    "int4": 'GPTQModifier(targets="Linear", scheme="W4A16", ignore=["lm_head"])',
    "nvfp4": 'QuantizationModifier(targets="Linear", scheme="NVFP4", ignore=["lm_head"])',
    "fp8": 'QuantizationModifier(targets="Linear", scheme="FP8_DYNAMIC", ignore=["lm_head"])',
}
_MODELOPT = {"fp8": "FP8_DEFAULT_CFG", "int8": "INT8_SMOOTHQUANT_CFG",
             "int4": "INT4_AWQ_CFG", "nvfp4": "NVFP4_DEFAULT_CFG"}  # fmt: skip


@dataclass(frozen=True)
class QuantizeJob:
    """Quantize ``source`` (a Hugging Face repository) to ``weights`` into ``path``."""

    source: str
    weights: str
    tool: str  # "llm-compressor" or "modelopt"
    name: str  # the folder under /models

    @property
    def path(self) -> str:
        return f"{MODELS_DIR}/{self.name}"

    @property
    def argv(self) -> list[str]:
        """The job's command in the engine's image (``quantize.py`` is in /config)."""
        run = f"python3 /config/quantize.py {self.path}"
        if self.tool == "llm-compressor":
            run = f"pip install --no-cache-dir {LLM_COMPRESSOR} && {run}"
        return ["bash", "-c", run]

    def script(self) -> str:
        """quantize.py: every value from the scenario is a Python string literal (repr)."""
        head = [f'"""Quantize {self.source} to {self.weights} with {self.tool} (advisor deploy)."""',
                "import sys", "", f"SOURCE = {self.source!r}", "OUT = sys.argv[1]", ""]  # fmt: skip
        if self.tool == "llm-compressor":
            body = [
                "from llmcompressor import oneshot",
                "from llmcompressor.modifiers.quantization import GPTQModifier, "
                "QuantizationModifier",
                "from llmcompressor.modifiers.transform.smoothquant import SmoothQuantModifier",
                "",
                f"recipe = {_RECIPES[self.weights]}",
                'oneshot(model=SOURCE, dataset="open_platypus", recipe=recipe, output_dir=OUT,',
                f"        max_seq_length={SEQ_LEN}, num_calibration_samples={SAMPLES})",
            ]
        else:
            body = [
                "import modelopt.torch.quantization as mtq",
                "from datasets import load_dataset",
                "from modelopt.torch.export import export_hf_checkpoint",
                "from transformers import AutoModelForCausalLM, AutoTokenizer",
                "",
                'model = AutoModelForCausalLM.from_pretrained(SOURCE, torch_dtype="auto", '
                'device_map="auto")',
                "tok = AutoTokenizer.from_pretrained(SOURCE)",
                f'texts = load_dataset("cnn_dailymail", "3.0.0", split="train[:{SAMPLES}]")'
                '["article"]',
                "",
                "",
                "def forward_loop(m):",
                "    for t in texts:",
                f'        batch = tok(t, return_tensors="pt", truncation=True, max_length={SEQ_LEN})',
                "        m(**batch.to(m.device))",
                "",
                "",
                f"mtq.quantize(model, mtq.{_MODELOPT[self.weights]}, forward_loop)",
                "export_hf_checkpoint(model, export_dir=OUT)",
                "tok.save_pretrained(OUT)",
            ]
        return "\n".join(head + body) + "\n"


def job_for(model_id: str, source: str, weights: str, engine: str) -> QuantizeJob | None:
    """The quantize-first job for ``weights`` on ``engine``, None when the engine has no
    quantizer for that dtype here (MXFP4) or none is needed.

    >>> job_for("llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", "int4", "trtllm").path
    '/models/llama-3.1-70b-int4-modelopt'
    """
    if weights not in _RECIPES:
        return None
    tool = "modelopt" if engine == "trtllm" else "llm-compressor"
    return QuantizeJob(source, weights, tool, f"{model_id}-{weights}-{tool}")

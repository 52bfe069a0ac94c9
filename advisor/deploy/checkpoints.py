"""Which checkpoint a server loads for a model and weight dtype, or how to make one.

A published checkpoint (data/checkpoints.yaml) in a format the engine loads is named; otherwise
the engine either quantizes at load time (vLLM and SGLang: FP8 online, ``--quantization fp8``)
or the model must be quantized first, and the step says with which tool.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.catalog.checkpoint_table import (
    SIXTEEN_BIT,
    checkpoints,
    listed_checkpoint,
    loadable_checkpoint,
)

#: Quantize-first recipes. vLLM/SGLang load llm-compressor (compressed-tensors) checkpoints;
#: TensorRT-LLM loads TensorRT Model Optimizer (ModelOpt) exports. Sources: llm-compressor
#: README (oneshot with W8A8 / W4A16 / NVFP4 schemes); TensorRT Model Optimizer
#: examples/llm_ptq/hf_ptq.py (--qformat fp8, int8_sq, int4_awq, nvfp4).
_LLM_COMPRESSOR = {
    "int8": "W8A8 (SmoothQuantModifier + GPTQModifier(scheme='W8A8'))",
    "int4": "W4A16 (GPTQModifier(scheme='W4A16'))",
    "nvfp4": "NVFP4 (QuantizationModifier(scheme='NVFP4'))",
    "fp8": "FP8_DYNAMIC (QuantizationModifier(scheme='FP8_DYNAMIC'))",
}
_MODELOPT = {"fp8": "fp8", "int8": "int8_sq", "int4": "int4_awq", "nvfp4": "nvfp4"}


@dataclass(frozen=True)
class Checkpoint:
    """What to load: a repository, the engine's load-time quantization, or a first step."""

    repo: str
    published: bool  # a checkpoint in the wanted dtype exists (repo is it)
    online_quantization: str | None = None  # e.g. "fp8": the engine quantizes at load
    prepare: str | None = None  # the step to run first (quantize/convert), None if none
    source: str = ""
    #: the listed checkpoint of the wanted dtype that this engine's build does not load
    #: ("repo (format)"), "" when none was passed over
    passed_over: str = ""


def choose(model_id: str, weights: str, engine: str, vendor: str = "NVIDIA") -> Checkpoint:
    """The checkpoint ``engine`` should load for ``model_id`` at ``weights`` on ``vendor``'s
    GPUs: a published one in a format that engine's build for them loads (``rocm_formats`` of
    data/checkpoints.yaml for AMD), else the engine's load-time quantization or a first step.

    >>> choose("llama-3.1-70b", "fp8", "trtllm").repo
    'nvidia/Llama-3.1-70B-Instruct-FP8'
    >>> c = choose("llama-3.1-70b", "nvfp4", "vllm")
    >>> c.published, c.repo
    (False, 'meta-llama/Llama-3.1-70B-Instruct')
    >>> # vLLM's ROCm build refuses ModelOpt exports: fp8 from the 16-bit release at load
    >>> c = choose("llama-3.1-70b", "fp8", "vllm", "AMD")
    >>> c.repo, c.online_quantization, c.passed_over
    ('meta-llama/Llama-3.1-70B-Instruct', 'fp8', 'nvidia/Llama-3.1-70B-Instruct-FP8 (modelopt)')
    """
    loads = loadable_checkpoint(model_id, weights, engine, vendor)
    if loads:
        return Checkpoint(loads["repo"], True, source=loads["source"])
    hit = listed_checkpoint(model_id, weights)
    ck = _unpublished(model_id, weights, engine, listed_checkpoint(model_id, "bf16"))
    # listed, but in a format this build refuses: said, and never the origin of a re-quantization
    return replace(ck, passed_over=f"{hit['repo']} ({hit['format']})") if hit else ck


def _unpublished(model_id: str, weights: str, engine: str, base: dict | None) -> Checkpoint:
    """``choose`` without a loadable published checkpoint of ``weights``: the 16-bit release
    (``base``) or the model's own quantized one, with what the engine does first."""
    released = _released(model_id)
    if base is None and released is not None:
        # Only the publisher's quantized release exists (gpt-oss: MXFP4): another dtype is a
        # re-quantization of it, never an engine's load-time flag on that checkpoint.
        return _requantize(released, weights, engine)
    origin = (base or {}).get("repo")
    if origin is None:  # an imported config.json or a model without a listed release
        origin = model_id
        where = f"{model_id} (no published checkpoint listed: use your own path)"
    else:
        where = origin
    if weights in SIXTEEN_BIT + ("fp32",):
        # a 16-bit dtype's listed entry is ``base`` itself (``_entry``), so none is listed here
        if base is None:
            return Checkpoint(origin, False, prepare=f"download the 16-bit weights of {where}")
        return Checkpoint(origin, True)
    if weights == "fp8" and engine in ("vllm", "sglang"):
        return Checkpoint(origin, False, online_quantization="fp8")
    if weights == "mxfp4":
        return Checkpoint(origin, False, prepare=(
            f"no MXFP4 checkpoint of {where} is listed and {engine} has no MXFP4 quantizer: "
            "quantize with AMD Quark (MXFP4) or pick a model released in MXFP4 (gpt-oss)"))  # fmt: skip
    if engine == "trtllm":
        step = (f"quantize {where} with TensorRT Model Optimizer: python examples/llm_ptq/"
                f"hf_ptq.py --pyt_ckpt_path {origin} --qformat {_MODELOPT[weights]} "
                "--export_path ./checkpoint, then serve ./checkpoint")  # fmt: skip
    else:
        step = (f"quantize {where} with llm-compressor, scheme {_LLM_COMPRESSOR[weights]}, "
                "save_compressed=True, then serve the saved folder")  # fmt: skip
    return Checkpoint(origin, False, prepare=step)


def _released(model_id: str) -> tuple[str, dict] | None:
    """(dtype, checkpoint entry) of the model's own quantized release (ModelSpec.released_weights)
    when data/checkpoints.yaml lists it, else None."""
    from advisor.catalog import models

    m = models().get(model_id)
    dtype = m.released_weights if m is not None else None
    entry = checkpoints()["models"].get(model_id, {}).get(dtype) if dtype else None
    return (dtype, entry) if entry else None


def _requantize(released: tuple[str, dict], weights: str, engine: str) -> Checkpoint:
    """A dtype other than the released one, from a model released only quantized: dequantize the
    release to bf16 first, then (unless 16-bit is wanted) quantize that copy.

    >>> c = choose("gpt-oss-120b", "fp8", "vllm")
    >>> c.repo, c.published, c.online_quantization, c.prepare[:62]
    ('openai/gpt-oss-120b', False, None, 'openai/gpt-oss-120b is released in mxfp4: fp8 is a re-quantiza')
    """
    dtype, entry = released
    repo = entry["repo"]
    sixteen = weights in SIXTEEN_BIT + ("fp32",)
    change = "a dequantization" if sixteen else "a re-quantization"
    first = (f"{repo} is released in {dtype}: {weights} is {change}. Dequantize it to "
             "bf16 first (e.g. transformers' Mxfp4Config(dequantize=True) or the publisher's "
             "cast script) and save the bf16 copy")  # fmt: skip
    if sixteen:
        return Checkpoint(repo, False, prepare=f"{first}, then serve it", source=entry["source"])
    if engine == "trtllm" and weights in _MODELOPT:
        then = (f"quantize the copy with TensorRT Model Optimizer (--qformat "
                f"{_MODELOPT[weights]}) and serve the export")  # fmt: skip
    elif weights in _LLM_COMPRESSOR:
        then = (f"quantize the copy with llm-compressor, scheme {_LLM_COMPRESSOR[weights]}, and "
                "serve the saved folder")  # fmt: skip
    else:
        then = f"quantize the copy to {weights} with a tool that writes it, and serve that"
    return Checkpoint(repo, False, prepare=f"{first}; {then}", source=entry["source"])

"""Strict, frozen pydantic specs for accelerators, interconnects and models.

Every number in a catalog carries a source: each entry has a ``sources`` mapping from field name
to either a reference key (defined once in the catalog's ``refs``) or a free-text citation. The
loader resolves reference keys; the validators here check that no sourced field is left without
one.

Units are SI inside: bytes, bytes/s (one direction), FLOP/s, seconds, watts.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

SLUG = r"^[a-z0-9][a-z0-9.\-]*[a-z0-9]$"
Slug = Annotated[str, Field(pattern=SLUG, min_length=2, max_length=64)]

#: Numeric formats a weight tensor can be stored in.
WeightDType = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4"]
#: Numeric formats the KV cache can be stored in.
KVDType = Literal["fp16", "bf16", "fp8", "int8"]
#: Tensor-core compute paths an accelerator may support (absent = unsupported).
ComputeDType = Literal["fp16", "bf16", "fp8", "int8", "fp4"]

WEIGHT_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
KV_DTYPES: tuple[str, ...] = ("fp16", "bf16", "fp8", "int8")

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)

# Bounds: generous enough for any accelerator up to ~2030, tight enough to catch unit slips
# (a bandwidth in GB/s where bytes/s was meant, a memory size in GB where bytes was meant).
_MAX_MEMORY_BYTES = 4e12
_MAX_BW = 1e14
_MAX_FLOPS = 1e17


def _check_sources(entry: BaseModel, sourced_fields: tuple[str, ...]) -> None:
    sources: dict[str, str] = entry.sources  # type: ignore[attr-defined]
    missing = [f for f in sourced_fields if getattr(entry, f) is not None and f not in sources]
    if missing:
        raise ValueError(
            f"{entry.id!r}: no source for {', '.join(missing)} "  # type: ignore[attr-defined]
            f"(sources given for: {', '.join(sorted(sources)) or 'nothing'})"
        )
    unknown = sorted(set(sources) - set(type(entry).model_fields))
    if unknown:
        raise ValueError(
            f"{entry.id!r}: sources name unknown fields {unknown}"  # type: ignore[attr-defined]
        )


class PeakFlops(BaseModel):
    """Dense (no structured sparsity) tensor-core peak per compute dtype, FLOP/s (OP/s for int8)."""

    model_config = _STRICT

    fp16: Annotated[float, Field(gt=1e12, le=_MAX_FLOPS)]
    bf16: Annotated[float, Field(gt=1e12, le=_MAX_FLOPS)] | None = None
    fp8: Annotated[float, Field(gt=1e12, le=_MAX_FLOPS)] | None = None
    int8: Annotated[float, Field(gt=1e12, le=_MAX_FLOPS)] | None = None
    fp4: Annotated[float, Field(gt=1e12, le=_MAX_FLOPS)] | None = None

    def get(self, dtype: str) -> float | None:
        """Peak for a compute dtype, or None when the accelerator has no such path."""
        if dtype not in type(self).model_fields:
            return None
        return getattr(self, dtype)


#: What an interconnect is: its ``kind`` (each with a name in data/interconnects.yaml ``fabrics``).
FabricKind = Literal["pcie", "nvlink", "xgmi", "infiniband", "ethernet"]


class FabricNames(RootModel[dict[FabricKind, Annotated[str, Field(min_length=1, max_length=40)]]]):
    """How the answers name each fabric kind (data/interconnects.yaml ``fabrics``): one name for
    every kind of :data:`FabricKind`, no other key.

    >>> try:
    ...     FabricNames.model_validate({"pcie": "PCIe", "nvlink": "NVLink"})
    ... except ValueError as exc:
    ...     print(str(exc).splitlines()[1].split(" [")[0])
      Value error, fabrics: no name for ethernet, infiniband, xgmi (every interconnect kind needs one)
    """

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="after")
    def _every_kind(self) -> FabricNames:
        missing = sorted(set(get_args(FabricKind)) - set(self.root))
        if missing:
            raise ValueError(
                f"fabrics: no name for {', '.join(missing)} (every interconnect kind needs one)"
            )
        return self


class Interconnect(BaseModel):
    """A link between accelerators, described per GPU and per direction.

    ``bandwidth_bytes_per_s`` is one direction. For ``topology == "mesh"`` (AMD Infinity Fabric on
    an 8-GPU OAM board: a point-to-point link to every peer, no switch) it is one peer link, and a
    collective over N GPUs can use ``min(N - 1, links_per_gpu)`` links at once. For a switch,
    a shared bus or a network, it is the whole per-GPU bandwidth whatever N is.
    """

    model_config = _STRICT

    id: Slug
    name: Annotated[str, Field(min_length=1, max_length=120)]
    kind: FabricKind
    scope: Literal["intra_node", "inter_node"]
    #: Vendors whose accelerators have this link (None: any, as for PCIe and networks).
    vendors: Annotated[list[Literal["NVIDIA", "AMD", "Intel"]], Field(min_length=1)] | None = None
    topology: Literal["switch", "mesh", "bus", "network"]
    bandwidth_bytes_per_s: Annotated[float, Field(gt=1e8, le=_MAX_BW)]
    links_per_gpu: Annotated[int, Field(ge=1, le=64)] = 1
    latency_s: Annotated[float, Field(gt=0, le=1e-3)]
    in_switch_reduction: bool = False
    notes: Annotated[str, Field(max_length=2000)] = ""
    sources: dict[str, Annotated[str, Field(min_length=3)]]

    @model_validator(mode="after")
    def _checks(self) -> Interconnect:
        if self.topology != "mesh" and self.links_per_gpu != 1:
            raise ValueError(
                f"{self.id!r}: links_per_gpu={self.links_per_gpu} only applies to a mesh topology "
                f"(topology is {self.topology!r})"
            )
        if self.in_switch_reduction and self.topology != "switch":
            raise ValueError(
                f"{self.id!r}: in_switch_reduction needs a switch (topology is {self.topology!r})"
            )
        _check_sources(self, ("bandwidth_bytes_per_s", "latency_s"))
        return self

    def mismatch(self, gpu: Accelerator, scope: str | None = None) -> str | None:
        """Why this link cannot connect ``gpu`` (in the ``scope`` asked: "intra_node" inside a
        node, "inter_node" between nodes), or None.

        >>> from advisor.catalog import get_accelerator, get_interconnect
        >>> get_interconnect("nvlink5").mismatch(get_accelerator("mi300x"), "intra_node")
        "'nvlink5' (NVLink 5 + NVSwitch (B200 HGX / GB200 NVL72)) is on NVIDIA accelerators only, not on the AMD Instinct MI300X 192GB (AMD)"
        >>> get_interconnect("ib-ndr").mismatch(get_accelerator("h100-sxm"), "intra_node")
        "'ib-ndr' (InfiniBand NDR 400 Gb/s (one NIC per GPU)) is an inter-node link, not one inside a node"
        """
        if scope is not None and self.scope != scope:
            place = "inside a node" if scope == "intra_node" else "between nodes"
            return (f"{self.id!r} ({self.name}) is an {self.scope.replace('_', '-')} link, not one "
                    f"{place}")  # fmt: skip
        if self.vendors is not None and gpu.vendor not in self.vendors:
            return (f"{self.id!r} ({self.name}) is on {' and '.join(self.vendors)} accelerators "
                    f"only, not on the {gpu.name} ({gpu.vendor})")  # fmt: skip
        return None

    def effective_bandwidth_bytes_per_s(self, n_gpus: int) -> float:
        """Per-GPU, one-direction bandwidth a collective over ``n_gpus`` can use."""
        if self.topology == "mesh":
            return self.bandwidth_bytes_per_s * max(1, min(n_gpus - 1, self.links_per_gpu))
        return self.bandwidth_bytes_per_s


class Accelerator(BaseModel):
    """One GPU or accelerator package as software sees it (one device)."""

    model_config = _STRICT

    id: Slug
    name: Annotated[str, Field(min_length=1, max_length=120)]
    vendor: Literal["NVIDIA", "AMD", "Intel"]
    #: Architecture family; efficiency constants are calibrated per family.
    family: Literal["ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4", "gaudi3"]
    memory_bytes: Annotated[int, Field(gt=1_000_000_000, le=_MAX_MEMORY_BYTES)]
    #: The capacity as the vendor headlines it, in GB (for display next to memory_bytes).
    memory_gb_datasheet: Annotated[float, Field(gt=1, le=4000)]
    hbm_bandwidth_bytes_per_s: Annotated[float, Field(gt=1e10, le=_MAX_BW)]
    peak_flops_per_s: PeakFlops
    #: Interconnect id of the scale-up link (NVLink, Infinity Fabric) or the PCIe link if none.
    scale_up_link: Slug
    #: Per-GPU scale-up bandwidth, one direction (a mesh: all peer links summed).
    scale_up_bandwidth_bytes_per_s: Annotated[float, Field(gt=1e9, le=_MAX_BW)]
    #: Largest number of GPUs joined by the scale-up link (8 for HGX/OAM, 2 for a bridged pair).
    scale_up_domain: Annotated[int, Field(ge=1, le=576)]
    pcie_gen: Annotated[int, Field(ge=3, le=6)]
    tdp_w: Annotated[float, Field(gt=10, le=3000)]
    notes: Annotated[str, Field(max_length=2000)] = ""
    sources: dict[str, Annotated[str, Field(min_length=3)]]

    @model_validator(mode="after")
    def _checks(self) -> Accelerator:
        gb = self.memory_bytes / 1e9
        # Usable memory sits within a few percent of the headline, whether the vendor's GB are
        # decimal or binary (80 GB H100 reports 81,559 MiB = 85.5e9 bytes).
        if not 0.85 * self.memory_gb_datasheet <= gb <= 1.12 * self.memory_gb_datasheet:
            raise ValueError(
                f"{self.id!r}: memory_bytes={self.memory_bytes} ({gb:.1f} GB) is not within "
                f"-15%/+12% of memory_gb_datasheet={self.memory_gb_datasheet} GB"
            )
        bf16 = self.peak_flops_per_s.bf16
        fp8 = self.peak_flops_per_s.fp8
        if fp8 is not None and bf16 is not None and fp8 < bf16:
            raise ValueError(f"{self.id!r}: fp8 peak {fp8:.3g} is below bf16 peak {bf16:.3g}")
        _check_sources(
            self,
            (
                "memory_bytes",
                "hbm_bandwidth_bytes_per_s",
                "peak_flops_per_s",
                "scale_up_bandwidth_bytes_per_s",
                "pcie_gen",
                "tdp_w",
            ),
        )
        return self

    @property
    def pcie_link(self) -> str:
        return f"pcie{self.pcie_gen}"


#: Architecture families a ModelSpec describes (and the config.json importer maps).
ModelFamily = Literal[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "gemma2",
    "falcon",
    "deepseek_v3",
    "qwen3",
    "qwen3_moe",
    "gpt_oss",
    "llama4",
    "gemma3",
    "glm4_moe",
    "minimax_m2",
]
MODEL_FAMILIES: tuple[str, ...] = get_args(ModelFamily)


class ModelSpec(BaseModel):
    """A decoder-only transformer, with the fields of a Hugging Face ``config.json``.

    Dense and MoE feed-forward, MHA/GQA/MQA attention and DeepSeek's multi-head latent attention
    (MLA, when ``kv_lora_rank`` is set). Sliding-window layers hold at most ``sliding_window``
    tokens of KV cache.
    """

    model_config = _STRICT

    id: Slug
    name: Annotated[str, Field(min_length=1, max_length=120)]
    family: ModelFamily
    num_hidden_layers: Annotated[int, Field(ge=1, le=1024)]
    hidden_size: Annotated[int, Field(ge=64, le=131072)]
    #: Dense FFN width (for MoE models: the dense layers', or the expert width if all are MoE).
    intermediate_size: Annotated[int, Field(ge=64, le=1048576)]
    num_attention_heads: Annotated[int, Field(ge=1, le=1024)]
    num_key_value_heads: Annotated[int, Field(ge=1, le=1024)]
    head_dim: Annotated[int, Field(ge=8, le=1024)]
    vocab_size: Annotated[int, Field(ge=2, le=4_000_000)]
    max_position_embeddings: Annotated[int, Field(ge=16, le=16_777_216)]
    tie_word_embeddings: bool = False
    #: "gated" = SwiGLU/GeGLU, three matrices; "plain" = two matrices (Falcon's GeLU MLP).
    mlp_kind: Literal["gated", "plain"] = "gated"
    #: Bias on the Q, K and V projections (Qwen2).
    attention_bias: bool = False
    #: LayerNorm with bias (2 vectors) instead of RMSNorm (1 vector), and norms per layer.
    norm_kind: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: Annotated[int, Field(ge=1, le=4)] = 2
    #: RMSNorm on every query and key head (Qwen3, Gemma 3): 2 x head_dim weights per layer.
    qk_norm: bool = False
    #: Bias on the attention output projection as well (gpt-oss; Qwen2's bias is Q/K/V only).
    attention_out_bias: bool = False
    #: A learned sink logit per query head (gpt-oss): n_heads weights per layer, no KV cache.
    attention_sinks: bool = False

    # Mixture of experts (absent = dense).
    num_experts: Annotated[int, Field(ge=2, le=4096)] | None = None
    num_experts_per_tok: Annotated[int, Field(ge=1, le=256)] | None = None
    moe_intermediate_size: Annotated[int, Field(ge=16, le=1048576)] | None = None
    num_shared_experts: Annotated[int, Field(ge=0, le=64)] = 0
    #: The first k layers keep a dense FFN (DeepSeek's first_k_dense_replace).
    first_k_dense_layers: Annotated[int, Field(ge=0, le=1024)] = 0
    #: After those, every k-th layer is MoE and the others dense (Llama 4 Maverick:
    #: interleave_moe_layer_step 2; HF Llama4: MoE layers are k-1, 2k-1, ...).
    moe_layer_step: Annotated[int, Field(ge=1, le=64)] = 1
    #: Biases on each expert's projections and on the router (gpt-oss).
    expert_bias: bool = False
    #: Dtype the published checkpoint stores the routed experts in when it differs from the
    #: rest of the model (gpt-oss: MXFP4 experts, bf16 attention, router and embeddings).
    expert_weights_dtype: Literal["mxfp4", "nvfp4"] | None = None
    #: Dtype the publisher released every linear layer's weights in, when not 16-bit
    #: (DeepSeek-V3's block-FP8 checkpoint: quantization_config quant_method fp8). Serving in it
    #: is the reference model, not a quantization of it.
    released_weights_dtype: Literal["fp8"] | None = None

    # Multi-head latent attention (DeepSeek-V2/V3).
    q_lora_rank: Annotated[int, Field(ge=1, le=65536)] | None = None
    kv_lora_rank: Annotated[int, Field(ge=1, le=65536)] | None = None
    qk_nope_head_dim: Annotated[int, Field(ge=1, le=1024)] | None = None
    qk_rope_head_dim: Annotated[int, Field(ge=1, le=1024)] | None = None
    v_head_dim: Annotated[int, Field(ge=1, le=1024)] | None = None

    # Sliding-window attention.
    sliding_window: Annotated[int, Field(ge=16, le=16_777_216)] | None = None
    #: How many layers use the window (Mistral-7B v0.1: all 32; Gemma-2: every other layer).
    num_sliding_window_layers: Annotated[int, Field(ge=0, le=1024)] = 0
    #: "sliding": a windowed layer attends to the last W tokens; "chunked": to the tokens of its
    #: own W-token chunk (Llama 4 attention_chunk_size). Either way it caches at most W tokens.
    window_kind: Literal["sliding", "chunked"] = "sliding"
    #: KV heads of the windowed layers when they differ from the full-attention layers'
    #: num_key_value_heads (MiMo-V2-Flash: 8 in its sliding layers, 4 in its global ones).
    window_num_key_value_heads: Annotated[int, Field(ge=1, le=1024)] | None = None

    #: Published parameter counts (for checks), parameters.
    published_params: Annotated[float, Field(gt=1e6, le=1e14)] | None = None
    published_active_params: Annotated[float, Field(gt=1e6, le=1e14)] | None = None
    #: The publisher's active count leaves out the input embedding, a table lookup (OpenAI's
    #: gpt-oss card counts the unembedding only).
    published_active_excludes_embedding: bool = False
    #: ... and the output layer too (deduced for GLM-4.5: 32.1B without both, 33.6B with).
    published_active_excludes_lm_head: bool = False
    #: "with_vision": the published total includes a vision encoder this text spec does not model.
    published_params_scope: Literal["text", "with_vision"] = "text"
    notes: Annotated[str, Field(max_length=2000)] = ""
    sources: dict[str, Annotated[str, Field(min_length=3)]]

    @model_validator(mode="after")
    def _checks(self) -> ModelSpec:
        name = self.id
        if not self.is_mla and self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"{name!r}: num_attention_heads={self.num_attention_heads} is not divisible by "
                f"num_key_value_heads={self.num_key_value_heads}"
            )
        moe_fields = (self.num_experts, self.num_experts_per_tok, self.moe_intermediate_size)
        if any(v is not None for v in moe_fields) and not all(v is not None for v in moe_fields):
            raise ValueError(
                f"{name!r}: an MoE model needs num_experts, num_experts_per_tok and "
                f"moe_intermediate_size together (got {moe_fields})"
            )
        if self.num_experts is not None and self.num_experts_per_tok > self.num_experts:  # type: ignore[operator]
            raise ValueError(
                f"{name!r}: num_experts_per_tok={self.num_experts_per_tok} exceeds "
                f"num_experts={self.num_experts}"
            )
        if self.first_k_dense_layers > self.num_hidden_layers:
            raise ValueError(
                f"{name!r}: first_k_dense_layers={self.first_k_dense_layers} exceeds "
                f"num_hidden_layers={self.num_hidden_layers}"
            )
        mla = (self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim)
        if any(v is not None for v in mla) and not all(v is not None for v in mla):
            raise ValueError(
                f"{name!r}: MLA needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and "
                f"v_head_dim together (got {mla})"
            )
        if self.num_sliding_window_layers > self.num_hidden_layers:
            raise ValueError(
                f"{name!r}: num_sliding_window_layers={self.num_sliding_window_layers} exceeds "
                f"num_hidden_layers={self.num_hidden_layers}"
            )
        if self.moe_layer_step > 1 and not self.is_moe:
            raise ValueError(f"{name!r}: moe_layer_step={self.moe_layer_step} needs an MoE model")
        if (self.expert_bias or self.expert_weights_dtype) and not self.is_moe:
            raise ValueError(
                f"{name!r}: expert_bias / expert_weights_dtype={self.expert_weights_dtype} "
                "need an MoE model"
            )
        wkv = self.window_num_key_value_heads
        if wkv is not None and (not self.num_sliding_window_layers or self.is_mla):
            raise ValueError(
                f"{name!r}: window_num_key_value_heads={wkv} needs windowed layers "
                f"(num_sliding_window_layers={self.num_sliding_window_layers}) and no MLA"
            )
        if wkv is not None and self.num_attention_heads % wkv:
            raise ValueError(
                f"{name!r}: num_attention_heads={self.num_attention_heads} is not divisible by "
                f"window_num_key_value_heads={wkv}"
            )
        if self.num_sliding_window_layers and self.sliding_window is None:
            raise ValueError(
                f"{name!r}: num_sliding_window_layers={self.num_sliding_window_layers} "
                "but no sliding_window size"
            )
        _check_sources(self, ("num_hidden_layers", "published_params"))
        return self

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None

    @property
    def released_weights(self) -> str | None:
        """The weight dtype of the publisher's own checkpoint when it is not 16-bit (fp8 for
        DeepSeek-V3, mxfp4 for gpt-oss's experts), else None: that dtype is the reference model.

        >>> from advisor.catalog import get_model
        >>> get_model("deepseek-v3").released_weights, get_model("gpt-oss-120b").released_weights
        ('fp8', 'mxfp4')
        >>> get_model("llama-3.1-70b").released_weights is None
        True
        """
        return self.released_weights_dtype or self.expert_weights_dtype

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def num_moe_layers(self) -> int:
        """Layers i >= first_k_dense_layers with (i + 1) % moe_layer_step == 0."""
        if not self.is_moe:
            return 0
        # (i + 1) runs over k + 1 .. layers: the multiples of step among them, in closed form
        # (the search asks this for every replica it builds)
        k, step = self.first_k_dense_layers, self.moe_layer_step
        return max(self.num_hidden_layers // step - k // step, 0)

    @property
    def attention_kind(self) -> str:
        """MHA, GQA, MQA or MLA, as the KV cache sees it."""
        if self.is_mla:
            return "MLA"
        if self.num_key_value_heads == self.num_attention_heads:
            return "MHA"
        if self.num_key_value_heads == 1:
            return "MQA"
        return "GQA"


def slugify(text: str) -> str:
    """Lowercase slug for ids: ``"Llama-3.1 70B"`` -> ``"llama-3.1-70b"``.

    >>> slugify("Meta-Llama-3.1-70B-Instruct")
    'meta-llama-3.1-70b-instruct'
    >>> slugify("  Qwen/Qwen2.5_72B ")
    'qwen-qwen2.5-72b'
    """
    s = re.sub(r"[^a-z0-9.]+", "-", text.strip().lower()).strip("-.")
    return s[:64].strip("-.") or "model"


#: Domains a quality note can be about (data/quality.yaml ``domain``); the ones clients ask about
#: by name (QUALITY_DOMAINS_ASKED) are said to be unknown when no source measured them.
QualityDomain = Literal["general", "reasoning", "medical", "code", "legal"]
QUALITY_DOMAINS_ASKED = ("medical", "code", "legal")


class QualityNote(BaseModel):
    """A published accuracy effect of quantizing one model's weights or KV cache (data/quality.yaml).

    Either a pair of scores on one benchmark (quantized and unquantized, as the source states
    them), or a ``summary`` sentence of the source's finding, or both. ``models`` are catalog ids
    the measurement is of; "*" marks a note that applies to every model (no per-model figure).
    """

    model_config = _STRICT

    id: Slug
    models: Annotated[list[Annotated[str, Field(pattern=r"^(\*|[a-z0-9][a-z0-9.\-]*[a-z0-9])$")]],
                      Field(min_length=1, max_length=32)]  # fmt: skip
    kind: Literal["weights", "kv"]
    dtype: Literal["fp8", "int8", "int4", "mxfp4", "nvfp4"]
    scheme: Annotated[str, Field(min_length=1, max_length=200)]
    benchmark: Annotated[str, Field(min_length=1, max_length=120)] | None = None
    quantized_score: Annotated[float, Field(ge=0, le=100)] | None = None
    baseline_score: Annotated[float, Field(gt=0, le=100)] | None = None
    summary: Annotated[str, Field(min_length=1, max_length=400)] | None = None
    source: Annotated[str, Field(min_length=1, max_length=600)]
    retrieved: Annotated[str, Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")]
    #: What the benchmark measures: general knowledge and chat, or a domain a client asks about.
    domain: QualityDomain = "general"
    #: What the quantized score is compared with: the 16-bit model, or (DeepSeek) the FP8 release.
    baseline: Annotated[str, Field(min_length=1, max_length=60)] = "unquantized"

    @model_validator(mode="after")
    def _content(self) -> QualityNote:
        scores = (self.benchmark, self.quantized_score, self.baseline_score)
        if any(v is not None for v in scores) and any(v is None for v in scores):
            raise ValueError(
                f"{self.id}: give benchmark, quantized_score and baseline_score together "
                f"(got {scores})"
            )
        if self.quantized_score is None and self.summary is None:
            raise ValueError(f"{self.id}: give the scores or a summary of the finding")
        if self.kind == "kv" and self.dtype == "int4":
            raise ValueError(f"{self.id}: the KV cache is fp8 or int8, not int4")
        return self

    @property
    def recovery(self) -> float | None:
        """Quantized score / unquantized score (None without scores)."""
        if self.quantized_score is None or self.baseline_score is None:
            return None
        return self.quantized_score / self.baseline_score

"""Which model drafts for a target in speculative decoding: its own multi-token-prediction head,
or a smaller catalog model that shares its tokenizer; never one with another vocabulary.

The target verifies the draft's proposed token ids, so both must index the same vocabulary:
vLLM refuses a draft whose vocab_size differs ("the draft model's vocab_size must match the
target's", SpeculativeConfig), SGLang's and TensorRT-LLM's draft-target modes compare token
ids likewise. Two catalog models share a tokenizer when their vocabulary sizes are equal and
their families are the same tokenizer line (``TOKENIZER_LINE``: Qwen3 dense and MoE, Mistral 7B
and Mixtral share theirs).

A model's own draft head (``OWN_HEADS``): DeepSeek-V3/R1 and GLM-4.5 release one
multi-token-prediction (MTP) layer with the checkpoint (config.json num_nextn_predict_layers 1),
which vLLM (``--speculative-config`` method ``deepseek_mtp`` / ``mtp``), SGLang (EAGLE with the
checkpoint's NextN layer) and TensorRT-LLM (``decoding_type: MTP``) run as the draft. It is
modelled as a one-layer copy of the target (``draft_spec``): the MTP module is one decoder
block of the target's shape (an MoE block for both) plus the shared embedding and output head.
"""

from __future__ import annotations

from advisor.catalog.loader import models
from advisor.catalog.specs import ModelSpec

#: The pseudo draft id of a model's own multi-token-prediction head.
MTP = "mtp"
#: Targets that ship MTP layers, and how many (config.json num_nextn_predict_layers; GLM-4.5:
#: num_nextn_predict_layers 1 in zai-org/GLM-4.5's config.json and its report's "one MTP layer").
OWN_HEADS: dict[str, int] = {"deepseek-v3": 1, "deepseek-r1": 1, "glm-4.5": 1}
#: Model families whose tokenizers are one line (same vocabulary size and token ids).
TOKENIZER_LINE = {"qwen3_moe": "qwen3", "mixtral": "mistral"}


#: Draft tokens per step of a separate draft model when none are given (Options.spec_tokens).
DEFAULT_SPEC_TOKENS = 4


def default_spec_tokens(target_id: str, draft_id: str | None) -> int:
    """Draft tokens per step a draft runs unless told otherwise: a model's own MTP head as many
    as it has layers, a separate draft model ``DEFAULT_SPEC_TOKENS``.

    >>> default_spec_tokens("deepseek-r1", MTP), default_spec_tokens("llama-3.1-70b", "llama-3.2-1b")
    (1, 4)
    """
    return OWN_HEADS[target_id] if draft_id == MTP else DEFAULT_SPEC_TOKENS


def has_own_head(target: ModelSpec) -> bool:
    """The target ships its own draft head (MTP layers)."""
    return OWN_HEADS.get(target.id, 0) > 0


def tokenizer_problem(target: ModelSpec, draft: ModelSpec) -> str | None:
    """Why ``draft`` cannot draft for ``target`` (another tokenizer), or None.

    >>> from advisor.catalog import get_model
    >>> print(tokenizer_problem(get_model("qwen3-235b-a22b"), get_model("llama-3.2-1b")))
    draft llama-3.2-1b uses another tokenizer than qwen3-235b-a22b (llama, 128,256 tokens vs qwen3_moe, 151,936): the engines verify the draft's token ids, so both must share a vocabulary
    >>> tokenizer_problem(get_model("qwen3-235b-a22b"), get_model("qwen3-8b")) is None
    True
    """
    if _line(draft) == _line(target) and draft.vocab_size == target.vocab_size:
        return None
    return (
        f"draft {draft.id} uses another tokenizer than {target.id} ({draft.family}, "
        f"{draft.vocab_size:,} tokens vs {target.family}, {target.vocab_size:,}): the engines "
        "verify the draft's token ids, so both must share a vocabulary"
    )


def _line(m: ModelSpec) -> str:
    return TOKENIZER_LINE.get(m.family, m.family)


def draft_spec(target: ModelSpec, draft_id: str) -> ModelSpec:
    """The ModelSpec the performance model runs as the draft: a catalog model, or for ``MTP``
    the target's MTP head as a copy of the target with its MTP layers only (MoE layers; the
    embedding and output head included, as the engines' MTP modules hold them)."""
    if draft_id != MTP:
        return models()[draft_id]
    layers = OWN_HEADS[target.id]
    return target.model_copy(
        update={"id": f"{target.id}-mtp", "name": f"{target.name} MTP head",
                "num_hidden_layers": layers, "first_k_dense_layers": 0, "moe_layer_step": 1},
    )  # fmt: skip


def draft_name(target: ModelSpec, draft_id: str | None) -> str:
    """Words for a draft id: "DeepSeek-R1's own MTP head" or the catalog model's name."""
    if draft_id is None:
        return "none"
    if draft_id == MTP:
        return f"{target.name}'s own MTP head"
    return models()[draft_id].name if draft_id in models() else draft_id

"""Quality notes for a quantized deployment: the published accuracy effect of its weight and KV
dtypes on its model (data/quality.yaml), or a plain "not measured for this model"."""

from __future__ import annotations

from functools import cache

import yaml

from advisor.catalog.files import load_data_yaml
from advisor.catalog.loader import DATA_DIR, CatalogError
from advisor.catalog.specs import QUALITY_DOMAINS_ASKED, QualityNote

#: Said wherever no source measured the dtype's effect on the model.
NOT_MEASURED = "not measured for this model"
#: The publisher's own checkpoint is in this dtype (DeepSeek-V3's block FP8): nothing was lost.
RELEASED = "the publisher's own {dtype} release, the reference model (not a quantization of it)"


@cache
def quality_notes() -> dict[str, QualityNote]:
    """data/quality.yaml, validated; a source starting with a ref key gets the ref's text."""
    path = DATA_DIR / "quality.yaml"
    try:
        doc = load_data_yaml(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path.name}: cannot read: {exc}") from exc
    refs = doc.get("refs") or {}
    out: dict[str, QualityNote] = {}
    for i, raw in enumerate(doc.get("notes") or []):
        src = str(raw.get("source", ""))
        key, _, rest = src.partition(": ")
        if key in refs:
            raw = {**raw, "source": refs[key] + (f": {rest}" if rest else "")}
        elif src in refs:
            raw = {**raw, "source": refs[src]}
        try:
            note = QualityNote.model_validate(raw)
        except ValueError as exc:
            raise CatalogError(f"{path.name}: notes[{i}] ({raw.get('id')!r}): {exc}") from exc
        if note.id in out:
            raise CatalogError(f"{path.name}: duplicate id {note.id!r}")
        out[note.id] = note
    return out


def describe(note: QualityNote) -> str:
    """One line: the finding with its numbers, then the source.

    >>> n = quality_notes()["llama-3.1-70b-int4"]
    >>> describe(n).split(" (source")[0]
    'INT4 weights only (W4A16, GPTQ, per-channel): Open LLM Leaderboard v1 average 78.54 vs 78.67 unquantized (99.8% recovered)'
    """
    parts = []
    if note.recovery is not None:
        parts.append(f"{note.benchmark} {note.quantized_score:.2f} vs {note.baseline_score:.2f} "
                     f"{note.baseline} ({note.recovery:.1%} recovered)")  # fmt: skip
    if note.summary:
        parts.append(note.summary)
    return f"{note.scheme}: {'; '.join(parts)} (source: {note.source}, retrieved {note.retrieved})"


def finding(note: QualityNote) -> str:
    """The finding alone, for a one-line summary.

    >>> finding(quality_notes()["llama-3.1-70b-int4"])
    '99.8% of the unquantized score (Open LLM Leaderboard v1 average 78.54 vs 78.67)'
    """
    if note.recovery is not None:
        return (f"{note.recovery:.1%} of the {note.baseline} score ({note.benchmark} "
                f"{note.quantized_score:.2f} vs {note.baseline_score:.2f})")  # fmt: skip
    return note.summary or ""


def unknown_text(model_id: str, kind: str, dtype: str, released: bool = False) -> str:
    """What no source measured for this model at this dtype, said plainly: the domains clients
    ask about (medical, code, legal) with no note measured on the model ('' when all have one).

    >>> unknown_text("llama-3.1-70b", "weights", "int4")
    'no published medical, code or legal evaluation at int4 for this model'
    >>> unknown_text("gpt-oss-120b", "weights", "mxfp4", released=True)
    'no published code or legal evaluation of the mxfp4 release'
    """
    own = [n for n in notes_for(model_id, kind, dtype) if "*" not in n.models]
    missing = [d for d in QUALITY_DOMAINS_ASKED if not any(n.domain == d for n in own)]
    if not missing:
        return ""
    words = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " or " + missing[-1]
    where = f"of the {dtype} release" if released else f"at {dtype} for this model"
    return f"no published {words} evaluation {where}"


def cite(note: QualityNote) -> str:
    """A short citation: the Hugging Face repository, the arXiv id, or the source's title.

    >>> cite(quality_notes()["llama-3.1-70b-int4"]), cite(quality_notes()["llama-3.1-family-int4"])
    ('neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w4a16 model card', 'arXiv:2411.02355')
    """
    src = note.source
    if "huggingface.co/" in src:
        repo = src.split("huggingface.co/", 1)[1].split(")")[0].split(";")[0]
        return f"{repo.strip().rstrip('/')} model card"
    if "arXiv:" in src:
        return "arXiv:" + src.split("arXiv:", 1)[1].split(")")[0]
    return src.split(" (")[0].split(": '")[0]


def notes_for(model_id: str, kind: str, dtype: str) -> list[QualityNote]:
    """Notes measured on ``model_id`` (then those for every model) for a weight or KV dtype."""
    notes = [n for n in quality_notes().values() if n.kind == kind and n.dtype == dtype]
    own = [n for n in notes if model_id in n.models]
    return own + [n for n in notes if "*" in n.models]


def _released(model_id: str) -> str | None:
    """The model's own released weight dtype (ModelSpec.released_weights), None if 16-bit or
    not a catalog model (an uploaded config.json)."""
    from advisor.catalog import models

    spec = models().get(model_id)
    return spec.released_weights if spec is not None else None


def quality_for(model_id: str, weights: str, kv: str) -> list[dict]:
    """Per quantized dtype of a deployment (16/32-bit weights and 16-bit KV are the reference:
    left out): ``{"tensor", "dtype", "measured", "finding", "notes"}``: ``measured`` False when
    no source measured this dtype on ``model_id`` (its notes then hold only notes for every
    model); ``finding`` the first note's finding in a few words; ``notes`` with their sources;
    ``unknown``: the domains no source measured on the model at that dtype (``unknown_text``).

    >>> quality_for("mistral-7b", "int4", "fp16")[0]["finding"]
    'not measured for this model'
    >>> quality_for("mistral-7b", "int4", "fp16")[0]["unknown"]
    'no published medical, code or legal evaluation at int4 for this model'

    """
    out = []
    for kind, dtype in (("weights", weights), ("kv", kv)):
        if dtype not in ("fp8", "int8", "int4", "mxfp4", "nvfp4"):
            continue
        found = notes_for(model_id, kind, dtype)
        if kind == "weights" and dtype == _released(model_id):
            out.append({"tensor": kind, "dtype": dtype, "measured": True,
                        "finding": RELEASED.format(dtype=dtype),
                        "notes": [describe(n) for n in found if "*" not in n.models],
                        "unknown": unknown_text(model_id, kind, dtype, released=True)})  # fmt: skip
            continue
        out.append({"tensor": kind, "dtype": dtype,
                    "measured": any("*" not in n.models for n in found),
                    # a domain study of other models is a note, never the headline
                    "finding": next((finding(n) for n in found
                                     if n.domain == "general" or "*" not in n.models),
                                    NOT_MEASURED),
                    "notes": [describe(n) for n in found],
                    "unknown": unknown_text(model_id, kind, dtype) if kind == "weights" else ""})  # fmt: skip
    return out


def quality_lines(model_id: str, weights: str, kv: str, brief: bool = False) -> list[str]:
    """``quality_for`` as one line per quantized dtype (``brief``: findings with short
    citations, ``cite``, instead of the full sources).

    >>> line = quality_lines("mistral-7b", "int4", "fp16", brief=True)[0]
    >>> line.split(";")[0], line.endswith("legal evaluation at int4 for this model.")
    ('Weights int4: not measured for this model', True)
    >>> quality_lines("deepseek-v3", "fp8", "fp16")[0][:92]
    "Weights fp8: the publisher's own fp8 release, the reference model (not a quantization of it)"
    """
    lines = []
    for q in quality_for(model_id, weights, kv):
        head = f"{'Weights' if q['tensor'] == 'weights' else 'KV cache'} {q['dtype']}: "
        released = q["finding"] == RELEASED.format(dtype=q["dtype"])
        # brief (the PDF): a domain study of other models is left to the app's sources; the
        # unknown is still said
        found = [n for n in notes_for(model_id, q["tensor"], q["dtype"])
                 if "*" not in n.models or not (released or brief and n.domain != "general")]  # fmt: skip
        notes = [f"{finding(n)} [{cite(n)}]" for n in found] if brief else q["notes"]
        parts = [q["finding"]] if released else ([] if q["measured"] else [NOT_MEASURED])
        parts += notes
        if q.get("unknown"):
            parts.append(q["unknown"])
        lines.append(head + "; ".join(parts) + ("" if parts[-1].endswith(")") else "."))
    return lines

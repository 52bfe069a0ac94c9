"""Import a Hugging Face ``config.json`` as a :class:`~advisor.catalog.specs.ModelSpec`.

Two steps, both safe on untrusted input:

1. :func:`load_hf_config_bytes` / :func:`load_hf_config_file` (``load.py``) turn bytes into a
   ``dict``: a size cap, UTF-8 only, standard JSON only, duplicate keys refused, nesting depth
   capped before parsing. Nothing is ever evaluated or unpickled.
2. :func:`model_from_hf_config` (``importer.py``) finds the family (``registry.py``) and maps its
   fields onto a ``ModelSpec`` with that family's module in ``families/``, built from the shared
   steps of ``mapper.py`` over the typed reads of ``reader.py``. Absent optional fields take the
   default the transformers configuration class gives them (cited next to each default); the
   size-defining fields (layers, hidden size, heads, vocabulary, FFN width, expert counts, MLA
   ranks) are required, because a transformers default there is just one particular
   checkpoint's value and would silently plan for the wrong model. Keys the spec has no use for
   (``torch_dtype``, ``rope_scaling``, ``bos_token_id``...) are ignored.

Every failure is an :class:`HFConfigError` (a ``ValueError``) whose one-line message names the
``config.json`` key, the value and the allowed range.
"""

from advisor.catalog.hf.errors import HFConfigError
from advisor.catalog.hf.importer import SUPPORTED_FAMILIES, detect_family, model_from_hf_config
from advisor.catalog.hf.load import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    load_hf_config_bytes,
    load_hf_config_file,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "SUPPORTED_FAMILIES",
    "HFConfigError",
    "detect_family",
    "load_hf_config_bytes",
    "load_hf_config_file",
    "model_from_hf_config",
]

"""The bytes of a ``config.json`` -> a dict, safe on untrusted input.

A size cap, UTF-8 only, standard JSON only (no NaN/Infinity), duplicate keys refused, nesting
depth capped *before* parsing (counted on the raw text, no recursion), top level must be an
object. Nothing is ever evaluated or unpickled.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from advisor.catalog.files import (
    MAX_JSON_DEPTH,
    FileReadError,
    loads_json,
    no_duplicate_keys,
    read_bounded,
    scan_json_depth,
)
from advisor.catalog.hf.errors import PREFIX, HFConfigError, json_type
from advisor.catalog.quoting import echo

DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_MAX_DEPTH = MAX_JSON_DEPTH


def _check_depth(text: str, max_depth: int) -> bool:
    """Refuse JSON text nested deeper than ``max_depth`` (advisor.catalog.files.scan_json_depth).

    Returns True when the text ends unfinished (an open bracket or string): a truncated file.
    """
    at, unfinished = scan_json_depth(text, max_depth)
    if at is not None:
        raise HFConfigError(
            f"{PREFIX}: nesting deeper than {max_depth} levels (at character {at}); "
            "a model config needs only a few"
        )
    return unfinished


_no_duplicates = no_duplicate_keys(
    lambda key: HFConfigError(f"{PREFIX}: duplicate key {echo(key)} (each key may appear once)")
)


def _no_constant(name: str) -> Any:
    raise HFConfigError(f"{PREFIX}: non-standard JSON constant {name!r} (NaN/Infinity refused)")


def load_hf_config_bytes(
    data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """Parse the bytes of a ``config.json`` into a dict, refusing anything unusual.

    >>> load_hf_config_bytes(b'{"model_type": "llama", "hidden_size": 4096}')
    {'model_type': 'llama', 'hidden_size': 4096}
    >>> load_hf_config_bytes(b'{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    advisor.catalog.hf.errors.HFConfigError: config.json: duplicate key 'a' (each key may appear once)
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise HFConfigError(f"{PREFIX}: expected bytes, got {type(data).__name__}")
    size = len(data)
    if size > max_bytes:
        raise HFConfigError(
            f"{PREFIX}: {size:,} bytes is larger than the {max_bytes:,}-byte limit "
            "(a model config is a few kB)"
        )
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HFConfigError(
            f"{PREFIX}: not UTF-8 text (byte 0x{bytes(data)[exc.start]:02x} at offset "
            f"{exc.start}); save the file as UTF-8 JSON"
        ) from None
    if text.startswith("\ufeff"):  # a UTF-8 byte-order mark is still UTF-8
        text = text[1:]
    if not text.strip():
        raise HFConfigError(f"{PREFIX}: empty file (expected a JSON object)")
    unfinished = _check_depth(text, max_depth)
    try:
        obj = loads_json(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
        )
    except HFConfigError:
        raise
    except json.JSONDecodeError as exc:
        what = "malformed JSON"
        if unfinished or exc.pos >= len(text.rstrip()):
            what = "truncated JSON (the text ends before the object is closed)"
        raise HFConfigError(
            f"{PREFIX}: {what}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer with more than 4300 digits
        raise HFConfigError(f"{PREFIX}: unreadable JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise HFConfigError(
            f"{PREFIX}: top level must be a JSON object {{...}}, got {json_type(obj)}"
        )
    return obj


def load_hf_config_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> dict[str, Any]:
    """Read and parse a ``config.json`` file; its size is checked before it is read."""
    try:
        data = read_bounded(path, max_bytes)
    except FileReadError as exc:
        raise HFConfigError(f"{PREFIX} ({Path(path).name}): {exc}") from None
    return load_hf_config_bytes(data, max_bytes=max_bytes, max_depth=max_depth)

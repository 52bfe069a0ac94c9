"""Reading a file a user named, safely: a regular file of bounded size, read with a cap."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


class FileReadError(ValueError):
    """The file cannot be used; the message says why (no path prefix: callers add their own)."""


def read_bounded(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``.

    Refuses directories, devices and FIFOs (``/dev/zero`` would never end) before reading, and
    reads at most ``max_bytes + 1`` bytes (the file may grow after the size check).

    >>> read_bounded("/dev/zero", 10)
    Traceback (most recent call last):
    ...
    advisor.catalog.files.FileReadError: not a regular file
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if not p.is_file():
            raise FileReadError("not a regular file")
        if size > max_bytes:
            raise FileReadError(f"file is {size:,} bytes; the limit is {max_bytes:,} bytes")
        with p.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise FileReadError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise FileReadError(f"file is larger than the {max_bytes:,}-byte limit")
    return data


def no_duplicate_keys(
    on_duplicate: Callable[[str], Exception],
) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A ``json.loads`` object_pairs_hook that refuses a key given twice (JSON allows it; a
    config or scenario that says two things about one field is a mistake to name, not to guess).

    >>> import json
    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=no_duplicate_keys(KeyError))
    Traceback (most recent call last):
    ...
    KeyError: 'a'
    """

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise on_duplicate(key)
            out[key] = value
        return out

    return hook

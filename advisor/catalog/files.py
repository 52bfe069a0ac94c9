"""Reading a file a user named, safely: a regular file of bounded size, read with a cap."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from advisor.catalog.quoting import field_path

#: Deepest nesting accepted in any JSON the tool reads (a config.json, an estimate line, a
#: scenario's embedded config). Model configs need 3-4 levels; a scenario file may be one level
#: deeper than this because it wraps an imported config.
MAX_JSON_DEPTH = 20

# A JSON string (possibly unterminated, then it runs to the end) or one bracket. Strings are
# matched whole so brackets inside them are not counted; the alternatives are disjoint, so the
# scan is linear.
_DEPTH_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(")?|[\[\]{}]', re.DOTALL)


def scan_json_depth(text: str, max_depth: int = MAX_JSON_DEPTH) -> tuple[int | None, bool]:
    """(offset of the first bracket deeper than ``max_depth`` or None, text ends unfinished),
    counted without parsing or recursion, so a 100,000-deep document costs one linear scan.

    >>> scan_json_depth('{"a": [[1]], "b": "[[["}', 2), scan_json_depth('{"a": [', 2)
    ((7, False), (None, True))
    """
    depth = 0
    open_string = False
    for m in _DEPTH_TOKEN.finditer(text):
        tok = m.group()
        if tok.startswith('"'):
            open_string = m.group(1) is None
        elif tok in "[{":
            depth += 1
            if depth > max_depth:
                return m.start(), False
        elif tok in "]}":
            depth -= 1
    return None, open_string or depth > 0


#: Most digits of an integer in any JSON the tool reads. No field needs 20; Python refuses to
#: convert more than 4,300 (``sys.get_int_max_str_digits``) with a message about its own settings.
MAX_INT_DIGITS = 100


class NumberTooLongError(ValueError):
    """An integer with more than MAX_INT_DIGITS digits in JSON text (the message names its field)."""


class _LongInt:
    """Stands in for an integer too long to convert while json.loads builds the document, so the
    refusal can name the field that holds it (a parse_int hook cannot see where it is)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


def loads_json(text: str, **kwargs: Any) -> Any:
    """``json.loads`` with every integer bounded to MAX_INT_DIGITS digits; a longer one is
    NumberTooLongError naming its field (a ValueError, as json's own errors are).

    >>> loads_json('{"a": [1, -42]}')
    {'a': [1, -42]}
    >>> loads_json('{"workload": {"isl_tokens": 1' + "0" * 400 + '}}')
    Traceback (most recent call last):
    ...
    advisor.catalog.files.NumberTooLongError: field 'workload.isl_tokens': an integer of 401 digits (allowed: up to 100 digits)
    """
    long_ints: list[_LongInt] = []

    def int_or_marker(digits_text: str) -> int | _LongInt:
        digits = len(digits_text) - digits_text.startswith("-")
        if digits <= MAX_INT_DIGITS:
            return int(digits_text)
        long_ints.append(_LongInt(digits))
        return long_ints[-1]

    doc = json.loads(text, parse_int=int_or_marker, **kwargs)
    if not long_ints:  # the usual case: no walk over a large benchmark file
        return doc
    stack: list[tuple[Any, tuple[object, ...]]] = [(doc, ())]
    while stack:  # iterative: the callers bound the depth, but not the width
        node, path = stack.pop()
        if isinstance(node, _LongInt):
            where = f"field '{field_path(path)}': " if path else ""
            raise NumberTooLongError(
                f"{where}an integer of {node.digits:,} digits (allowed: up to "
                f"{MAX_INT_DIGITS} digits)"
            )
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return doc


def object_depth(obj: Any) -> int:
    """Nesting depth of parsed JSON (dicts and lists count; scalars are 0), without recursion.

    >>> object_depth({"a": [{"b": 1}]}), object_depth(3)
    (3, 0)
    """
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend(
                (v, level + 1) for v in (node.values() if isinstance(node, dict) else node)
            )
    return deepest


class FileReadError(ValueError):
    """The file cannot be used; the message says why (no path prefix: callers add their own)."""


def open_bounded(path: str | os.PathLike[str], max_bytes: int) -> BinaryIO:
    """A regular file of at most ``max_bytes``, opened for reading in binary.

    Refuses directories, devices and FIFOs (``/dev/zero`` would never end) before opening. The
    caller still reads at most ``max_bytes + 1`` bytes (the file may grow after the check).

    >>> open_bounded("/dev/zero", 10)
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
        return p.open("rb")
    except OSError as exc:
        raise FileReadError(f"cannot read: {exc.strerror or exc}") from None


def read_bounded(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (:func:`open_bounded`, then read
    with a cap of ``max_bytes + 1`` bytes).

    >>> read_bounded("/dev/zero", 10)
    Traceback (most recent call last):
    ...
    advisor.catalog.files.FileReadError: not a regular file
    """
    f = open_bounded(path, max_bytes)
    try:
        with f:
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


def check_out_target(path: str | os.PathLike[str]) -> None:
    """Refuse an output path that cannot take a regular file, before any work is done.

    An existing directory, FIFO (writing would block forever), device or socket is refused; a
    symbolic link is fine (:func:`write_atomic` replaces the link, never its target). Path
    errors (a name longer than the file system allows, a file used as a folder) are
    FileWriteError with the system's reason.

    >>> check_out_target("/dev/null")
    Traceback (most recent call last):
    ...
    advisor.catalog.files.FileWriteError: is a character device, not a regular file; give a file name
    """
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise FileWriteError(exc.strerror or str(exc)) from None
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
        raise FileWriteError(f"is {kind}, not a regular file; give a file name")
    parent = p.parent
    try:
        parent_ok = stat.S_ISDIR(os.stat(parent).st_mode)
    except FileNotFoundError:
        parent_ok = False
    except OSError as exc:
        raise FileWriteError(exc.strerror or str(exc)) from None
    if not parent_ok:
        raise FileWriteError(f"directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise FileWriteError(f"directory {str(parent)!r} is not writable")


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileWriteError(ValueError):
    """The output cannot be written there; the message says why (callers add the path)."""


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a temporary file in the target's folder, then rename it over ``path``.

    A reader never sees half a file, a failed write leaves the old file as it was, and a symbolic
    link at ``path`` is replaced by the new file (its target is never written). The new file gets
    the old file's permissions, or the usual ones (0666 minus the umask).
    """
    p = Path(path)
    check_out_target(p)
    try:
        old = os.lstat(p)
        mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
    except OSError:
        mode = None
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:40]}.", suffix=".tmp")
    except OSError as exc:
        raise FileWriteError(f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise FileWriteError(f"cannot write: {exc.strerror or exc}") from None


def replaceable_entries(
    folder: str | os.PathLike[str], replaceable: Callable[[str], bool]
) -> list[os.DirEntry]:
    """The folder's entries, all regular files ``replaceable(name)`` accepts, or FileWriteError
    naming the others (checked before any work, and again by :func:`replace_folder`).

    >>> replaceable_entries("/proc/self", lambda name: False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    advisor.catalog.files.FileWriteError: holds entries that are not earlier output (...
    """
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise FileWriteError(f"cannot read the folder: {exc.strerror or exc}") from None
    foreign = [
        e.name for e in entries if not (e.is_file(follow_symlinks=False) and replaceable(e.name))
    ]
    if foreign:
        shown = ", ".join(repr(n[:60]) for n in foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise FileWriteError(
            f"holds entries that are not earlier output ({shown}); the folder is replaced as a "
            "whole, so give an empty folder or one holding only an earlier output"
        )
    return entries


def replace_folder(
    folder: str | os.PathLike[str], files: dict[str, bytes], replaceable: Callable[[str], bool]
) -> Path:
    """Make the existing ``folder`` hold exactly ``files``, as a whole or not at all.

    The files are written (and synced) into a temporary sibling folder, which is then renamed
    into place; the old folder is renamed aside first and deleted last, so a failed write (a
    full disk) leaves the old set untouched and a reader never sees old and new files mixed.
    Every entry already in the folder must be a regular file that ``replaceable(name)`` accepts
    (an earlier output of the same kind); anything else is refused, never deleted. Returns the
    real path written (a symbolic link to the folder is followed, and keeps pointing at it).
    """
    real = Path(os.path.realpath(folder))
    entries = replaceable_entries(real, replaceable)
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except OSError as exc:
        raise FileWriteError(f"cannot read the folder: {exc.strerror or exc}") from None
    old_modes = {e.name: stat.S_IMODE(e.stat(follow_symlinks=False).st_mode) for e in entries}
    umask = os.umask(0)
    os.umask(umask)
    try:
        staged = tempfile.mkdtemp(dir=real.parent, prefix=f".{real.name[:40]}.new-")
    except OSError as exc:
        raise FileWriteError(f"cannot write beside the folder: {exc.strerror or exc}") from None
    try:
        for name, data in files.items():
            fd = os.open(os.path.join(staged, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                os.fchmod(f.fileno(), old_modes.get(name, 0o666 & ~umask))
        os.chmod(staged, mode)
        aside = tempfile.mkdtemp(dir=real.parent, prefix=f".{real.name[:40]}.old-")
    except OSError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        raise FileWriteError(
            f"cannot write: {exc.strerror or exc}; the folder is unchanged"
        ) from None
    try:
        os.replace(real, aside)  # rename(2) replaces the empty directory ``aside``
        os.replace(staged, real)
    except OSError as exc:
        if not os.path.exists(real):
            os.replace(aside, real)  # put the old folder back
        shutil.rmtree(staged, ignore_errors=True)
        shutil.rmtree(aside, ignore_errors=True)
        raise FileWriteError(
            f"cannot swap: {exc.strerror or exc}; the folder is unchanged"
        ) from None
    shutil.rmtree(aside, ignore_errors=True)
    return real


def load_data_yaml(text: str) -> Any:
    """A YAML file of the project's own data/ folder, parsed by libyaml when PyYAML was built
    with it (8-10x faster than the pure-Python parser: 320 ms -> 35 ms for the catalogs read at
    start-up), else by the pure-Python one. Both use the same safe constructor and resolver, so
    the values are the same (tests/test_catalog_contracts.py compares them file by file).
    Files from a user go through advisor.catalog.yaml_input instead (bounded, refused aliases).
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def without_block(text: str, key: str) -> str:
    r"""``text``, a block-style YAML document (as ``yaml.safe_dump`` writes it), without the
    top-level ``key`` and its value: the lines after ``key:`` up to the next line that starts
    a top-level key (indented lines, indentless ``- `` items, blank lines and comments belong
    to the block). Unchanged when ``key`` is not there or its value is on the key's line.

    >>> without_block("a: 1\nres:\n  x: 1\n- y\n\n# c\nb:\n- 2\n", "res")
    'a: 1\nb:\n- 2\n'
    >>> without_block("a: 1\nres: {x: 1}\n", "res")
    'a: 1\nres: {x: 1}\n'
    """
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.rstrip() == f"{key}:")
    except StopIteration:
        return text
    end = start + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\t", "#", "\n", "\r")
                                or lines[end].startswith("- ")):  # fmt: skip
        end += 1
    return "".join(lines[:start] + lines[end:])

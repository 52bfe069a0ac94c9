"""``python -m advisor``: subcommands over the same functions the app calls.

Each subcommand lives in its own module exposing ``add_parser(subparsers)`` and
``run(args) -> dict`` (and optionally ``render(result) -> str`` for the text form). Every
subcommand takes ``--json`` and then prints exactly one JSON object.

Exit codes: 0 on success (an infeasible deployment is a success with ``fits: false``), 2 on bad
input with one line on stderr naming the flag and the allowed values, 1 on an internal error
(also one line, never a traceback).
"""

from __future__ import annotations

import argparse
import contextvars
import importlib
import json
import math
import os
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from advisor.catalog.quoting import echo, terminal_text

#: Subcommand name -> module under advisor.cli. Add a line to register a new subcommand.
SUBCOMMANDS: dict[str, str] = {
    "catalog": "advisor.cli.catalog_cmd",
    "memory": "advisor.cli.memory_cmd",
    "collective": "advisor.cli.collective_cmd",
    "recommend": "advisor.cli.recommend_cmd",
    "estimate": "advisor.cli.estimate_cmd",
    "validate": "advisor.cli.validate_cmd",
    "calibrate": "advisor.cli.calibrate_cmd",
    "crossval": "advisor.cli.crossval_cmd",
    "report": "advisor.cli.report_cmd",
    "deploy": "advisor.cli.deploy_cmd",
}


class CliInputError(ValueError):
    """Bad input found after parsing; the message names the flag, the value and what is allowed."""


#: Longest error line printed (a pasted document as a flag value is not echoed whole).
MAX_MESSAGE_CHARS = 1000


def shown(text: str, limit: int = 60) -> str:
    """A user value for an error message: repr (so control characters stay visible), shortened.

    >>> shown("h100")
    "'h100'"
    >>> shown("x" * 100, limit=5)
    "'xxxxx'... (100 characters)"
    """
    return echo(text, limit)


def one_line(message: str) -> str:
    """An error message as exactly one line: line breaks escaped, at most MAX_MESSAGE_CHARS."""
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    if len(flat) > MAX_MESSAGE_CHARS:
        flat = flat[: MAX_MESSAGE_CHARS - 3] + "..."
    return flat


class _StoreOnce(argparse._StoreAction):
    """A single-valued flag given twice is an error naming it (argparse keeps the last silently:
    ``--gpu a100 --gpu h100`` would plan on h100 without a word)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        given = namespace.__dict__.setdefault("_given_flags", set())
        if self.dest in given:
            raise argparse.ArgumentError(self, "given more than once; give it once")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No prefix matching: `--tp 8` must never be taken for --tpot-p99-ms on a command that
        # has no --tp, nor `--mod` for --model.
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str) -> NoReturn:  # one line, no usage block
        print(one_line(f"{self.prog}: error: {message}"), file=sys.stderr)
        raise SystemExit(2)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # Python 3.11 drops a lone "--" given as a value (--tp=--) and returns [] without calling
        # the type, so a list would reach the subcommand: refuse it here, naming the flag.
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            self.error(f"argument {'/'.join(action.option_strings)}: expected one argument")
        return super()._get_values(action, arg_strings)


def _number_shown(text: str) -> str:
    """A number the user typed, for an out-of-range message: as typed, or cut when long (a
    5,000-digit value parses, as inf or as an int, and was echoed whole).

    >>> _number_shown(" 1e308 "), _number_shown("9" * 5000)[:12]
    ('1e308', "'99999999999")
    """
    text = text.strip()
    return text if len(text) <= 60 else shown(text)


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: an integer in [lo, hi]."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not an integer (allowed: {lo}..{hi})"
            ) from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"{_number_shown(text)} is out of range (allowed: {lo}..{hi})"
            )
        return value

    return parse


def float_in(lo: float, hi: float, *, lo_open: bool = False) -> Callable[[str], float]:
    """argparse type: a finite float in [lo, hi] (or (lo, hi] with ``lo_open``)."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not a number (allowed: {lo:g}..{hi:g})"
            ) from None
        bad_lo = value <= lo if lo_open else value < lo
        if not math.isfinite(value) or bad_lo or value > hi:
            bracket = "(" if lo_open else "["
            raise argparse.ArgumentTypeError(
                f"{_number_shown(text)} is out of range (allowed: {bracket}{lo:g}, {hi:g}])"
            )
        return value

    return parse


def choice_of(allowed: Sequence[str], what: str) -> Callable[[str], str]:
    """argparse type: one of ``allowed`` (case-insensitive), with the list in the message."""

    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {shown(text)} (allowed: {', '.join(allowed)})"
            )
        return value

    return parse


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; or, when ``argv`` names one, of that one alone, so that
    `advisor recommend` does not import the deploy bundle, the calibration and the file
    importers (import time is most of a CLI run's wall time on a loaded machine)."""
    parser = _Parser(prog="advisor", description="Inference Architect: LLM serving planner")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    first = argv[0] if argv else None
    chosen = {first: SUBCOMMANDS[first]} if first in SUBCOMMANDS else SUBCOMMANDS
    for name, module in chosen.items():
        mod = importlib.import_module(module)
        p = mod.add_parser(sub)
        p.set_defaults(_module=mod, _name=name, _parser=p)
    return parser


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return _to_jsonable(value.item())
    return value


def dumps(result: dict) -> str:
    """One JSON object; non-finite floats become null so the output is strict JSON."""
    return json.dumps(_to_jsonable(result), allow_nan=False)


def _default_render(result: dict) -> str:
    lines = []
    for key, value in result.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {v}" for v in value)
        elif isinstance(value, dict):
            lines.append(f"{key}:")
            lines.extend(f"  {k}: {v}" for k, v in value.items())
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


#: ASCII stand-ins for the symbols the text output uses, when the terminal's encoding lacks them.
_ASCII_FALLBACK = {
    "≤": "<=", "≥": ">=", "×": "x", "µ": "u", "μ": "u", "≈": "~", "—": "-", "–": "-",
    "…": "...", "→": "->", "←": "<-", "±": "+/-", "·": "*", "²": "^2", "√": "sqrt", "∞": "inf",
    "‰": "permille", "’": "'", "‘": "'", "“": '"', "”": '"', "•": "*", "≠": "!=",
}  # fmt: skip


def encodable(text: str, encoding: str | None) -> str:
    """``text`` with each character the output encoding cannot show replaced by ASCII.

    >>> encodable("P99 TPOT ≤ 50 ms, 2×H100", "latin-1")
    'P99 TPOT <= 50 ms, 2×H100'
    >>> encodable("TP≤8 客户", "ascii")
    'TP<=8 ??'
    """
    encoding = encoding or "utf-8"
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    out = []
    for c in text:
        try:
            c.encode(encoding)
            out.append(c)
        except (UnicodeEncodeError, LookupError):
            plain = unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode()
            out.append(_ASCII_FALLBACK.get(c) or plain or "?")
    return "".join(out)


def _silence_stdout() -> None:
    # The unwritable buffer would be flushed again at exit and print a second error.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass
    sys.stdout = None


def emit(text: str, name: str, wrote: str = "") -> int:
    """Print the result; closed or full stdout is one stderr line and exit 1, never a traceback.

    Text a file or flag supplied (a profile's name) is printed inert: no control sequence reaches
    the terminal (advisor.catalog.quoting.terminal_text; JSON output is escaped by json.dumps).

    ``wrote``: the files the command already wrote (``--out``), named so the message is true.
    A broken pipe (output piped into ``head``) propagates: ``__main__`` ends quietly then.
    """
    out = sys.stdout
    done = f" ({wrote} was written)" if wrote else ""
    if out is None:
        print(
            one_line(
                f"advisor {name}: error: standard output is closed; the result was not printed{done}"
            ),
            file=sys.stderr,
        )
        return 1
    try:
        out.write(encodable(terminal_text(text), getattr(out, "encoding", None)) + "\n")
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: write to a closed file object
        _silence_stdout()
        why = getattr(exc, "strerror", None) or str(exc)
        print(
            one_line(f"advisor {name}: error: cannot write the output: {why}{done}"),
            file=sys.stderr,
        )
        return 1
    return 0


def _written(args: argparse.Namespace, result: object) -> str:
    """The files a successful command wrote besides its printed result ("" if none)."""
    if not isinstance(result, dict):
        return ""
    if isinstance(result.get("out"), str):  # report, calibrate --from
        return result["out"]
    files = result.get("files")
    if args._name == "deploy" and isinstance(files, list) and files:
        return ", ".join(map(str, files))
    if args._name == "crossval" and isinstance(result.get("wrote"), dict):
        return ", ".join(result["wrote"])
    if args._name == "calibrate":  # the shipped calibration: --out or the default file
        return getattr(args, "out", None) or "data/calibration.yaml"
    return ""


class Streamed:
    """A result too long to hold: ``{key: [...]}`` whose items (each already one JSON text) are
    computed while the output is written, so memory stays bounded however long the input is.
    With --json it prints one JSON object; otherwise one item per line."""

    def __init__(self, key: str, items: Iterator[str]) -> None:
        self.key, self.items = key, items

    def chunks(self, as_json: bool) -> Iterator[str]:
        if as_json:
            yield f'{{"{self.key}": ['
        for i, item in enumerate(self.items):
            yield (", " if i and as_json else "\n" if i else "") + item
        yield "]}\n" if as_json else "\n"


def emit_stream(result: Streamed, as_json: bool, name: str) -> int:
    """Write a :class:`Streamed` result; output errors as in :func:`emit`."""
    out = sys.stdout
    if out is None:
        return emit("", name)
    encoding = getattr(out, "encoding", None)
    try:
        for chunk in result.chunks(as_json):
            out.write(encodable(terminal_text(chunk), encoding))
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        _silence_stdout()
        why = getattr(exc, "strerror", None) or str(exc)
        print(one_line(f"advisor {name}: error: cannot write the output: {why}"), file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - an item failed while streaming: no traceback
        return _internal_error(name, exc)
    return 0


def _internal_error(name: str, exc: Exception) -> int:
    first = str(exc).splitlines()[0] if str(exc) else ""
    print(
        one_line(f"advisor {name}: internal error: {type(exc).__name__}: {first}"), file=sys.stderr
    )
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    # Each command runs in a fresh context: a --profile it made active (advisor/perf/model/overlay.py)
    # ends with it, also when main is called again in the same process (tests, the app).
    return contextvars.Context().run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else list(argv))
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand's parser, so the message names the command
        args._parser.error(f"unrecognized arguments: {' '.join(extra)}")
    name = args._name
    try:
        result = args._module.run(args)
    except CliInputError as exc:
        print(one_line(f"advisor {name}: error: {exc}"), file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a traceback is never shown to a user
        return _internal_error(name, exc)
    if isinstance(result, Streamed):
        return emit_stream(result, getattr(args, "json", False), name)
    wrote = _written(args, result)
    if getattr(args, "json", False):
        return emit(dumps(result), name, wrote)
    render = getattr(args._module, "render", _default_render)
    return emit(render(result), name, wrote)

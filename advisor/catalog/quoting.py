"""User text quoted for the sink it reaches: a comment line of a shell script or YAML file, a
line on a terminal, an error message that echoes a value.

A name can come from a file the user did not write (a config.json's ``_name_or_path``, a client
profile's ``name``). Inside a ``#`` comment a line break ends the comment and the next line runs
as a command (bash) or parses as data (YAML, which also breaks lines at U+0085, U+2028 and
U+2029). On a terminal, ESC starts a control sequence (retitle the window, rewrite what was
printed) and bidi overrides reorder what the reader sees. So every character that is not
printable (``str.isprintable``: controls, format characters such as bidi overrides and zero-width
marks, line and paragraph separators, unassigned code points; every separator but the space) is
written as its Python escape, visible and inert: ``\\n``, ``\\x1b``, ``\\u202e``. Shell *values*
are quoted with ``shlex.quote`` where commands are built (advisor/deploy/engines.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

#: Longest user value echoed in an error message (the rest is counted, not printed).
ECHO_CHARS = 60


def inert(text: str, *, keep: str = "") -> str:
    """``text`` with each non-printable character (except those in ``keep``) as its escape.

    >>> inert("evil\\ntouch /tmp/x")
    'evil\\\\ntouch /tmp/x'
    >>> inert("a\\x1b]0;pwned\\x07b\\u202e"), inert("x\\ty\\n", keep="\\n")
    ('a\\\\x1b]0;pwned\\\\x07b\\\\u202e', 'x\\\\ty\\n')
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def visible_name(value: str, what: str, limit: int, *, allow_empty: bool = False) -> str:
    """A name a person gave (a saved scenario's): NFKC-normalised (a full-width or ligature
    look-alike becomes the plain letters), stripped, at most ``limit`` characters, every one
    printable (no control, zero-width, bidi override or isolate, line separator: ``"\u200b"``
    prints as nothing, ``"base\u200b"`` as ``base``, ``"\u202etxt.exe"`` as ``exe.txt``), so
    two names that print the same are the same name. ValueError naming the character.

    >>> visible_name(" ﬁnal ", "name", 10)
    'final'
    >>> visible_name("\u202etxt.exe", "name", 10)
    Traceback (most recent call last):
    ...
    ValueError: name '\u202etxt.exe' contains U+202E RIGHT-TO-LEFT OVERRIDE (character 1), which prints as nothing or reorders the text; use visible characters only
    """
    name = unicodedata.normalize("NFKC", value).strip()
    if not name and not allow_empty:
        raise ValueError(f"{what} is empty; give 1 to {limit} characters")
    if len(name) > limit:
        raise ValueError(f"{what} has {len(name):,} characters; the limit is {limit}")
    for i, c in enumerate(name):
        if not c.isprintable():
            raise ValueError(
                f"{what} {echo(name, 40)} contains U+{ord(c):04X} "
                f"{unicodedata.name(c, '(unnamed)')} (character {i + 1}), which prints as nothing "
                "or reorders the text; use visible characters only"
            )
    return name


def shell_comment(text: str) -> str:
    """``text`` as one ``# `` comment line of a shell script or a YAML file: nothing in it can end
    the line (:func:`inert`).

    >>> shell_comment("vllm launch for evil\\nrm -rf ~")
    '# vllm launch for evil\\\\nrm -rf ~'
    >>> shell_comment("a\\u2028b: 1")  # a YAML line break
    '# a\\\\u2028b: 1'
    """
    return "# " + inert(text)


def terminal_text(text: str) -> str:
    """A block of output for a terminal: line breaks and tabs kept, every other control,
    format or separator character escaped (no escape sequence reaches the terminal).

    >>> terminal_text("name: \\x1b[2Jx\\r\\nnext")
    'name: \\\\x1b[2Jx\\\\r\\nnext'
    """
    return inert(text, keep="\n\t")


def md_code(text: object) -> str:
    """``text`` as a markdown code span, for a markdown file we write (a deploy bundle's
    README.md): shown literally by GitHub-flavoured markdown, never a link (a model id
    ``www.evil.example``, from an uploaded config.json's name, was a live autolink in the
    README) nor emphasis. A backtick inside is fenced by a longer run; controls are made inert.

    >>> md_code("www.evil.example"), md_code("a`b"), md_code("x\\ny")
    ('`www.evil.example`', '``a`b``', '`x\\\\ny`')
    """
    text = inert(str(text))
    ticks = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """A user value inside an error message: its repr (controls visible), cut to ``limit``
    characters with the full length said.

    >>> echo("h100"), echo("k" * 50_000, limit=4)
    ("'h100'", "'kkkk'... (50,000 characters)")
    """
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def field_path(parts: Iterable[object], limit: int = 40) -> str:
    """Dotted path of a field for a message; each long key cut to ``limit`` characters, inert.

    >>> field_path(["load", "k" * 50_000, 3], limit=4)
    'load.kkkk... (50,000 characters).3'
    """
    out = []
    for p in parts:
        text = inert(str(p)[: limit + 1])
        n = len(str(p))
        out.append(f"{text[:limit]}... ({n:,} characters)" if n > limit else text)
    return ".".join(out)

"""YAML a user supplied (a client profile), read with every cost bounded before anything is built.

``yaml.safe_load`` builds whatever the text describes. An alias (``*x``) is a reference, so 15
bytes (``x: &x [*x, *x]``) make a list that contains itself and a few hundred bytes of nested
aliases ("billion laughs") make 10^9 references that any walk over the result follows; and its
composer recurses once per nesting level (20,000 ``[`` end in RecursionError). So the text is
first read as a stream of parser events (PyYAML's parser is a loop, not a recursion) and refused,
naming the field and line, if it has an alias, is nested deeper than ``max_depth``, has more
than ``max_nodes`` nodes, or has a plain number longer than :data:`MAX_NUMBER_CHARS` (Python
refuses to convert an integer of more than 4,300 digits, and no field needs 100). Only then is it
built. A client profile never needs an alias: the tool writes it without any.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from advisor.catalog.quoting import echo, field_path

#: Longest plain scalar that looks like a number (digits, sign, point, exponent, base prefix).
MAX_NUMBER_CHARS = 100
_NUMBERISH = re.compile(r"[-+]?[0-9._:]+(?:[eE][-+]?[0-9_]+)?|[-+]?0[xXoObB][0-9a-fA-F_]+")
#: The C parser when libyaml is present (10x faster), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlInputError(ValueError):
    """YAML that is refused before it is built; the message names the field and line."""


def _where(path: list[str | int], mark: Any) -> str:
    field = field_path(path)
    line = f"line {mark.line + 1}" if mark is not None else "?"
    return f"field '{field}' ({line})" if field else f"{line}"


def load_bounded_yaml(text: str, *, max_depth: int, max_nodes: int) -> Any:
    """The data of one YAML document, after the checks of the module docstring.

    >>> load_bounded_yaml("a: [1, {b: 2}]", max_depth=3, max_nodes=10)
    {'a': [1, {'b': 2}]}
    >>> load_bounded_yaml("x: &x [*x, *x]", max_depth=8, max_nodes=100)
    Traceback (most recent call last):
    ...
    advisor.catalog.yaml_input.YamlInputError: field 'x.0' (line 1): an alias (*x); aliases are not accepted here
    >>> load_bounded_yaml("[" * 20_000, max_depth=8, max_nodes=100)
    Traceback (most recent call last):
    ...
    advisor.catalog.yaml_input.YamlInputError: field '0.0.0.0.0.0.0.0' (line 1): nested deeper than 8 levels
    """
    # One frame per open collection: [path element of the next child, expecting a key?]
    frames: list[list[Any]] = []
    path: list[str | int] = []
    nodes = 0
    try:
        for ev in yaml.parse(text, Loader=_LOADER):
            if not isinstance(ev, yaml.NodeEvent):
                if isinstance(ev, yaml.CollectionEndEvent):
                    frames.pop()
                    if path:
                        path.pop()
                continue
            is_key = False
            if frames:
                top = frames[-1]
                if top[1] is None:  # a sequence: top[0] is the index
                    top[0] += 1
                    here: list[str | int] = [*path, top[0]]
                elif top[1]:  # a mapping, expecting a key
                    is_key, top[1] = True, False
                    here = path
                else:
                    top[1] = True
                    here = [*path, top[0]]
            else:
                here = []
            nodes += 1
            if nodes > max_nodes:
                raise YamlInputError(
                    f"{_where(here, ev.start_mark)}: more than {max_nodes:,} values"
                )
            if isinstance(ev, yaml.AliasEvent):
                raise YamlInputError(
                    f"{_where(here, ev.start_mark)}: an alias (*{echo(ev.anchor, 40).strip(chr(39))}); "
                    "aliases are not accepted here"
                )
            if isinstance(ev, yaml.ScalarEvent):
                value = ev.value
                if is_key:
                    frames[-1][0] = value
                elif (
                    not ev.style  # plain: None (Python parser) or "" (libyaml)
                    and len(value) > MAX_NUMBER_CHARS
                    and _NUMBERISH.fullmatch(value)
                ):
                    raise YamlInputError(
                        f"{_where(here, ev.start_mark)}: a number of {len(value):,} characters "
                        f"(allowed: up to {MAX_NUMBER_CHARS})"
                    )
                continue
            if is_key:  # a list or mapping used as a key
                raise YamlInputError(f"{_where(here, ev.start_mark)}: a key that is not text")
            # a collection starts: the children are one level deeper
            if len(frames) >= max_depth:
                raise YamlInputError(
                    f"{_where(here, ev.start_mark)}: nested deeper than {max_depth} levels"
                )
            if frames:
                path.append(here[-1])
            frames.append([-1, None] if isinstance(ev, yaml.SequenceStartEvent) else [None, True])
        loader = _LOADER(text)  # a safe loader; built by hand as yaml.load would, to pick the C one
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlInputError(f"not valid YAML ({str(exc).splitlines()[0][:120]})") from None
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, YamlInputError):
            raise
        raise YamlInputError(f"a value cannot be read ({str(exc)[:120]})") from None

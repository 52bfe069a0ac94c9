"""The one error type of the config.json import and the pieces of its messages."""

from __future__ import annotations

from typing import Any

#: Every message starts with the file it is about.
PREFIX = "config.json"


class HFConfigError(ValueError):
    """A config.json that cannot be read or mapped; the message names the key, value and range."""


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for "got ... (a string)".

    >>> json_type(None), json_type(True), json_type(3), json_type([1])
    ('null', 'a boolean', 'an integer', 'an array')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def show(value: Any) -> str:
    """A value as echoed in a message: its repr, cut to 60 characters.

    >>> show("x" * 100)[-5:], len(show("x" * 100))
    ('xx...', 60)
    """
    s = repr(value)
    return s if len(s) <= 60 else s[:57] + "..."

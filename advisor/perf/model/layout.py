"""A replica's parallel layout in words, as every view writes it."""

from __future__ import annotations


def layout_text(tp: int, ep: bool, dpa: bool) -> str:
    """ "TP=8", "TP=8, EP=8", "TP=8, attention DP=8" or "TP=8, EP=8, attention DP=8" (DEP8).

    >>> layout_text(8, True, True)
    'TP=8, EP=8, attention DP=8'
    """
    return f"TP={tp}" + (f", EP={tp}" if ep else "") + (f", attention DP={tp}" if dpa else "")

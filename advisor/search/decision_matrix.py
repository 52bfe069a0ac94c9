"""The article's decision matrix (data/article-claims.md) and whether the search agrees.

| model size | recommendation |
| 7B-13B     | 1 GPU, FP16, continuous batching |
| 30B-70B    | 2 GPUs TP, INT4, speculative decoding |
| 70B-180B   | 4 GPUs TP+PP, INT4, speculative decoding |
| 180B-405B  | 8 GPUs TP+PP |

Sizes between rows (13-30B) take the nearest row; boundaries: < 22B -> row 1, < 75B -> row 2,
<= 185B -> row 3, else row 4 (beyond 405B the article says nothing; row 4 is shown as the
nearest with a note).
"""

from __future__ import annotations

from dataclasses import dataclass

ROWS = (
    ("7B-13B", 1, "fp16", False, "1 GPU, FP16, continuous batching"),
    ("30B-70B", 2, "int4", True, "2 GPUs TP, INT4, speculative decoding"),
    ("70B-180B", 4, "int4", True, "4 GPUs TP+PP, INT4, speculative decoding"),
    ("180B-405B", 8, None, False, "8 GPUs TP+PP"),
)


@dataclass(frozen=True)
class ArticleAnswer:
    row: str
    gpus: int
    weights: str | None  # None: the article does not say
    speculative: bool
    text: str
    note: str


def article_answer(params: float) -> ArticleAnswer:
    """The article's row for a model of ``params`` parameters.

    >>> article_answer(70.6e9).row, article_answer(8e9).gpus, article_answer(405e9).gpus
    ('30B-70B', 1, 8)
    """
    b = params / 1e9
    i = 0 if b < 22 else 1 if b < 75 else 2 if b <= 185 else 3
    row = ROWS[i]
    note = ""
    if b < 7:
        note = f"{b:.1f}B is below the article's smallest row (7B-13B)"
    elif 13 < b < 30:
        note = f"{b:.1f}B falls between the article's rows; nearest row used"
    elif b > 405:
        note = f"{b:.0f}B is beyond the article's largest row (405B)"
    return ArticleAnswer(row[0], row[1], row[2], row[3], row[4], note)

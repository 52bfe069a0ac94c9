"""The article's decision matrix (data/article-claims.md) and whether the search agrees.

| model size | recommendation |
| 7B-13B     | 1 GPU, FP16, continuous batching |
| 30B-70B    | 2 GPUs TP, INT4, speculative decoding |
| 70B-180B   | 4 GPUs TP+PP, INT4, speculative decoding |
| 180B-405B  | 8 GPUs TP+PP |

Sizes between rows (13-30B) take the nearest row; boundaries: < 22B -> row 1, < 75B -> row 2,
<= 185B -> row 3, else row 4 (beyond 405B the article says nothing; row 4 is shown as the
nearest with a note).

The shapes as the article writes them (data/article-claims.md): "2 GPUs TP" is tensor
parallelism over the two GPUs (TP=2, PP=1); "TP+PP" is "TP within a node, PP across nodes,
pipeline depth = number of nodes", so TP = the GPUs of one node (at most the row's GPUs) and
PP = the row's GPUs / TP (4 GPUs on 8-GPU nodes: TP=4, PP=1; 8 GPUs on 4-GPU nodes: TP=4, PP=2).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The reference article, named wherever the app or the PDF says "the article". Its title is not
#: recorded in data/article-claims.md, so it is named by what it is and what it claims.
ARTICLE_NAME = (
    "the reference article (a consulting article on distributed LLM inference for private, "
    "on-premise deployments, restated in data/article-claims.md)"
)
ARTICLE_CLAIM = (
    "its headline: sub-100 ms P99 latency for 70B models on one node of 4× H100 with speculative "
    "decoding and continuous batching; its decision matrix: 1 GPU FP16 for 7B-13B, 2 GPUs TP INT4 "
    "with speculative decoding for 30B-70B, 4 GPUs TP+PP INT4 with speculative decoding for "
    "70B-180B, 8 GPUs TP+PP for 180B-405B"
)

ROWS = (
    ("7B-13B", 1, "fp16", False, "1 GPU, FP16, continuous batching", "1 GPU"),
    ("30B-70B", 2, "int4", True, "2 GPUs TP, INT4, speculative decoding", "TP"),
    ("70B-180B", 4, "int4", True, "4 GPUs TP+PP, INT4, speculative decoding", "TP+PP"),
    ("180B-405B", 8, None, False, "8 GPUs TP+PP", "TP+PP"),
)


@dataclass(frozen=True)
class ArticleAnswer:
    row: str
    gpus: int
    weights: str | None  # None: the article does not say
    speculative: bool
    text: str
    note: str
    layout: str = "TP"  # "1 GPU" | "TP" | "TP+PP"

    def shape(self, gpus_per_node: int) -> tuple[int, int] | None:
        """(TP, PP) of one replica as the article means it on nodes of ``gpus_per_node`` GPUs;
        None when the row's GPUs do not split into whole nodes that way.

        >>> a = article_answer(70.6e9)  # "2 GPUs TP"
        >>> a.shape(8), a.shape(1)
        ((2, 1), (2, 1))
        >>> b = article_answer(405e9)  # "8 GPUs TP+PP": TP inside a node, PP across nodes
        >>> b.shape(8), b.shape(4), b.shape(2), b.shape(3)
        ((8, 1), (4, 2), (2, 4), None)
        >>> article_answer(120e9).shape(8)  # "4 GPUs TP+PP" on one 8-GPU node
        (4, 1)
        """
        if self.layout != "TP+PP":
            return self.gpus, 1
        tp = min(self.gpus, gpus_per_node)
        return (tp, self.gpus // tp) if self.gpus % tp == 0 else None

    def shape_text(self, gpus_per_node: int) -> str:
        """'TP=2, PP=1', or why the row has no such shape on these nodes."""
        sh = self.shape(gpus_per_node)
        if sh is None:
            return f"no TP-within-a-node split of {self.gpus} GPUs on {gpus_per_node}-GPU nodes"
        return f"TP={sh[0]}, PP={sh[1]}"


def _row_index(b: float) -> int:
    return 0 if b < 22 else 1 if b < 75 else 2 if b <= 185 else 3


def article_answer(
    params: float, active_params: float | None = None, convention: str = ""
) -> ArticleAnswer:
    """The article's row for a model of ``params`` parameters (``active_params`` per token for
    an MoE, which the note compares: the article keys on total size only; ``convention``: how
    they are counted, physics/params.active_convention, said beside them).

    >>> article_answer(70.6e9).row, article_answer(8e9).gpus, article_answer(405e9).gpus
    ('30B-70B', 1, 8)
    >>> a = article_answer(116.8e9, 5.13e9)  # gpt-oss-120b (its card: 5.13B active)
    >>> a.row, a.note.split(";")[0]
    ('70B-180B', 'MoE: 116.8B total but 5.1B active per token')
    """
    b = params / 1e9
    i = _row_index(b)
    row = ROWS[i]
    note = ""
    if b < 7:
        note = f"{b:.1f}B is below the article's smallest row (7B-13B)"
    elif 13 < b < 30:
        note = f"{b:.1f}B falls between the article's rows; nearest row used"
    elif b > 405:
        note = f"{b:.0f}B is beyond the article's largest row (405B)"
    if active_params is not None and active_params < 0.5 * params:
        a = active_params / 1e9
        by_active = ROWS[_row_index(a)][0]
        moe = (
            f"MoE: {b:.1f}B total but {a:.1f}B active per token"
            + (f" ({convention})" if convention else "")
            + "; size alone is the wrong key: "
            f"memory follows the total (row {row[0]}), while the weight bytes read and the FLOPs "
            f"per token follow the active count, as for a {a:.0f}B dense model (row {by_active})"
        )
        note = f"{note}; {moe}" if note else moe
    return ArticleAnswer(row[0], row[1], row[2], row[3], row[4], note, row[5])

"""Article check: each claim of the reference article beside its recomputation and a verdict."""

from __future__ import annotations

import streamlit as st

from advisor.article_check import CONTEXT_TOKENS, DECISION_MATRIX, claims
from ui.state import guarded

BADGE = {"holds": ":green-badge[holds]", "wrong": ":red-badge[wrong]",
         "holds only if": ":orange-badge[holds only if]"}  # fmt: skip


#: The label above each claim's value (tests find the claims by it).
ARTICLE_SAYS = "The article says"


def md(text: str) -> str:
    """Text for st.markdown: underscores and asterisks shown as written (d_model, 2*alpha)."""
    return text.replace("_", r"\_").replace("*", r"\*")


# A fragment: the filters change only this page's body, so their reruns skip the sidebar and
# the recommendation (the page reads nothing of the scenario).
@st.fragment
def body() -> None:
    items = claims()
    counts = {v: sum(c.verdict == v for c in items) for v in BADGE}
    st.caption(
        f"{len(items)} numeric claims, recomputed for Llama-2-70B on H100 SXM at "
        f"{CONTEXT_TOKENS:,} tokens, fp16 (the article's example): "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + ". Source of the claims: data/article-claims.md."
    )
    verdicts = st.segmented_control("Show", ["all", *BADGE], default="all", key="article.show")
    for c in items:
        if verdicts not in (None, "all") and c.verdict != verdicts:
            continue
        with st.container(border=True):
            left, right = st.columns([3, 2])
            left.markdown(f"**{c.topic}** · {BADGE[c.verdict]}  \n{md(c.claim)}")
            left.markdown(f"**Recomputed:** {md(c.recomputed)}")
            left.markdown(
                f"**{'Why' if c.verdict == 'holds' else 'Assumption'}:** {md(c.assumption)}"
            )
            # Not st.metric: a value in words ("4-8 µs per token per layer") was cut at 1280 px;
            # markdown wraps it.
            right.markdown(f"{ARTICLE_SAYS}  \n**{md(c.article_value)}**")
            right.caption(f"Function: `{c.function}`" + (f"  \n{c.detail}" if c.detail else ""))
    st.subheader("The article's decision matrix")
    st.dataframe(
        [{"model size": s, "article's recommendation": r} for s, r in DECISION_MATRIX],
        hide_index=True,
    )
    st.caption("Shown as printed. Whether the search agrees is on the Recommendation page.")


st.title("Article check")
guarded("Article check", body)

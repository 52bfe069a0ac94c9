"""Appendix B: where the article's rules of thumb disagree with the computed answer."""

from __future__ import annotations

from typing import Any

from advisor.report.context import Context, article_claims
from advisor.report.document import GREY, Doc
from advisor.report.facts import pick
from advisor.report.text import clean


def _claim_text(c: Any) -> tuple[str, str, str]:
    claim = clean(pick(c, "claim", "title", "rule", "text", default=str(c)), 300)
    computed = clean(pick(c, "recomputed", "computed", default=""), 300)
    verdict = pick(c, "verdict", "status", "agrees", default="")
    if isinstance(verdict, bool):
        verdict = "agrees" if verdict else "disagrees"
    return claim, computed, clean(verdict, 40)


def article_appendix(doc: Doc, ctx: Context) -> None:
    doc.h1("Appendix B: where the article's rules of thumb disagree")
    from advisor.search.decision_matrix import ARTICLE_CLAIM, ARTICLE_NAME

    doc.para(clean(f"The article is {ARTICLE_NAME}; {ARTICLE_CLAIM}.", 600), 8.5, colour=GREY)
    dm = pick(ctx.rec, "decision_matrix") if ctx.rec is not None else None
    if dm is not None:
        doc.h2(f"Decision matrix ({clean(pick(dm, 'row', default='?'), 40)} parameters)")
        agrees = pick(dm, "agrees")
        verdict = {True: "agrees with", False: "differs from", None: "cannot be compared with"}[
            agrees
        ]
        shape = clean(pick(dm, "article_shape", default=""), 120)
        doc.para(f"The article's rule for this model size, '{clean(pick(dm, 'article_answer', default='?'), 200)}'"
                 + (f" (read as {shape} per replica)" if shape else "")
                 + f", {verdict} the computed recommendation.", 9)  # fmt: skip
        note = clean(pick(dm, "note", default="") or "", 400)
        if note:
            doc.para(note, 8.5, colour=GREY)
        diffs = [clean(x, 400) for x in (pick(dm, "differences", default=[]) or [])]
        if diffs:
            doc.bullets(diffs, 8.5)
        doc.h2("The article's other figures, recomputed")
    claims, why = article_claims(ctx.scenario, ctx.rec)
    if why:
        doc.para(why + ".", 9, colour=GREY)
        return
    rows = [_claim_text(c) for c in claims]
    disagree = [r for r in rows if r[2] and r[2].lower() not in ("agrees", "ok", "holds")]
    if not disagree:
        doc.para(f"All {len(rows)} checked rules of thumb agree with the computed answer.", 9)
        return
    doc.table([("Article", "Recomputed here", "Verdict"), *disagree], (78, 76, 24), size=8)

"""The budget section of the Recommendation page (advisor/search/budget.py, drawn for any
Deployment: the recommended one, or the deployment in focus)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor.search.budget import (
    ITEMS,
    budget,
    other_text,
    per_token_text,
    purchase_text,
    spare_text,
    usd,
)
from advisor.search.results import Deployment
from ui.format import md_escape


def budget_section(scenario, d: Deployment | None, which: str = "recommended") -> None:
    """Servers and GPUs, purchase, monthly cost by item, per user and per million tokens."""
    if d is None:
        return
    b = budget(scenario, d)
    st.subheader("Budget")
    st.caption(f"Of the {which} deployment: {md_escape(b.deployment)}.")
    c = st.columns(5)
    c[0].metric("Servers", f"{b.servers:,}",
                help=f"{b.gpus:,} {b.gpu_name} GPU{'s' if b.gpus != 1 else ''}, "
                     f"{b.gpus_per_server} per server")  # fmt: skip
    c[1].metric("GPUs", f"{b.gpus:,}", help=spare_text(b) or None)
    if b.purchase_usd is not None:
        c[2].metric("Purchase", usd(b.purchase_usd), help=purchase_text(b))
    else:
        c[2].metric("Purchase", "rented", help=f"{usd(b.gpu_hour_usd or 0.0)} per GPU-hour")
    c[3].metric("Per month", usd(b.monthly_usd),
                help=" + ".join(ITEMS[x.item] for x in b.lines))  # fmt: skip
    if b.usd_per_user_month is not None:
        c[4].metric("Per user per month", usd(b.usd_per_user_month),
                    help=f"{usd(b.monthly_usd)} / {b.users:,} concurrent users")  # fmt: skip
    else:
        c[4].metric("Per 1,000 requests", usd(b.usd_per_thousand_requests),
                    help="Load given as a rate: give concurrent users for a cost per user")  # fmt: skip
    rows = [{"item": ITEMS[x.item], "USD per month": usd(x.usd_per_month), "how": x.how}
            for x in b.lines]  # fmt: skip
    rows.append({"item": "Total", "USD per month": usd(b.monthly_usd), "how": ""})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if b.purchase_usd is not None:
        spare = spare_text(b)
        st.caption(f"Purchase: {purchase_text(b)}" + (f"; {spare}." if spare else "."))
    st.caption(
        f"{per_token_text(b)}{other_text(b)}Every price and assumption is "
        "editable in the sidebar under Cost."
    )
    with st.expander("Budget assumptions and price sources"):
        st.markdown("\n".join(f"- {md_escape(a)}" for a in b.assumptions + b.sources))

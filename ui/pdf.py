"""The PDF download block the Recommendation and Compare pages share: client and consultant
fields, a note when charts cannot be exported, and a button that builds the PDF only on click."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st


def pdf_download(
    heading: str, button: str, key: str, file_name: str, build: Callable[[str, str], bytes]
) -> None:
    """``build(client, consultant)`` runs when the button is clicked (data is a callable)."""
    from advisor.report.fonts import FALLBACK_PACKAGES, describe, unprintable
    from advisor.report.images import charts_status
    from advisor.report.text import dropped_note
    from ui.client_profile import in_this_context
    from ui.format import md_escape

    st.subheader(heading)
    c1, c2 = st.columns(2)
    client = c1.text_input("Client / engagement", max_chars=200, key=f"{key}_client")
    consultant = c2.text_input("Consultant", max_chars=200, key=f"{key}_consultant")
    for label, value in (("Client / engagement", client), ("Consultant", consultant)):
        note = dropped_note(label, value)
        if note:  # the PDF drops them, as `advisor report --client` does (and says)
            st.warning(md_escape(note))
    missing = unprintable(f"{client} {consultant}")
    if missing:
        st.warning(
            f"The PDF cannot show {md_escape(describe(missing))}: no installed font has them "
            f"(on Debian: apt-get install {FALLBACK_PACKAGES}). They will print as blanks."
        )
    ok, message = charts_status()
    if not ok:
        st.info(f"The PDF will have tables only: {message}")
    st.download_button(
        button,
        data=in_this_context(lambda: build(client, consultant)),  # the session's client profile
        file_name=file_name,
        mime="application/pdf",
        on_click="ignore",
    )

"""PDF recommendation summary (fpdf2 + kaleido). Never imports streamlit.

Entry points: :func:`advisor.report.pdf.build_report` and
:func:`advisor.report.pdf.report_bytes_for_app` (for ``st.download_button(data=callable)``).
``pdf`` puts the document together from ``document`` (the page and its building blocks),
``facts`` (what it prints about a deployment), ``context`` (what it reads) and the
``sections/`` package (one module per section); ``figures``, ``images``, ``fonts`` and ``text``
draw the charts, rasterise them, pick the fonts and clean the text.
"""

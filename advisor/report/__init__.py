"""PDF recommendation summary (fpdf2 + kaleido). Never imports streamlit.

Entry points: :func:`advisor.report.pdf.build_report` and
:func:`advisor.report.pdf.report_bytes_for_app` (for ``st.download_button(data=callable)``).
"""

"""The Streamlit app's own code: sidebar state, URL mirroring, formatting, cached advisor calls,
navigation, PDF download, saved scenarios; one file per page in ui/pages/.

Not a top-level pages/ folder: that name puts Streamlit in its legacy multipage mode, where the
first visit to a deep link such as /memory on a fresh server runs the page without app.py.
"""

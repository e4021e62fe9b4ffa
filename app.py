"""The labcore lab: `streamlit run app.py`.

Four pages (labcore/app/pages): Explorer, Compare, Encryption, Paper figures.
Every view lives in the URL, so any view is a link; the pages only render,
every number comes from `labcore` (cached by config).
"""
import streamlit as st

from labcore.app.pages import navigation

st.set_page_config(page_title="labcore lab", page_icon=":material/hub:", layout="wide")
navigation().run()

"""The labcore lab: `streamlit run app.py`.

Four pages (labcore/app/pages): Explorer, Compare, Encryption, Paper figures.
Every view lives in the URL, so any view is a link; the pages only render,
every number comes from `labcore` (cached by config).
"""
import streamlit as st

from labcore.app import jobs
from labcore.app.pages import navigation


def _connected(session_id: str) -> bool:
    """Is this browser session still connected? A refresh opens a new session and closes the old one."""
    from streamlit.runtime import Runtime

    return not Runtime.exists() or Runtime.instance().is_active_session(session_id)


jobs.watch_sessions(_connected)  # a refreshed page counts as one watcher, not two

st.set_page_config(page_title="labcore lab", page_icon=":material/hub:", layout="wide")
# Readable from the back row at 1280x720: metric values and labels wrap instead of ending in "...".
st.html("""<style>
[data-testid="stMetric"] .stMarkdownEllipsis, [data-testid="stMetric"] .stMarkdownEllipsis p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  overflow-wrap: anywhere; }
[data-testid="stMetricValue"] { font-size: 1.7rem !important; line-height: 1.25; }
/* At 1280x720 the default 6rem top padding and 2.75rem titles (two lines on most pages) took a quarter of the
   screen before the first control. */
[data-testid="stMainBlockContainer"] { padding-top: 2.5rem !important; }
[data-testid="stMain"] h1 { font-size: 2.2rem !important; padding-top: 0.5rem !important; }
/* Page names in the navigation wrap instead of ending in "..." ("FL algorithms: drift, fairness, att..."). */
[data-testid="stSidebarNavLink"] { height: auto !important; min-height: 2rem; }
[data-testid="stSidebarNavLink"] span[label], [data-testid="stSidebarNavLink"] .stMarkdownEllipsis,
[data-testid="stSidebarNavLink"] .stMarkdownEllipsis p { white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; min-width: 0; line-height: 1.3; }
</style>""")
navigation().run()

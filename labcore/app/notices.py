"""Errors on a page: readable markdown, each message once per script run.

    from labcore.app import notices
    notices.error(exc)            # an exception or its "Type: message" text (a job's error)

A missing dataset would otherwise fill a page two to seven times: the payload preview, the run's status and every
run of a comparison each catch the same `DatasetNotFoundError`, and its raw text loses its line breaks and shows a
download's urllib3 text inline. Here the message is rendered by `labcore.data.errors.readable` (the
dataset, the folders searched, why the download failed in a few words, how to get the files), the raw
download error sits in a closed expander, and the same message is drawn once per script run.
"""
from __future__ import annotations

import streamlit as st

from ..data.errors import readable

_KEY = "_lab_notices"


def _shown_this_run() -> set[str]:
    """Messages drawn in this script run. Streamlit gives every run (a fragment's too) a new `cursors` dict;
    holding it in the session keeps its identity for the comparison."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return set()
    store = st.session_state.get(_KEY)
    if store is None or store[0] is not ctx.cursors:
        store = (ctx.cursors, set())
        st.session_state[_KEY] = store
    return store[1]


def text_of(error: BaseException | str) -> str:
    """A missing file's message as it is (it names what is missing); other errors with their type."""
    if isinstance(error, str):
        return error
    return str(error) if isinstance(error, FileNotFoundError) else f"{type(error).__name__}: {error}"


def error(error: BaseException | str, where=None, prefix: str = "") -> bool:
    """Draw `error` unless the same message was drawn already in this run; True if it was drawn."""
    text = text_of(error)
    shown = _shown_this_run()
    if text in shown:
        return False
    shown.add(text)
    md, details = readable(text)
    box = where or st
    missing = isinstance(error, FileNotFoundError) or "NotFound" in text.split(":", 1)[0] or " found" in text
    box.error((f"**{prefix}** " if prefix else "") + md,
              icon=":material/folder_off:" if missing else ":material/error:")
    if details:
        with box.expander("What the download reported"):
            st.code(details, language=None, wrap_lines=True)
    return True

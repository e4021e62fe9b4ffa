"""Keyed widgets are drawn with their current value as their default.

The browser keeps each widget's value and sends them all with every rerun; the server's copy is what the page
reads. If the browser drops a widget's value while the server keeps it, the browser mounts the widget again at
its default and sends that default back with the next rerun: the view jumps to the first option or the lowest
value. Under load (a 2-core machine running the classroom sweep) every sidebar control of the Explorer did so
at once, within one rerun: fedmf, d 2, the slowest links. Drawing a widget with its current value as its
default makes such a remount show the view as it was.

The server's value still decides what the widget returns (the key's `st.session_state` entry), and a keyed
widget's identity does not include its default, so passing the current value never snaps a control back.
"""
from __future__ import annotations

from typing import Any, Iterable

import streamlit as st

_BY_INDEX = frozenset({"selectbox", "radio"})
_BY_DEFAULT = frozenset({"multiselect", "segmented_control", "pills"})
_BY_VALUE = frozenset({"slider", "select_slider", "number_input", "toggle", "checkbox"})


def at_current(widget: str, key: str, options: Iterable[Any] | None = None) -> dict[str, Any]:
    """The keyword (`value=`, `index=` or `default=`) that makes `st.<widget>(..., key=key)` mount at the key's
    current value; {} when the key has no value yet or the value is not one of `options`."""
    if widget not in _BY_INDEX | _BY_DEFAULT | _BY_VALUE:
        raise ValueError(f"widget must be one of {sorted(_BY_INDEX | _BY_DEFAULT | _BY_VALUE)}, got {widget!r}")
    if key not in st.session_state:
        return {}
    value = st.session_state[key]
    if widget in _BY_INDEX:
        opts = list(options or ())
        return {"index": opts.index(value)} if value in opts else {}
    if widget in _BY_DEFAULT:
        chosen = list(value) if isinstance(value, (list, tuple)) else [] if value is None else [value]
        if options is not None and any(v not in list(options) for v in chosen):
            return {}
        return {"default": list(value) if isinstance(value, tuple) else value}
    if widget == "select_slider" and options is not None and value not in list(options):
        return {}
    return {"value": value}

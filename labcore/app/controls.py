"""Sidebar widgets bound to the URL (see state.py for the scheme).

Flow of one script run of a page:
1. `view_state(spec)` reads `st.query_params`. If they differ from what the
   page last wrote (a pasted link, a preset, the first visit), they are parsed
   and the widgets are set from them; with no parameters at all (the page was
   picked in the navigation) the page's last view in this session is restored.
2. `sidebar(spec, vs)` draws the controls not hidden by `_hide` and returns
   the RunConfig they describe (None, with a warning shown, if the
   combination is invalid).
3. `sync_url(spec, vs, cfg)` writes the view back to the URL, so the address
   bar is always a link that reproduces the page.
"""
from __future__ import annotations

import time
import typing
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from ..config import ConfigError, RunConfig
from . import presets
from .mount import at_current
from .state import CUSTOM_TIERS, TIER_PRESETS, Control, PageSpec, chain_label, encode, parse, ratio_label, tiers_name

_TYPES = typing.get_type_hints(RunConfig)


@dataclass
class ViewState:
    """A page's view in this session: its config, options, lesson-mode settings and last URL."""

    cfg: RunConfig
    options: dict[str, Any]
    hide: frozenset[str]
    hide_names: tuple[str, ...]
    query: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # control field -> value (kept while a control is hidden)
    slots: dict[str, Any] = field(default_factory=dict)  # control field -> sidebar container below it (this run)


def wkey(spec: PageSpec, name: str) -> str:
    return f"{spec.name}.{name}"


def _store() -> dict:
    return st.session_state.setdefault("_lab_views", {})


ECHO_S = 5.0  # a query this page wrote less than this long ago is an echo, not a new link


def _same_widget(a, b) -> bool:
    if isinstance(a, list) or isinstance(b, list):  # a multiselect (a list) against its option: order is irrelevant
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and sorted(a) == sorted(b)
    return a == b


def _widget_moved(spec: PageSpec, vs: "ViewState") -> bool:
    """Did the user change one of this page's widgets since its last run?"""
    ss = st.session_state
    for c in spec.controls:
        k = wkey(spec, c.field)
        if k in ss and not _same_widget(ss[k], _to_widget(c, vs.values[c.field])):
            return True
    for name, value in vs.options.items():
        k = wkey(spec, "_" + name)
        if k in ss and not _same_widget(ss[k], value):
            return True
    return False


def view_state(spec: PageSpec) -> ViewState:
    """This page's view: from the link when it is a new one, else as the widgets left it.

    The query string a rerun brings can lag behind what the last run wrote (the browser had not applied
    it yet when the user moved the next widget), so the URL is taken as a new link only when it was not
    written by this page in the last ECHO_S seconds and no widget of the page moved.
    """
    query = {k: v for k, v in st.query_params.to_dict().items()}
    store = _store()
    vs: ViewState | None = store.get(spec.name)
    if not query and vs is not None:
        query = dict(vs.query)  # picked in the navigation: restore this page's last view
    now = time.monotonic()
    written = [(t, p, q) for t, p, q in st.session_state.get("_lab_written", []) if now - t < ECHO_S]
    st.session_state["_lab_written"] = written
    echo = any(p == spec.name and q == query for _, p, q in written)
    if vs is None or (vs.query != query and not echo and not _widget_moved(spec, vs)):
        p = parse(query, spec)
        vs = ViewState(p.cfg, p.options, p.hide, p.hide_names, query, p.warnings,
                       {c.field: getattr(p.cfg, c.field) for c in spec.controls})
        store[spec.name] = vs
        for c in spec.controls:
            st.session_state[wkey(spec, c.field)] = _to_widget(c, vs.values[c.field])
        for name, value in vs.options.items():
            st.session_state[wkey(spec, "_" + name)] = list(value) if isinstance(value, tuple) else value
    return vs


# --------------------------------------------------------------------------- value <-> widget

def _to_widget(c: Control, value):
    if c.kind == "tiers":
        return tiers_name(value)
    if c.kind == "select_slider":
        return next((o for o in c.options if o == value or (isinstance(o, float) and abs(o - value) < 1e-12)), value)
    if c.kind in ("number", "slider") and _TYPES[c.field] is float:
        return float(value)
    return value


def _from_widget(c: Control, widget_value, current):
    if c.kind == "tiers":
        return TIER_PRESETS.get(widget_value, current)
    return widget_value


def _draw(spec: PageSpec, c: Control, vs: ViewState, where) -> Any:
    k = wkey(spec, c.field)
    if k not in st.session_state:  # a control that was not shown in the last run: its state was cleaned up
        st.session_state[k] = _to_widget(c, vs.values[c.field])
    kw = dict(key=k, help=c.help or None)
    if c.kind == "select":
        return where.selectbox(c.label, c.options, **kw, **at_current("selectbox", k, c.options))
    if c.kind == "select_slider":
        fmt = ratio_label if isinstance(c.options[0], float) else str
        return where.select_slider(c.label, c.options, format_func=fmt, **kw,
                                   **at_current("select_slider", k, c.options))
    if c.kind == "slider":
        kw.update(at_current("slider", k))
        if _TYPES[c.field] is float:
            return where.slider(c.label, float(c.lo), float(c.hi), step=float(c.step or 0.1), **kw)
        return where.slider(c.label, int(c.lo), int(c.hi), step=int(c.step or 1), **kw)
    if c.kind == "number":
        kw.update(at_current("number_input", k))
        if _TYPES[c.field] is int:
            return where.number_input(c.label, int(c.lo), int(c.hi), step=int(c.step or 1), **kw)
        return where.number_input(c.label, float(c.lo), float(c.hi), step=float(c.step or 0.1), format="%.4g", **kw)
    if c.kind == "toggle":
        return where.toggle(c.label, **kw, **at_current("toggle", k))
    if c.kind == "tiers":
        opts = list(TIER_PRESETS)
        if st.session_state[k] == CUSTOM_TIERS:
            opts.append(CUSTOM_TIERS)
        return where.selectbox(c.label, opts, **kw, **at_current("selectbox", k, opts))
    if c.kind == "chain":
        opts = list(c.options)
        if tuple(st.session_state[k]) not in opts:
            opts.append(tuple(st.session_state[k]))
        return where.selectbox(c.label, opts, format_func=chain_label, **kw, **at_current("selectbox", k, opts))
    raise ValueError(f"unknown control kind {c.kind!r}")


# --------------------------------------------------------------------------- the sidebar

_SECTIONS = (
    ("Data and method", ("dataset", "method", "dim", "rank", "ratio")),
    ("Communication", ("bits", "channel", "bandwidth")),
    ("Heterogeneity", ("heterogeneity",)),
    ("Algorithm", ("algorithm",)),
    ("Privacy", ("encryption", "ckks")),
    ("Federation", ("clients", "rounds", "seed")),
)


def sidebar(spec: PageSpec, vs: ViewState, slots: tuple[str, ...] = ()) -> RunConfig | None:
    """Draw the page's visible controls; return the config they describe, or None if it is invalid.

    For each field in `slots` not hidden by lesson mode, `vs.slots[field]` is an empty sidebar container
    right below its control (or where it would be), for the page to fill once the config is known.
    """
    sb = st.sidebar
    vs.slots = {}
    if vs.hide:
        sb.caption(f"Lesson mode: {len(vs.hide)} control(s) set by this link are hidden.")
        if sb.button("Show all controls", key=wkey(spec, "unhide")):
            vs.hide, vs.hide_names = frozenset(), ()
    values = dict(vs.values)
    by_group: dict[str, list[Control]] = {}
    for c in spec.controls:
        by_group.setdefault(c.group, []).append(c)
    shown_groups = set()
    for title, groups in _SECTIONS:
        ctrls = [c for g in groups for c in by_group.get(g, [])]
        ctrls = [c for c in ctrls if c.field not in vs.hide]
        if not ctrls:
            continue
        shown_groups.update(groups)
        sb.subheader(title)
        for c in ctrls:
            if c.visible(values):
                values[c.field] = _from_widget(c, _draw(spec, c, vs, sb), values[c.field])
            if c.field in slots:
                vs.slots[c.field] = sb.container()
    rest = [c for c in spec.controls if c.group not in shown_groups and c.field not in vs.hide]
    if rest:
        with sb.expander("Advanced"):
            for c in rest:
                if c.visible(values):
                    values[c.field] = _from_widget(c, _draw(spec, c, vs, st), values[c.field])
    vs.values = values
    # a control hidden by show_if may have a neutral value (data skew on a real dataset); its own value is kept
    applied = {**values, **{c.field: c.hidden_value for c in spec.controls
                            if c.hidden_value is not None and not c.visible(values)}}
    applied.update(spec.derived({**vs.cfg.to_dict(), **applied}))  # fields the page sets (Paillier's aggregation)
    try:
        return vs.cfg.replace(**applied)
    except ConfigError as e:
        st.warning(f"These settings do not fit together: {e}. Change one of them to run.")
        return None


def option(spec: PageSpec, vs: ViewState, name: str, widget, *args, where=None, **kw):
    """A page option widget (`_name` in the URL) kept in the view state."""
    k = wkey(spec, "_" + name)
    if k not in st.session_state:
        v = vs.options[name]
        st.session_state[k] = list(v) if isinstance(v, tuple) else v
    options = args[1] if len(args) > 1 else kw.get("options")
    value = getattr(where or st, widget)(*args, key=k, **kw, **at_current(widget, k, options))
    if value is None:  # a cleared segmented control: the view, and so its link, takes the option's default
        value = spec.option_defaults()[name]
    vs.options[name] = value
    return value


def show_warnings(vs: ViewState, page: str = "") -> None:
    """The link's warnings; they stay while the view is rewritten and runs finish, until dismissed."""
    for w in vs.warnings:
        st.warning(f"Link parameter not used: {w}", icon="⚠️")
    if vs.warnings and st.button("Dismiss", key=f"{page}._dismiss_link_warnings", help="hide the warnings about this link"):
        vs.warnings = []
        st.rerun()
    if page:
        presets.banner(page, vs.query)


def sync_url(spec: PageSpec, vs: ViewState, cfg: RunConfig | None) -> dict[str, str]:
    """Write the view to the address bar (only when it changed)."""
    if cfg is not None:
        vs.cfg = cfg
    q = encode(vs.cfg, spec, vs.options, vs.hide_names)
    if q != st.query_params.to_dict():
        st.query_params.from_dict(q)
        st.session_state.setdefault("_lab_written", []).append((time.monotonic(), spec.name, dict(q)))
    vs.query = q
    return q


def share_box(spec: PageSpec, query: dict[str, str]) -> None:
    """The link of this view, for the projector or a lesson sheet."""
    from urllib.parse import urlencode

    base = ""
    try:
        base = (st.context.url or "").split("?", 1)[0]
    except Exception:
        pass
    link = (base or f"/{spec.name}") + ("?" + urlencode(query) if query else "")
    with st.sidebar.expander("Link to this view"):
        st.markdown(f"[{link}]({link})")  # (not st.code: its highlighter is a heavy first load for the browser)
        st.caption("Add `_hide=<control>,<control>` to hide controls in a lesson (e.g. `_hide=encryption,bits`).")
    presets.sidebar(spec.name)


def md_table(df, digits: int = 4) -> str:
    """A small DataFrame as a Markdown table (plain HTML in the browser: no data-grid code to load)."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:,.{digits}g}" if abs(v) < 1e6 else f"{v:,.0f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join([head, sep, *rows])


def reset(spec: PageSpec) -> None:
    """Back to the page's defaults (a button's on_click: it runs before the next script run draws widgets)."""
    _store().pop(spec.name, None)
    for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(spec.name + ".")]:
        if not k.endswith(".reset"):
            del st.session_state[k]
    st.query_params.clear()

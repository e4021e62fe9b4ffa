"""Widgets whose value lives in the URL, for the topic pages.

    ui = UrlWidgets("gist")                       # one per page; keys are "gist.<name>"
    m = ui.slider("m", "subnets m", 1, 8, default=2)
    graph = ui.select("graph", "graph", ("cora", "citeseer"), default="cora")
    ui.warnings()                                  # what a link asked for that could not be used

A widget takes its first value from the URL (or the default) once, through `st.session_state`, and is
drawn with a stable key; its `value=`/`index=` is its current value (`mount.at_current`), never the URL's,
so a browser that remounts it shows the view as it was and a change never snaps back to the link's value.
After drawing, the value is written back to the URL (only when it differs from the default), so every view
is a link.

A link sets only the page's widgets: a parameter that names none of them (and none drawn earlier in this
session, which a choice may have hidden since) is reported by name and not used, and a value longer than
`state.MAX_VALUE_CHARS` is refused unread. The report sits where the page first calls `warnings()` and is
brought up to date as later widgets are drawn, so a widget drawn below it never counts as unknown.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import streamlit as st

from .mount import at_current
from .state import MAX_VALUE_CHARS, STREAMLIT_PARAMS


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return ",".join(_text(x) for x in v)
    return str(v)


def _cut(raw: str, most: int = 40) -> str:
    return repr(raw if len(raw) <= most else raw[:most] + "...")


class UrlWidgets:
    def __init__(self, page: str):  # one instance per page run
        self.page = page
        self._shown: set[str] = set()
        self._unknown_slot = None  # where the parameters that name no widget are reported (the first warnings())

    @property
    def _known(self) -> set[str]:
        """The link names of the widgets this page drew in this session."""
        return st.session_state.setdefault(f"{self.page}._link_names", set())

    def _report_unknown(self) -> None:
        if self._unknown_slot is None:
            return
        unknown = [k for k in st.query_params if k not in self._known and k not in STREAMLIT_PARAMS]
        if not unknown:
            self._unknown_slot.empty()
            return
        self._unknown_slot.warning("Link parameter not used: " + ", ".join(f"{k}={_cut(st.query_params[k])}"
                                                                         for k in unknown)
                                   + " (this page has no control for " + ("it" if len(unknown) == 1 else "them")
                                   + ")", icon="⚠️")

    @property
    def _warnings(self) -> list[str]:
        """What a link asked for that could not be used; kept until the person dismisses it."""
        return st.session_state.setdefault(f"{self.page}._link_warnings", [])

    def key(self, name: str) -> str:
        return f"{self.page}.{name}"

    # --- the first value: URL, else default ------------------------------------------------------------
    def _initial(self, name: str, default: Any, parse: Callable[[str], Any], valid: Callable[[Any], bool],
                 allowed: str, refit: Callable[[Any], Any] | None = None) -> None:
        key = self.key(name)
        if key in st.session_state:
            try:
                ok = valid(st.session_state[key])
            except (TypeError, ValueError):
                ok = False
            if not ok:  # its range or options follow another control that changed (flalgos: clients a round per task)
                st.session_state[key] = refit(st.session_state[key]) if refit else default
            return
        raw = st.query_params.get(name)
        value = default
        if raw is not None and len(raw) > MAX_VALUE_CHARS:
            self._warnings.append(f"Link parameter not used: {name} (its value is {len(raw):,} characters long; a "
                                  f"link value is read up to {MAX_VALUE_CHARS:,})")
        elif raw is not None:
            try:
                value = parse(raw)
                if not valid(value):
                    raise ValueError
            except (ValueError, TypeError, KeyError):  # KeyError: not one of a select's options
                self._warnings.append(f"Link parameter not used: {name}={_cut(raw)}; allowed: {allowed}")
                value = default
        st.session_state[key] = value

    def _publish(self, name: str, value: Any, default: Any) -> Any:
        self._known.add(name)
        self._report_unknown()
        if value == default:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != _text(value):
            st.query_params[name] = _text(value)
        return value

    def later(self, *names: str) -> None:
        """Link names of widgets the page draws further down, after work it may still be doing in the background
        (and so return before them): not reported as unknown meanwhile."""
        self._known.update(names)

    def warnings(self) -> None:
        """Show the link warnings not shown yet in this run; they stay on every rerun until dismissed."""
        if self._unknown_slot is None:
            self._unknown_slot = st.empty()
        self._report_unknown()
        todo = [w for w in self._warnings if w not in self._shown]
        for w in todo:
            st.warning(w, icon="⚠️")
        if todo and st.button("Dismiss", key=f"{self.page}._dismiss_{len(self._shown)}",
                              help="hide the warnings about this link"):
            self._warnings.clear()
            st.rerun()
        self._shown |= set(todo)

    # --- widgets -----------------------------------------------------------------------------------------
    def slider(self, name: str, label: str, lo, hi, default, step=None, where=None, **kw):
        kind = float if isinstance(default, float) or isinstance(step, float) else int
        lo, hi, default = kind(lo), kind(hi), kind(default)
        self._initial(name, default, kind, lambda v: lo <= v <= hi, f"{lo:g} to {hi:g}",
                      refit=lambda v: min(max(kind(v), lo), hi))
        value = (where or st).slider(label, lo, hi, step=kind(step) if step is not None else None,
                                     key=self.key(name), **kw, **at_current("slider", self.key(name)))
        return self._publish(name, value, default)

    def number(self, name: str, label: str, lo, hi, default, step=None, where=None, **kw):
        kind = float if isinstance(default, float) else int
        lo, hi, default = kind(lo), kind(hi), kind(default)
        self._initial(name, default, kind, lambda v: lo <= v <= hi, f"{lo:g} to {hi:g}",
                      refit=lambda v: min(max(kind(v), lo), hi))
        value = (where or st).number_input(label, lo, hi, step=kind(step) if step is not None else None,
                                           key=self.key(name), **kw, **at_current("number_input", self.key(name)))
        return self._publish(name, value, default)

    def select(self, name: str, label: str, options: Sequence, default=None, where=None, radio: bool = False,
               **kw):
        options = list(options)
        default = options[0] if default is None else default
        by_text = {_text(o): o for o in options}
        self._initial(name, default, lambda raw: by_text[raw], lambda v: v in options,
                      ", ".join(by_text))
        widget = "radio" if radio else "selectbox"
        value = getattr(where or st, widget)(label, options, key=self.key(name), **kw,
                                             **at_current(widget, self.key(name), options))
        return self._publish(name, value, default)

    def select_slider(self, name: str, label: str, options: Sequence, default=None, where=None, **kw):
        options = list(options)
        default = options[0] if default is None else default
        by_text = {_text(o): o for o in options}
        self._initial(name, default, lambda raw: by_text[raw], lambda v: v in options, ", ".join(by_text))
        value = (where or st).select_slider(label, options=options, key=self.key(name), **kw,
                                            **at_current("select_slider", self.key(name), options))
        return self._publish(name, value, default)

    def multiselect(self, name: str, label: str, options: Sequence, default: Sequence = (), where=None, **kw):
        options = list(options)
        by_text = {_text(o): o for o in options}
        default = list(default)
        self._initial(name, default, lambda raw: [by_text[x] for x in raw.split(",") if x],
                      lambda v: all(x in options for x in v), ", ".join(by_text))
        value = (where or st).multiselect(label, options, key=self.key(name), **kw,
                                          **at_current("multiselect", self.key(name), options))
        return self._publish(name, list(value), default)

    def toggle(self, name: str, label: str, default: bool = False, where=None, **kw):
        parse = {"1": True, "0": False, "true": True, "false": False}
        self._initial(name, bool(default), lambda raw: parse[raw.lower()], lambda v: isinstance(v, bool), "1, 0")
        value = (where or st).toggle(label, key=self.key(name), **kw, **at_current("toggle", self.key(name)))
        return self._publish(name, bool(value), bool(default))

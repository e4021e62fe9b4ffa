"""Lesson: the lab's steps in the order of a lecture, each a link to the view it talks about (`labcore.app.lesson`).

Each step says what to move, what to watch and what to ask the room; its link opens the page in that state (in this
tab: the browser's Back button returns here). The steps come from the topics (`LESSON` beside their presets).
"""
from __future__ import annotations

import streamlit as st

from labcore.app import lesson
from labcore.app.pages import page_object, pages


def _step(k: int, step: lesson.Step) -> None:
    title = pages()[step.page][0]
    with st.container(border=True):
        st.markdown(f"**{k}. {step.title}** · {step.minutes} min")
        st.page_link(page_object(step.page), label=f"Open: {title}", query_params=step.query,
                     icon=":material/arrow_forward:")
        st.markdown("\n".join(f"- **{label}:** {text}" for label, text in
                              (("Move", step.move), ("Watch", step.watch), ("Ask", step.ask)) if text))
        if step.notebook:
            st.caption(f"Further, in the notebooks: `{step.notebook}`")


def render() -> None:
    st.title("Lesson: a lecture through the lab")
    steps = lesson.steps()
    st.caption(f"{len(steps)} steps, {lesson.total_minutes()} minutes. Open a step, do what it says, come back with "
               "the browser's Back button. Each link opens its page on the view the step is about; the notebooks "
               "under labs/ go further, with exercises and checks.")
    for k in range(0, len(steps), 2):  # two a row, read left to right
        for column, (n, step) in zip(st.columns(2), enumerate(steps[k:k + 2], k + 1)):
            with column:
                _step(n, step)


if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()

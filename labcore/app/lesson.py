"""The lesson path: a 50-minute lecture through the lab, one step per view.

Each topic lists its steps beside its presets (`LESSON` in `labcore/<topic>/presets.py`); the Lesson page shows them
in the topics' order. A step is a link that opens a page in the state the step talks about, with what to move,
what to watch and the question to ask the room, and the notebook that goes further.
"""
from __future__ import annotations

from dataclasses import dataclass, field

LECTURE_MINUTES = 50  # what the steps add up to (a test holds them to it)


@dataclass(frozen=True)
class Step:
    title: str
    minutes: int  # the time to give it in class
    page: str  # a page name of the navigation
    query: dict = field(default_factory=dict)  # the view's link parameters ({}: the page's defaults)
    move: str = ""  # the controls to change, in order
    watch: str = ""  # what changes on the page, and where
    ask: str = ""  # the question for the room
    notebook: str = ""  # the lab notebook that goes further, e.g. "labs/02_low_rank_updates.ipynb"


def steps() -> tuple[Step, ...]:
    """Every topic's steps, in the topics' order."""
    from .. import topics

    return tuple(s for t in topics.all_topics() for s in t.lesson_list())


def total_minutes() -> int:
    return sum(s.minutes for s in steps())

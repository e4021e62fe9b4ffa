"""The topic registry: every paper or course report of the lab is one folder `labcore/<topic>/`.

A topic declares itself in `labcore/<topic>/topic.py` with a module-level `TOPIC = Topic(...)`: its name,
title, paper, the section of the app's navigation it sits in, and where its parts live (the module that
registers its figure cards, its app pages, its presets, its notebook exercise checks). Nothing else has to
be edited to add a topic: the card registry (`labcore.figures`), the app's navigation (`labcore.app.pages`),
the notebook helpers (`labcore.labs_support`) and `labcore topics` all read this registry.

    from labcore import topics
    [t.name for t in topics.all_topics()]        # in the navigation's order
    topics.get("fair").pages                       # its app pages
    topics.card_topic("gist-table1-cora")          # the topic a card belongs to

`topic.py` must stay light (no torch, no streamlit at import): listing the topics imports every one of them.
Topics outside the `labcore` package (a course's own, or a test's) are found through `LABCORE_TOPICS`, a
comma-separated list of packages that each have a `topic` module.
"""
from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

TOPICS_ENV = "LABCORE_TOPICS"
SECTIONS = ("Recommendation papers", "Course reports")  # the topics' navigation sections, after the core "Lab"


@dataclass(frozen=True)
class Page:
    """One app page of a topic: a Streamlit script that renders when run as `__main__`."""

    name: str  # the page's URL path (unique across the app), e.g. "gist"
    title: str  # the navigation's label
    icon: str  # a Streamlit icon, e.g. ":material/hub:"
    file: Path  # the page script


@dataclass(frozen=True)
class Topic:
    name: str  # the package's last name, e.g. "gist"; card ids start with `card_prefix`
    title: str  # "GIST: GCN independent subnet training"
    paper: str  # what it reproduces: authors, title, and the file under shared/papers
    section: str  # one of SECTIONS (or a new section name, listed after them)
    order: int  # position in lists and in the navigation (CoLR 10, FAIR 20, STTFedRec 30, ...)
    package: str = ""  # the package holding the topic; filled in by discovery
    card_prefix: str = ""  # card ids of this topic start with it; default "<name>-"
    cards: str | None = None  # module (relative to the package, e.g. ".cards") that registers the cards
    pages: tuple[Page, ...] = ()
    presets: str | None = None  # module with a `PRESETS` tuple of `labcore.app.presets.Preset` (and the topic's
    #                              steps of the lesson path, a `LESSON` tuple of `labcore.app.lesson.Step`)
    exercises: str | None = None  # module with the notebook exercise checks and lab configs
    notebook: str | None = None  # its notebook under labs/, e.g. "labs/10_gist.ipynb"
    cli: str | None = None  # module with `add_commands(subparsers)`: the topic's own `labcore <command>`s
    config: str | None = None  # "module:function" building the topic's config from a dict of strings (its
    #                             stored results list their configs that way; a test rebuilds their cache keys)
    summary: str = ""  # one sentence: what a person does in this topic
    prefetch: str | None = None  # "module:function(configs_by_card, jobs)" training the uncached runs of the
    #                               topic's own configs in `jobs` processes (`labcore figure ... --full --jobs N`)
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"name={self.name!r} is invalid: a topic's name is a Python identifier")
        if not self.card_prefix:
            object.__setattr__(self, "card_prefix", f"{self.name}-")

    def function(self, ref: str | None):
        """The function a "module:function" reference names (module relative to the package), or None."""
        if not ref:
            return None
        mod, name = ref.split(":")
        return getattr(self.module(mod), name)

    def module(self, part: str | None):
        """Import one of the topic's parts ('.cards', '.presets', '.exercises'), or None if it has none."""
        if not part:
            return None
        return importlib.import_module(part, self.package) if part.startswith(".") else importlib.import_module(part)

    def config_from_dict(self):
        """The function that builds this topic's config from a dict (URL / JSON form), or None."""
        if not self.config:
            return None
        module, _, name = self.config.partition(":")
        return getattr(self.module(module), name)

    def load_cards(self) -> None:
        self.module(self.cards)

    def preset_list(self) -> tuple:
        mod = self.module(self.presets)
        return tuple(getattr(mod, "PRESETS", ())) if mod else ()

    def lesson_list(self) -> tuple:
        mod = self.module(self.presets)
        return tuple(getattr(mod, "LESSON", ())) if mod else ()

    def exercise_module(self):
        return self.module(self.exercises)


class UnknownTopicError(KeyError, ValueError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


_CACHE: dict[tuple, tuple[Topic, ...]] = {}


@functools.cache
def _builtin_packages() -> tuple[str, ...]:
    """`labcore.<x>` for every subpackage with a topic module. Scanned once a process: the scan (a directory
    listing and a stat per entry) ran on every lookup, about 800 times in `labcore topics` (2.5 of its 9 s)."""
    here = Path(__file__).resolve().parent
    return tuple(f"labcore.{m.name}" for m in pkgutil.iter_modules([str(here)])
                 if m.ispkg and (here / m.name / "topic.py").exists())


def _packages() -> list[str]:
    """The built-in topic packages, then the packages named in LABCORE_TOPICS (read on each call: tests and
    notebooks may set it after import)."""
    found = list(_builtin_packages())
    extra = [p.strip() for p in os.environ.get(TOPICS_ENV, "").split(",") if p.strip()]
    return found + [p for p in extra if p not in found]


def _load(package: str) -> Topic:
    try:
        mod = importlib.import_module(f"{package}.topic")
    except ImportError as e:
        raise ImportError(f"{TOPICS_ENV} names {package!r}, but {package}.topic cannot be imported: {e}") from e
    topic = getattr(mod, "TOPIC", None)
    if not isinstance(topic, Topic):
        raise TypeError(f"{package}.topic must define TOPIC = labcore.topics.Topic(...)")
    if topic.package != package:
        topic = Topic(**{**topic.__dict__, "package": package})
    return topic


def all_topics() -> tuple[Topic, ...]:
    """Every topic, in the navigation's order (section, then `order`, then name)."""
    key = tuple(_packages())
    if key not in _CACHE:
        topics = [_load(p) for p in key]
        names = [t.name for t in topics]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"topic name(s) {', '.join(dup)} declared twice")
        sections = list(SECTIONS) + sorted({t.section for t in topics} - set(SECTIONS))
        _CACHE[key] = tuple(sorted(topics, key=lambda t: (sections.index(t.section), t.order, t.name)))
    return _CACHE[key]


def names() -> list[str]:
    return [t.name for t in all_topics()]


def get(name: str) -> Topic:
    for t in all_topics():
        if t.name == name:
            return t
    raise UnknownTopicError(f"unknown topic {name!r}; topics: {', '.join(names())}")


def card_topic(card_id: str) -> Topic | None:
    """The topic whose card prefix starts `card_id` (the longest prefix wins)."""
    best = None
    for t in all_topics():
        if card_id.startswith(t.card_prefix) and (best is None or len(t.card_prefix) > len(best.card_prefix)):
            best = t
    return best


def all_pages() -> list[tuple[Topic, Page]]:
    return [(t, p) for t in all_topics() for p in t.pages]


def all_presets() -> tuple:
    return tuple(p for t in all_topics() for p in t.preset_list())

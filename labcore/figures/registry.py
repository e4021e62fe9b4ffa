"""Figure cards: one paper figure or table, its config grid, the paper's numbers and our reproduction.

A card knows how to build the runs behind a figure (`configs(size)`), turn
their results into one small DataFrame (`compute(size, progress)`), and draw
ours over the paper's (`plot(ours, paper)`). Two sizes:

* ``smoke``: synthetic data and a handful of rounds, seconds per card (CI);
  it exercises the whole pipeline but its numbers mean nothing.
* ``full``: the real reproduction on the paper's datasets and settings.

Runs are cached on disk by config key (see `labcore.fed.engine.run`), so
cards that share a config share the run: Fig. 3's CoLR runs are also Fig. 4's,
Fig. 5's and Table 2's.

Full reproductions are committed as ``results/<id>.csv`` (our numbers) and
``results/<id>.json`` (configs, command, runtime, date) so the app and the
notebooks can show them at once: `stored(card_id)`.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import numbers
import os
import platform
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from ..config import RunConfig

SIZES = ("smoke", "full")
SMOKE_VERDICT = "smoke run: checks the pipeline only, no verdict on the paper"
SMOKE_NOTE = "smoke size (small synthetic data): not comparable with the paper"
SMOKE_TITLE = "SMOKE RUN, small synthetic data: not the paper's numbers"
COMPARE_COLUMNS = ("quantity", "paper", "ours", "ok", "kind", "note")
# What a comparison row is (the verdict rule, docs/reproduction.md): a number the paper prints, checked at a
# numeric tolerance; a claim the paper states, checked as stated ("all" means all); or shown and not checked.
ROW_KINDS = ("number", "claim", "shown")
SPREAD_SIGMAS = 2.0  # a number's tolerance: this many standard deviations of (ours - paper's)
SPREAD_SEEDS = (1, 2)  # besides seed 0: the runs behind a checked number, for its seed spread


def seed_tolerance(std: float, seeds: int, paper_runs: int, stated: float) -> float:
    """How far our mean over `seeds` may be from the paper's mean over `paper_runs`: SPREAD_SIGMAS standard
    deviations of their difference, each run spread as ours (`std` over our seeds, ddof 0); `stated` (the card's
    own figure, said on the card) where we have no spread (fewer than two seeds)."""
    if seeds < 2 or not std == std:
        return stated
    sample_std = std * math.sqrt(seeds / (seeds - 1))
    return SPREAD_SIGMAS * sample_std * math.sqrt(1 / paper_runs + 1 / seeds)

KINDS = ("figure", "table")
RESULTS_ENV = "LABCORE_RESULTS"


@dataclass
class Computed:
    """A card's numbers and what its stored result keeps beside them (a `compute_fn` may return this instead of
    a bare frame): `meta` goes into results/<id>.json (a topic's own run costs, a grid's timing), each of `tables`
    into results/<name>.csv (a side table a page reads, such as Table 3's per-part timings)."""

    ours: pd.DataFrame
    meta: dict = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def timing_meta(timings: dict[str, dict | None]) -> dict:
    """What a stored card keeps of the runs a topic trained itself (not engine runs, which the card writer times):
    by run key, the CPU seconds each took as it was trained (`{"seconds", "cpu_seconds"}`; None or a missing value
    for a run stored without a timing), the sums of wall-clock and CPU seconds, and how many runs had none."""
    wall = [t["seconds"] for t in timings.values() if t and t.get("seconds") is not None]
    cpu = {k: (t or {}).get("cpu_seconds") for k, t in timings.items()}
    timed = [v for v in cpu.values() if v is not None]
    return {"standalone_runtime_s": round(float(sum(wall)), 1) if wall else None,
            "standalone_cpu_s": round(float(sum(timed)), 1) if timed else None,
            "runs_without_time": len(timings) - len(wall), "runs_without_cpu_time": len(cpu) - len(timed),
            "run_cpu_s": cpu}


class InCardClock:
    """Times runs a card makes in its own process (not through a run cache): `time(key, fn, *args, **kwargs)` runs and records
    `fn`, and the instance, called with the card's configs, gives their `timing_meta` (a `with_run_times` timings)."""

    def __init__(self):
        self.seconds: dict[str, dict] = {}

    def time(self, key: str, fn: Callable, *args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn(*args, **kwargs)
        self.seconds[key] = {"seconds": round(time.perf_counter() - t0, 2),
                             "cpu_seconds": round(time.process_time() - c0, 2)}
        return out

    def __call__(self, configs: list) -> dict:
        return timing_meta({c.key(): self.seconds.get(c.key()) for c in dict.fromkeys(configs)})


def with_run_times(card: "FigureCard", timings: Callable[[list], dict]) -> "FigureCard":
    """The card, its compute also returning what `timings(card.configs(size))` says of its runs (`timing_meta`
    of a topic whose runs are not the engine's)."""
    def compute(size, progress):
        out = card.compute_fn(size, progress)
        out = out if isinstance(out, Computed) else Computed(out)
        return Computed(out.ours, {**out.meta, **timings(card.configs(size))}, out.tables)
    return dataclasses.replace(card, compute_fn=compute)


@dataclass(frozen=True, eq=False)
class FigureCard:
    """One figure or table of a paper, reproducible at two sizes."""

    id: str  # e.g. "colr-fig3-ml1m"
    title: str
    caption: str  # the paper's caption, verbatim
    kind: str  # "figure" or "table"
    paper: pd.DataFrame  # the paper's numbers where the text gives them (may have no rows)
    configs: Callable[[str], list[RunConfig]]  # size -> the runs behind the card (empty: analytic card)
    compute_fn: Callable[[str, bool], pd.DataFrame | Computed]  # (size, progress) -> our numbers
    plot_fn: Callable[[pd.DataFrame, pd.DataFrame], object]  # (ours, paper) -> plotly Figure
    compare_fn: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]  # (ours, paper) -> COMPARE_COLUMNS
    tolerance: float | None  # in the unit of `tolerance_text`; None: a shape check only
    tolerance_text: str  # what "within tolerance" means for this card
    expected: str  # the expected shape of the result, in one or two sentences
    columns: tuple[str, ...]  # columns `compute` returns (the plot and the check use them)
    notes: tuple[str, ...] = ()  # deviations from the paper (split, dataset subset, rounds, ...)
    paper_ref: str = ""  # where in the paper the numbers come from
    dataset: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} is invalid: allowed values are {', '.join(KINDS)}")

    def compute(self, size: str = "smoke", progress: bool = False) -> pd.DataFrame:
        return self.computed(size, progress).ours

    def computed(self, size: str = "smoke", progress: bool = False) -> Computed:
        _check_size(size)
        out = self.compute_fn(size, progress)
        out = out if isinstance(out, Computed) else Computed(out)
        missing = [c for c in self.columns if c not in out.ours.columns]
        if missing:
            raise RuntimeError(f"card {self.id} computed no column(s) {', '.join(missing)}")
        return out

    def plot(self, ours: pd.DataFrame, paper: pd.DataFrame | None = None):
        return self.plot_fn(ours, self.paper if paper is None else paper)

    def compare(self, ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
        """Ours beside the paper's, one quantity a row, each of a kind in ROW_KINDS; `ok` is None for rows shown
        for information."""
        out = self.compare_fn(ours, self.paper if paper is None else paper)
        out = out.reindex(columns=list(COMPARE_COLUMNS))
        out["kind"] = [_row_kind(self.id, k, ok, p) for k, ok, p in zip(out["kind"], out["ok"], out["paper"])]
        return _one_type_a_column(out)

    def check(self, ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> bool:
        """Within tolerance: every checked row of `compare` is ok (and there is at least one)."""
        ok = [v for v in self.compare(ours, paper)["ok"] if _checked(v)]
        return bool(ok) and all(bool(v) for v in ok)

    def tally(self, ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> "Tally":
        return Tally.of(self.compare(ours, paper))

    def describe(self) -> str:
        lines = [f"{self.id}  [{self.kind}]  {self.title}", f"  paper: {self.caption}"]
        if self.paper_ref:
            lines.append(f"  numbers: {self.paper_ref}")
        lines.append(f"  expected: {self.expected}")
        lines.append(f"  tolerance: {self.tolerance_text}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _checked(ok) -> bool:
    return ok is not None and ok == ok


def _row_kind(card_id: str, kind, ok, paper) -> str:
    """A row's kind as its card states it; a card that states none gets 'shown' for an unchecked row, 'number'
    for a checked row beside a number and 'claim' otherwise. A checked row called shown, or an unchecked one
    called anything else, is the card's error."""
    if not isinstance(kind, str):
        number = isinstance(paper, numbers.Real) and not isinstance(paper, bool) and paper == paper
        kind = "shown" if not _checked(ok) else "number" if number else "claim"
    if kind not in ROW_KINDS:
        raise ValueError(f"card {card_id}: kind={kind!r} is invalid: allowed values are {', '.join(ROW_KINDS)}")
    if (kind == "shown") == _checked(ok):
        raise ValueError(f"card {card_id}: a row of kind {kind!r} has ok={ok!r}: a shown row is not checked "
                         "(ok None) and a number or claim is (ok True or False)")
    return kind


@dataclass(frozen=True)
class Tally:
    """How a card's rows fare, kind by kind: the card's headline."""

    numbers_within: int = 0
    numbers: int = 0
    claims_hold: int = 0
    claims: int = 0
    shown: int = 0

    @classmethod
    def of(cls, table: pd.DataFrame) -> "Tally":
        kinds, ok = list(table["kind"]), [bool(v) if _checked(v) else False for v in table["ok"]]
        return cls(sum(k == "number" and o for k, o in zip(kinds, ok)), kinds.count("number"),
                   sum(k == "claim" and o for k, o in zip(kinds, ok)), kinds.count("claim"), kinds.count("shown"))

    def __add__(self, other: "Tally") -> "Tally":
        return Tally(*(a + b for a, b in zip(self.counts(), other.counts())))

    def counts(self) -> tuple[int, int, int, int, int]:
        return self.numbers_within, self.numbers, self.claims_hold, self.claims, self.shown

    @property
    def headline(self) -> str:
        return (f"numbers: {self.numbers_within} of {self.numbers} within; claims: {self.claims_hold} of "
                f"{self.claims} hold; shown: {self.shown}")


def _one_type_a_column(table: pd.DataFrame) -> pd.DataFrame:
    """A column mixing text ("0.55 < 1.76", "4/5") and numbers gets its numbers as text, as they print: the app's
    table widget (Arrow) takes one type a column and otherwise writes a traceback to the terminal on every view."""
    for col in ("quantity", "paper", "ours", "note"):
        text = {isinstance(v, str) for v in table[col] if pd.notna(v)}
        if text == {True, False}:
            table[col] = [str(v) if pd.notna(v) and not isinstance(v, str) else v for v in table[col]]
    return table


@dataclass(eq=False)
class CardResult:
    card_id: str
    ours: pd.DataFrame
    paper: pd.DataFrame
    figure: object  # plotly Figure
    runtime_s: float
    within_tolerance: bool | None  # None at smoke size: a smoke run gives no verdict on the paper
    size: str
    meta: dict = field(default_factory=dict)  # config list, command, date (stored results)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # side tables stored beside the card's

    def comparison(self) -> pd.DataFrame:
        """Ours beside the paper's; at smoke size the `ok` column is empty (the numbers are not comparable)."""
        out = get(self.card_id).compare(self.ours, self.paper)
        if self.size == "smoke":
            out["ok"] = None
            out["note"] = SMOKE_NOTE
        return out

    @property
    def verdict(self) -> str:
        """The card's headline ('numbers: a of b within; claims: c of d hold; shown: e'), or what a smoke run is."""
        if self.size == "smoke":
            return SMOKE_VERDICT
        return get(self.card_id).tally(self.ours, self.paper).headline


_CARDS: dict[str, FigureCard] = {}


class UnknownCardError(KeyError, ValueError):
    """No card has this id; the message lists the valid ids."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def register(card: FigureCard) -> FigureCard:
    if card.id in _CARDS:
        raise ValueError(f"card {card.id} is registered twice")
    _CARDS[card.id] = card
    return card


_LOADED: set[str] = set()  # its card module imported, or being imported by the thread that holds _LOADING
_READY: set[str] = set()  # its card module imported
# The app's sessions run in threads: two students opening a topic's cards at once would otherwise see the topic
# marked loaded by the other before its cards were registered, and get "unknown figure card". Reentrant: a card
# module may look up another card while it loads.
_LOADING = threading.RLock()


def _ensure_loaded(card_id: str | None = None) -> None:
    """Import the card module of every topic (`labcore.topics`), or only of the topic that owns `card_id`."""
    from .. import topics

    owner = topics.card_topic(card_id) if card_id else None
    for t in (owner,) if owner else topics.all_topics():
        if t.package in _READY:
            continue
        with _LOADING:
            if t.package not in _LOADED:
                _LOADED.add(t.package)  # before the import: a lookup from inside it must not import it again
                t.load_cards()
                _READY.add(t.package)


def _topic_rank(card_id: str) -> int:
    """Cards list in the topics' order (labcore.topics), whatever module a caller imported first."""
    from .. import topics

    names = [t.name for t in topics.all_topics()]
    t = topics.card_topic(card_id)
    return names.index(t.name) if t else len(names)


def _active() -> dict[str, FigureCard]:
    """The cards of the topics registered now (a topic named in LABCORE_TOPICS counts only while it is)."""
    from .. import topics

    _ensure_loaded()
    return {cid: c for cid, c in _CARDS.items() if topics.card_topic(cid) is not None}


def list_cards() -> list[FigureCard]:
    cards = _active()
    order = {cid: i for i, cid in enumerate(cards)}
    return sorted(cards.values(), key=lambda c: (_topic_rank(c.id), order[c.id]))


def card_ids() -> list[str]:
    return [c.id for c in list_cards()]


def get(card_id: str) -> FigureCard:
    from .. import topics

    _ensure_loaded(card_id)  # only the owner's cards: one topic's card needs no other topic to import
    if card_id in _CARDS and topics.card_topic(card_id) is not None:
        return _CARDS[card_id]
    raise UnknownCardError(f"unknown figure card {card_id!r}; valid ids: {', '.join(card_ids())}")


def _check_size(size: str) -> None:
    if size not in SIZES:
        raise ValueError(f"size={size!r} is invalid: allowed values are {', '.join(SIZES)}")


def reproduce(card_id: str, size: str = "smoke", progress: bool = False) -> CardResult:
    """Run (or read from the run cache) every config of the card and compare with the paper."""
    card = get(card_id)
    _check_size(size)
    t0 = time.perf_counter()
    computed = card.computed(size, progress)
    ours = computed.ours
    runtime = time.perf_counter() - t0
    paper = card.paper.copy()
    figure = card.plot(ours, paper)
    smoke = size == "smoke"
    if smoke:
        _mark_smoke(figure)
    return CardResult(card.id, ours, paper, figure, runtime, None if smoke else card.check(ours, paper), size,
                      {"configs": [c.to_query() for c in card.configs(size)], **computed.meta}, computed.tables)


def _mark_smoke(figure) -> None:
    """A smoke run's figure says what it is in its title (a plotly Figure; other objects are left alone)."""
    layout = getattr(figure, "layout", None)
    if layout is None:
        return
    title = (layout.title.text or "") if layout.title else ""
    figure.update_layout(title=dict(text=f"<b>{SMOKE_TITLE}</b><br>{title}" if title else f"<b>{SMOKE_TITLE}</b>"),
                         margin=dict(t=110))


# --- stored full-size results --------------------------------------------------
def results_dir() -> Path:
    """`$LABCORE_RESULTS`, else the checkout's results/ folder."""
    env = os.environ.get(RESULTS_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[2] / "results"


def save(result: CardResult, command: str, folder: Path | str | None = None, runtime_s: float | None = None) -> Path:
    """Write results/<id>.csv and results/<id>.json (configs, command, runtime, date) of a full-size result. The
    card's notes stay on the card, where a reader sees them: a copy here would go stale when they are corrected."""
    if result.size != "full":
        raise ValueError(f"size={result.size!r} is invalid for a stored result: only full-size reproductions are "
                         f"stored (a smoke run says nothing about the paper)")
    folder = Path(folder) if folder else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    card = get(result.card_id)
    result.ours.to_csv(folder / f"{card.id}.csv", index=False, float_format="%.6g")
    meta = {
        "card": card.id,
        "title": card.title,
        "size": result.size,
        "command": command,
        "runtime_s": round(float(runtime_s if runtime_s is not None else result.runtime_s), 1),  # this command
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "configs": [{"key": c.key(), **c.to_query()} for c in card.configs(result.size)],
    }
    if result.size == "full":
        from .runs import run_times, write_run_times

        if "standalone_runtime_s" not in result.meta:  # else the topic timed its own (non-engine) runs itself
            times = run_times(folder)
            secs, cpus = dict(zip(times["key"], times["seconds"])), dict(zip(times["key"], times["cpu_seconds"]))
            keys = [c["key"] for c in meta["configs"]]
            known = [k for k in keys if k in secs and secs[k] == secs[k]]
            # the card's own runs, trained alone (sharing none with other cards): wall-clock and CPU seconds
            meta["standalone_runtime_s"] = round(float(sum(secs[k] for k in known)), 1) if keys else None
            cpu = [cpus[k] for k in known if cpus[k] == cpus[k]]
            meta["standalone_cpu_s"] = round(float(sum(cpu)), 1) if keys else None
            meta["runs_without_time"] = len(keys) - len(known)  # stored without a timing, trained elsewhere
            meta["runs_without_cpu_time"] = len(keys) - len(cpu)
            for c in meta["configs"]:
                c["train_seconds"] = None if secs.get(c["key"]) != secs.get(c["key"]) else secs.get(c["key"])
                c["train_cpu_seconds"] = None if cpus.get(c["key"]) != cpus.get(c["key"]) else cpus.get(c["key"])
            meta["run_cpu_s"] = {c["key"]: c["train_cpu_seconds"] for c in meta["configs"]}
        write_run_times(folder)
    meta.update({k: v for k, v in result.meta.items() if k not in meta})
    (folder / f"{card.id}.json").write_text(json.dumps(meta, indent=1, default=list) + "\n")
    for name, table in result.tables.items():
        table.to_csv(folder / f"{name}.csv", index=False, float_format="%.6g")
        side = {"card": card.id, "command": command, "date": meta["date"], "machine": meta["machine"]}
        (folder / f"{name}.json").write_text(json.dumps(side, indent=1) + "\n")
    return folder / f"{card.id}.csv"


def stored(card_id: str, folder: Path | str | None = None, figure: bool = True) -> CardResult | None:
    """The committed full-size reproduction of a card, or None if there is none. figure=False: without its plot
    (None), for a listing that needs only the verdict (drawing every card's plot was most of `figure --list`)."""
    card = get(card_id)
    folder = Path(folder) if folder else results_dir()
    csv, meta_path = folder / f"{card.id}.csv", folder / f"{card.id}.json"
    if not csv.exists():
        return None
    ours = pd.read_csv(csv)
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    paper = card.paper.copy()
    runtime = meta.get("standalone_runtime_s") or meta.get("runtime_s")  # its runs' training time if logged
    drawn = card.plot(ours, paper) if figure else None
    return CardResult(card.id, ours, paper, drawn, float(runtime if runtime else "nan"), card.check(ours, paper),
                      meta.get("size", "full"), meta)

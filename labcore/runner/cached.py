"""Run or load: a stored result at once, else one trainer per config across processes (`lock.one_trainer`),
resumed from its checkpoint, its rounds under a progress bar. The body of every cached `run()`."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .checkpoint import resume
from .lock import one_trainer
from .rounds import train_rounds
from .store import RESULT, read_stored


def run_cached(make_sim: Callable[[], object], folder: Path | None, load: Callable[[Path], object],
               make_bar: Callable[[int], object] | None = None, **kw):
    """The body of every cached `run()` (this engine's and FAIR's): `train_cached` with rounds played under a
    progress bar from `make_bar(start round)`. folder None: no cache, train from round 0. `kw`:
    `run_with_progress`'s on_round, should_stop, postfix."""
    if folder is None:
        sim = make_sim()
        return run_with_progress(sim, None, make_bar(0) if make_bar else None, **kw)
    res = train_cached(make_sim, folder, load,
                       lambda sim, _resumed: run_with_progress(sim, folder, make_bar(sim.round) if make_bar else None,
                                                               **kw),
                       should_stop=kw.get("should_stop"))
    return res if res is not None else make_sim().result(False)  # stopped while another process trained it


def train_cached(make_sim: Callable[[], object], folder: Path, load: Callable[[Path], object],
                 train: Callable[[object, bool], object], *, should_stop: Callable[[], bool] | None = None,
                 on_wait: Callable[[], None] | None = None):
    """A stored result at once; otherwise one trainer per config across processes (`one_trainer`: a second one
    waits, then reads the first's result or resumes from its checkpoint) and `train(sim, resumed)` plays the
    rounds of a simulation resumed from the folder's checkpoint if it has one. A stored result that fails its
    check (`read_stored`) is reported and recomputed. None when `should_stop()` turned true while another process
    held the config. Shared by `run_cached` and the app's jobs (which publish each round to their pages)."""
    res = read_stored(folder, load, quiet=True)  # reported below, once the lock is held
    if res is not None:
        return res
    with one_trainer(folder, should_stop, on_wait) as mine:
        res = read_stored(folder, load)  # the trainer this one waited for may have finished it
        if res is not None:
            return res
        if not mine:
            return None
        (folder / RESULT).unlink(missing_ok=True)  # a damaged one: the folder is no longer stored
        sim = make_sim()
        resumed = resume(sim, folder)
        if not resumed and sim.round:  # a checkpoint that failed half-way through loading: a fresh start
            sim = make_sim()
        return train(sim, resumed)


def run_with_progress(sim, folder: Path | None, bar=None, *, on_round: Callable[[dict], None] | None = None,
                      should_stop: Callable[[], bool] | None = None,
                      postfix: Callable[[dict], dict | None] | None = None):
    """`train_rounds` with a progress bar, a per-round callback and a checkpoint on Ctrl-C: the body of every
    `run()` (this engine's and FAIR's; any simulation with cfg, round, step, state, load_state, result)."""

    def after_step(_sim, row: dict) -> None:
        if on_round is not None:
            on_round(row)
        if bar is not None:
            bar.update(1)
            shown = postfix(row) if postfix is not None else None
            if shown:
                bar.set_postfix(shown)

    try:
        return train_rounds(sim, folder, should_stop=should_stop, after_step=after_step)
    finally:
        if bar is not None:
            bar.close()

"""The one round loop of the CLI, the cards and the app, for any simulation (cfg, round, step, state, load_state,
result): checkpoints on the way and on Ctrl-C, and the finished result stored with its timing."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from .checkpoint import CHECKPOINT, save_checkpoint
from .store import timing

# A periodic checkpoint waits until this many times the last one's writing time has gone to training: most
# checkpoints take milliseconds, but SCAFFOLD's keeps every client's variate (1.1 GB on MovieLens-1M, 4 to 5 s
# to write), which every 50 rounds (about 1 s of training) would cost more than the training. A stop or Ctrl-C
# always writes one.
CHECKPOINT_OVERHEAD = 10


class _CpuClock:
    """CPU seconds of the training: the process's, or the thread's when it trains in a thread (the app's jobs
    share one process; the engine's torch and compiled loops run on the calling thread)."""

    def __init__(self):
        main = threading.current_thread() is threading.main_thread()
        self.name, self.now = ("process", time.process_time) if main else ("thread", time.thread_time)


@contextlib.contextmanager
def _sigint_at_round_end():
    """Ctrl-C (or a notebook's interrupt) while rounds train ends the loop at the next round boundary, so that the
    checkpoint holds a whole round; a second Ctrl-C stops at once (the round in progress is then dropped). Yields
    a function telling whether a stop was asked. Only in the main thread with Python's default handler (a thread
    receives no signals; a handler someone else set is kept)."""
    asked = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield lambda: False
        return

    def handler(signum, frame):
        if asked:
            signal.default_int_handler(signum, frame)
        asked.append(signum)
        print("\nstopping at the end of this round (Ctrl-C again to stop at once and drop the round)",
              file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def train_rounds(sim, folder: Path | None, *, should_stop: Callable[[], bool] | None = None,
                 after_step: Callable[[object, dict], None] | None = None):
    """Play rounds until the last one or until `should_stop()`; the one round loop of the CLI, cards and app.

    With a folder: a checkpoint every `checkpoint_every` rounds (unless the last one took more than a tenth of
    the time since: `CHECKPOINT_OVERHEAD`) and when stopped early or interrupted, and the finished result stored
    (its checkpoint removed). Checkpoints are written only between rounds: a round interrupted half-way (its
    tables updated, its row not yet kept) is never saved; the last checkpoint stands and the round replays.
    """
    cfg = sim.cfg
    clock = _CpuClock()
    started, t0, c0 = sim.round, time.perf_counter(), clock.now()
    saved_at, save_cost = t0, 0.0
    between_rounds = True
    try:
        with _sigint_at_round_end() as interrupted:
            while sim.round < cfg.rounds:
                if interrupted():
                    raise KeyboardInterrupt
                if should_stop is not None and should_stop():
                    break
                if getattr(sim, "dp", None) is not None and sim.dp.budget_spent(sim.rows):  # the result's notes say why
                    break
                between_rounds = False
                row = sim.step()
                between_rounds = True
                if after_step is not None:
                    after_step(sim, row)
                if (folder is not None and sim.round % cfg.checkpoint_every == 0 and sim.round < cfg.rounds
                        and time.perf_counter() - saved_at >= CHECKPOINT_OVERHEAD * save_cost):
                    t1 = time.perf_counter()
                    save_checkpoint(sim, folder)
                    saved_at = time.perf_counter()
                    save_cost = saved_at - t1
    except KeyboardInterrupt:
        if folder is not None:
            if between_rounds and sim.round > started:
                save_checkpoint(sim, folder)
                print(f"\ninterrupted after round {sim.round}; run the same command again to resume",
                      file=sys.stderr)
            elif not between_rounds:
                print(f"\ninterrupted during round {sim.round + 1}; its partial work is dropped and the run "
                      "resumes from its last checkpoint", file=sys.stderr)
        raise
    complete = sim.round >= cfg.rounds or (getattr(sim, "dp", None) is not None and sim.dp.budget_spent(sim.rows))
    res = sim.result(complete)
    if folder is not None:
        if complete:
            _check_whole(res.table, sim.round)  # every round played, once (a DP budget may stop it early)
            res.save(folder, timing(time.perf_counter() - t0, clock.now() - c0, clock.name, started, cfg.rounds))
            (folder / CHECKPOINT).unlink(missing_ok=True)
        elif sim.round > started:
            save_checkpoint(sim, folder)
    return res


def _check_whole(table, rounds: int) -> None:
    """Refuse to store as complete a table that does not hold every round once, in order."""
    got = table["round"].tolist() if "round" in table else []
    if got != list(range(rounds)):
        raise RuntimeError(f"not storing the run as complete: its table holds rounds {got[:3]}...{got[-3:]} "
                           f"({len(got)} rows), not 0..{rounds - 1}")

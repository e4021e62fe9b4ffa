"""One trainer per cached config, across processes: a lock file in the run's cache folder.

Two commands (or the app and a command) may ask for the same config at the same time: the first holds
`training.lock` in the config's cache folder while it trains; the others wait, then read its result, or resume from
its checkpoint if it stopped early. The lock is the operating system's (flock,
through filelock), so a trainer that is killed never leaves it held.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock, Timeout

LOCK_NAME = "training.lock"
POLL_S = 0.5  # how often a waiter asks `should_stop` (the app's Stop button, nobody watching)


@contextmanager
def one_trainer(folder: Path, should_stop: Callable[[], bool] | None = None,
                on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold the training lock of the config cached in `folder` for the block.

    Yields True once the lock is held; yields False (without it) if `should_stop()` turned true while another
    trainer held it. `should_stop` is only asked while waiting; `on_wait()` is called once when waiting starts
    (the app says so on the page)."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / LOCK_NAME)
    told = False
    while True:
        try:
            lock.acquire(timeout=POLL_S)
            break
        except Timeout:
            if not told:
                print(f"another process is training this config ({folder.name}); waiting for its result",
                      file=sys.stderr, flush=True)
                told = True
                if on_wait is not None:
                    on_wait()
            if should_stop is not None and should_stop():
                yield False
                return
    try:
        yield True
    finally:
        lock.release()

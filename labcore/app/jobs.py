"""Runs in the background, shared by every browser session of one server.

A `Job` plays one configuration round by round in a thread and publishes a
partial `Result` (the per-round table and the payload ledger so far) after the
first round and then at most every `PUBLISH_S` seconds; pages poll it and
redraw. Sessions that ask for the same configuration (a class opening the
same link) watch the same job instead of training it twenty times.

Stopping. A session stops watching when it presses Stop, changes a setting
(its script run is interrupted and releases the job) or goes away (its
heartbeat expires). A job nobody watches stops between two rounds, writes a
checkpoint and ends; asking for the same configuration again resumes it from
that checkpoint, and because every round draws its randomness from (seed,
round) the resumed run gives the same numbers as an uninterrupted one.

A refreshed page is a new Streamlit session: the old one closes its websocket but would count as watching
until its heartbeat expired ("2 sessions watching" after one refresh, 3 after two). With a liveness check
installed (`watch_sessions`, done by app.py with Streamlit's own list of connected sessions) a watcher whose
session has been gone for `GONE_S` is dropped at once.

A `Task` is the same for work that is not a stored run (the Encryption page's curious-server attack, the topic
pages' simulations): it waits for a training slot like a run, checks `should_stop` between its rounds, reports
its progress and is kept in memory.

Finished runs are saved in the core's on-disk cache (`<cache>/<cfg.key()>/`,
the layout `labcore.run` reads and writes), so the CLI, the notebooks and the
app share results both ways. This module does not import Streamlit.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from ..config import RunConfig
from ..data.base import InteractionData
from ..fed.engine import Simulation
from ..runner.cached import train_cached
from ..runner.store import read_stored
from ..runner.rounds import train_rounds
from ..runtime import default_cache_dir
from ..results import Result

PUBLISH_S = 0.5  # at most this often a running job publishes a partial result (the first round at once)
RELEASE_GRACE_S = 0.75  # a job left without watchers stops after this (a same-config rerun re-attaches first)
HEARTBEAT_S = 30.0  # a watcher that has not polled for this long is gone (closed tab)
MAX_RUNNING = int(os.environ.get("LABCORE_APP_MAX_RUNS", "24"))  # runs training or queued
# Runs that train at the same time; the others wait in line. Training threads share one interpreter
# lock with the sessions' page updates: more of them than cores makes every run and every page slower.
TRAINING_SLOTS = int(os.environ.get("LABCORE_APP_TRAINING", str(max(1, os.cpu_count() or 1))))
GONE_S = 1.5  # a session disconnected this long is gone (shorter drops may reconnect to the same session) ...
LAST_GONE_S = 10.0  # ... unless it is the last watcher: a refreshed page reattaches within this (no restart)

_session_alive: Callable[[str], bool] | None = None


def watch_sessions(alive: Callable[[str], bool] | None) -> None:
    """Install the check that a session is still connected (None: only heartbeats count)."""
    global _session_alive
    _session_alive = alive


class Busy(RuntimeError):
    """Too many runs are training at once on this server."""


def result_folder(cfg: RunConfig, cache_dir: Path | str | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / cfg.key()


def stored(cfg: RunConfig, cache_dir: Path | str | None = None) -> Result | None:
    """The finished result of `cfg` from the on-disk cache, or None (also for a damaged folder, reported by name:
    the job that follows recomputes it)."""
    return read_stored(result_folder(cfg, cache_dir), Result.load)


class Watched:
    """Work in a background thread that runs while some session watches it (a run, the Encryption page's attack).

    Sessions attach, touch (their heartbeat) and release; when none is left (released, heartbeat expired, or
    session gone by the `watch_sessions` check) `should_stop()` turns true and the work stops at its next check.
    """

    def __init__(self, name: str, slots: threading.Semaphore | None = None):
        self._slots = slots
        self.queued = slots is not None  # waiting for a training slot
        self._lock = threading.Condition()
        self.version = 0  # bumped at every publish
        self.done = False
        self.error: str | None = None
        self._watchers: dict[str, float] = {}
        self._gone_since: dict[str, float] = {}  # watchers whose session is disconnected, since when
        self._stop_at: float | None = None
        self.created = time.monotonic()
        self.elapsed_s: float | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name=name)

    # --- watchers -----------------------------------------------------------
    def attach(self, session: str) -> None:
        with self._lock:
            self._watchers[session] = time.monotonic()
            self._stop_at = None

    def touch(self, session: str) -> None:
        with self._lock:
            if session in self._watchers:
                self._watchers[session] = time.monotonic()

    def release(self, session: str, now: bool = False) -> None:
        """This session stops watching; with nobody left the run stops (at once if `now`)."""
        with self._lock:
            self._watchers.pop(session, None)
            if not self._watchers and not self.done:
                self._stop_at = time.monotonic() + (0.0 if now else RELEASE_GRACE_S)

    def _prune(self, t: float) -> None:
        """Drop watchers that stopped polling or whose session is gone (caller holds the lock)."""
        alive = _session_alive
        for s, seen in list(self._watchers.items()):
            if t - seen > HEARTBEAT_S:
                del self._watchers[s]
            elif alive is not None and not alive(s):
                self._gone_since.setdefault(s, t)
            else:
                self._gone_since.pop(s, None)
        live = sum(s not in self._gone_since for s in self._watchers)
        for s, since in self._gone_since.items():
            if s in self._watchers and t - since >= (GONE_S if live else LAST_GONE_S):
                del self._watchers[s]
        for s in [s for s in self._gone_since if s not in self._watchers]:
            del self._gone_since[s]

    @property
    def watchers(self) -> int:
        """Connected sessions watching (a refreshed page's old session is not counted)."""
        with self._lock:
            self._prune(time.monotonic())
            return sum(s not in self._gone_since for s in self._watchers)

    def sessions(self) -> set[str]:
        with self._lock:
            self._prune(time.monotonic())
            return set(self._watchers)

    def should_stop(self) -> bool:
        with self._lock:
            t = time.monotonic()
            self._prune(t)
            if not self._watchers and self._stop_at is None:
                self._stop_at = t
            return self._stop_at is not None and t >= self._stop_at

    # --- waiting ------------------------------------------------------------
    def wait(self, version: int, timeout: float) -> int:
        """Block until a publish newer than `version` (or done), at most `timeout` s; return the version."""
        with self._lock:
            if self.version == version and not self.done:
                self._lock.wait(timeout)
            return self.version

    def start(self):
        self._thread.start()
        return self

    def _main(self) -> None:
        if self._slots is not None:
            while not self._slots.acquire(timeout=0.1):  # wait in line; give up if nobody watches any more
                if self.should_stop():
                    self.queued = False
                    self._publish(None, done=True)
                    return
        self.queued = False
        try:
            self._work()
        finally:
            if self._slots is not None:
                self._slots.release()

    def _publish(self, res, done: bool = False, error: str | None = None) -> None:
        """Hand a (partial) result to the watchers; `done` ends the work (with `error` if it failed)."""
        with self._lock:
            if res is not None:
                self._keep(res)
            self.version += 1
            if done:
                self.done = True
                self.error = error
                self.elapsed_s = time.monotonic() - self.created
            self._lock.notify_all()

    def _keep(self, res) -> None:
        raise NotImplementedError

    def _work(self) -> None:
        raise NotImplementedError


class Job(Watched):
    """One configuration trained round by round (the on-disk cache's layout), shared by the sessions that ask."""

    def __init__(self, cfg: RunConfig, data: InteractionData, folder: Path,
                 slots: threading.Semaphore | None = None):
        super().__init__(f"labcore-run-{cfg.key()}", slots)
        self.cfg, self.data, self.folder = cfg, data, folder
        self.elsewhere = False  # waiting for another process that trains the same config into the same cache
        self.snapshot: Result | None = None
        self.round = 0
        self.resumed_from = 0
        self.first_round_s: float | None = None  # time from start to the first trained round

    # --- the run ------------------------------------------------------------
    def _keep(self, res: Result) -> None:
        self.snapshot = res
        self.round = len(res.table)

    def _work(self) -> None:
        self._train()

    def _train(self) -> None:
        try:
            # another process (a `labcore figure` command, a second server) training the same config into
            # the same cache: wait for it, then show its result or resume from where it stopped
            res, error = train_cached(lambda: Simulation(self.cfg, self.data), self.folder, Result.load,
                                      self._train_held, should_stop=self.should_stop,
                                      on_wait=self._waits_elsewhere), None
        except Exception as e:  # shown to the watchers; the next request retries
            res, error = None, f"{type(e).__name__}: {e}"
        self.elsewhere = False
        self._publish(res, done=True, error=error)

    def _waits_elsewhere(self) -> None:
        self.elsewhere = True
        self._publish(None)  # the pages redraw and say so

    def _train_held(self, sim: Simulation, resumed: bool) -> Result:
        """Play the rounds with the config's training lock held (`train_cached`), publishing as they come."""
        self.elsewhere = False
        if resumed:
            self.resumed_from = sim.round
            self._publish(sim.result(False))
        last = None

        def after_step(sim: Simulation, _row: dict) -> None:
            nonlocal last
            now = time.monotonic()
            if self.first_round_s is None:
                self.first_round_s = now - self.created
            if last is None or now - last >= PUBLISH_S:  # the first round at once: drawing starts
                self._publish(sim.result(False))
                last = time.monotonic()

        return train_rounds(sim, self.folder, should_stop=self.should_stop, after_step=after_step)

    @property
    def stopped(self) -> bool:
        """Ended before its last round (Stop, nobody watching), with or without rounds trained."""
        return self.done and self.error is None and (self.snapshot is None or not self.snapshot.complete)

    @property
    def complete(self) -> bool:
        return self.done and self.snapshot is not None and self.snapshot.complete


class Stopped(Exception):
    """Raised inside a task's function when nobody watches it any more (its `should_stop` turned true)."""


class Task(Watched):
    """A bounded piece of work that is not a stored run (the Encryption page's curious-server attack, a topic page's
    simulation): `fn(task)` runs in a training slot and returns the result; it checks `task.should_stop()` between
    its steps (rounds) and returns None or raises `Stopped` when it is true, and may call `task.report(fraction,
    text)` for the watchers' progress bar. Shared by the sessions asking for the same key."""

    def __init__(self, key: str, fn: Callable[["Task"], object], slots: threading.Semaphore | None = None):
        super().__init__(f"labcore-task-{key}", slots)
        self.key, self._fn = key, fn
        self.result = None
        self.progress: tuple[float, str] | None = None

    def report(self, fraction: float, text: str = "") -> None:
        """How far the work is (0..1), for the pages that watch it."""
        self.progress = (min(max(float(fraction), 0.0), 1.0), text)
        self._publish(None)
        if self.should_stop():
            raise Stopped

    def _keep(self, res) -> None:
        self.result = res

    def _work(self) -> None:
        try:
            res, error = self._fn(self), None
        except Stopped:
            res, error = None, None
        except Exception as e:  # shown to the watchers; the next request retries
            res, error = None, f"{type(e).__name__}: {e}"
        self._publish(res, done=True, error=error)

    @property
    def stopped(self) -> bool:
        return self.done and self.error is None and self.result is None

    @property
    def complete(self) -> bool:
        return self.done and self.result is not None


class JobHub:
    """One per server process: configuration key -> the job training it."""

    def __init__(self, max_running: int = MAX_RUNNING, keep: int = 64, training: int = TRAINING_SLOTS):
        self._lock = threading.Lock()
        self._jobs: dict[tuple[str, str], Watched] = {}
        self.max_running, self.keep = max_running, keep
        self._slots = threading.Semaphore(training) if training > 0 else None

    def get(self, cfg: RunConfig, cache_dir: Path | str | None = None) -> Job | None:
        with self._lock:
            return self._jobs.get((str(Path(cache_dir or default_cache_dir())), cfg.key()))

    def follow(self, cfg: RunConfig, data: InteractionData, session: str,
               cache_dir: Path | str | None = None) -> Job:
        """The running (or finished) job of `cfg`, started if needed, with `session` watching it."""
        cache = Path(cache_dir or default_cache_dir())
        key = (str(cache), cfg.key())
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and (not job.done or job.complete):
                job.attach(session)
                return job
            running = sum(not j.done for j in self._jobs.values())
            if running >= self.max_running:
                raise Busy(f"{running} runs are training on this server right now (limit {self.max_running}); "
                           "try again in a moment")
            job = Job(cfg, data, cache / cfg.key(), self._slots)
            job.attach(session)
            self._jobs[key] = job
            self._prune()
        return job.start()

    def task(self, key: str, fn: Callable[[Task], object], session: str) -> Task:
        """The task under `key` (running or finished), started with `fn` if needed, with `session` watching it.

        Tasks share the training slots and the bound on running work with the runs."""
        with self._lock:
            task = self._jobs.get(("task", key))
            if task is not None and (not task.done or task.complete):
                task.attach(session)
                return task
            running = sum(not j.done for j in self._jobs.values())
            if running >= self.max_running:
                raise Busy(f"{running} runs are training on this server right now (limit {self.max_running}); "
                           "try again in a moment")
            task = Task(key, fn, self._slots)
            task.attach(session)
            self._jobs[("task", key)] = task
            self._prune()
        return task.start()

    def running(self) -> int:
        with self._lock:
            return sum(not j.done for j in self._jobs.values())

    def ahead(self, job: Job) -> int:
        """How many queued runs started waiting before this one."""
        with self._lock:
            return sum(j.queued and j.created < job.created for j in self._jobs.values())

    def sessions(self) -> int:
        """How many sessions watch a run that is training (the pages pace their live updates by it)."""
        with self._lock:
            jobs = [j for j in self._jobs.values() if not j.done]
        return len(set().union(*(j.sessions() for j in jobs))) if jobs else 0

    def _prune(self) -> None:
        finished = [k for k, j in self._jobs.items() if j.done]
        for k in finished[: max(0, len(self._jobs) - self.keep)]:
            del self._jobs[k]

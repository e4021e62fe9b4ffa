"""Streamlit side of running: cached datasets, results and CKKS contexts, and streaming.

`follow(page, cfgs, status, charts)` shows runs as they train: a finished result comes
from `st.cache_data` (keyed by the frozen config) or the core's on-disk cache;
otherwise the session watches the shared background job (`jobs.JobHub`).
In a browser the live part of the page is two `st.fragment`s rerun every
STATUS_S / CHART_S seconds, so charts keep their keys and update in place
while the rest of the page (the controls) stays responsive; when the runs are
done the page reruns once. A changed setting releases the jobs this page no longer
shows, a closed tab stops touching them, and a job nobody watches stops
between two rounds (checkpointed, resumed when asked for again).

Wall-clock knobs (bandwidths, tiers, the time model's constants: `wallclock.VIEW_FIELDS`) never train: a page
asks for `cfg`, the hub trains `training_config(cfg)` (those knobs at their defaults) and `timed` re-times
its table for `cfg` from the measured bytes, in milliseconds. Cache keys of stored runs are unchanged.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import streamlit as st

from ..config import ConfigError, RunConfig
from ..data.base import InteractionData
from ..fed.engine import check_fits
from ..runtime import default_cache_dir
from ..net.wallclock import recompute, training_config
from ..results import Result
from . import budget, jobs, notices

STATUS_S = 0.3  # with a browser: progress and numbers are redrawn this often while runs train ...
CHART_S = 2.0  # ... and charts this often, when few sessions watch
# Server-wide budget of live reruns per second: with many sessions watching (a class on one server)
# each one updates less often, so that redrawing pages never starves the training threads.
LIVE_RATE = float(os.environ.get("LABCORE_APP_LIVE_RATE", "16"))
FIRST_WAIT_S = 0.4  # a new run gets this long to publish its first round before the page first draws
STOP_WAIT_S = 3.0  # Stop waits at most this long for the run to end its round
POLL_S = 0.1  # without a browser: how long the loop waits for a publish before checking again
REDRAW_S = 0.3  # without a browser: at most this often the loop redraws
T = TypeVar("T")


@st.cache_resource(show_spinner=False)
def hub() -> jobs.JobHub:
    return jobs.JobHub()


@st.cache_resource(show_spinner="Loading the dataset...", max_entries=8)
def _dataset(name: str, seed: int, size: str, skew: float = 1.0) -> InteractionData:
    from ..data import load_dataset

    return load_dataset(name, seed=seed, size=size or "small", skew=skew)


def dataset(cfg: RunConfig) -> InteractionData:
    """The config's dataset, loaded once per server (shared by every session)."""
    synthetic = cfg.dataset == "synthetic"
    return _dataset(cfg.dataset, cfg.data_seed, cfg.synthetic_size if synthetic else "", cfg.data_skew)


@st.cache_data(show_spinner=False, max_entries=256)
def _stored(cfg: RunConfig, cache_dir: str) -> Result | None:
    return jobs.stored(cfg, cache_dir)


def _finished_exact(cfg: RunConfig) -> Result | None:
    cache = default_cache_dir()
    if not (jobs.result_folder(cfg, cache) / "result.json").exists():
        return None
    return _stored(cfg, str(cache))


def finished(cfg: RunConfig) -> Result | None:
    """The finished result of `cfg` if there is one (memory, then disk); never trains.

    A run that differs from a stored one only in wall-clock knobs (bandwidths, tiers, the time model's
    constants) is that run re-timed (`timed`): milliseconds, no training.
    """
    res = _finished_exact(cfg)
    if res is not None:
        return res
    base = training_config(cfg)
    if base == cfg:
        return None
    res = _finished_exact(base)
    if res is None:
        return None
    try:
        return timed(res, cfg)
    except Exception:  # the dataset cannot be read here: the page reports it when it tries to train
        return None


def train_key(cfg: RunConfig) -> str:
    """The cache key of the run `cfg` needs trained (its wall-clock knobs do not retrain)."""
    return training_config(cfg).key()


@st.cache_resource(show_spinner=False)
def _timed_memo() -> dict:
    return {}


def timed(res: Result | None, cfg: RunConfig) -> Result | None:
    """`res` (trained under training_config(cfg)) with the simulated clock of `cfg`'s network and time model."""
    if res is None or res.config == cfg:
        return res
    memo = _timed_memo()
    key = (cfg.key(), res.config.key(), len(res.table), res.complete)  # the first k rounds of a run never change
    hit = memo.get(key)
    if hit is None:
        table = recompute(res.table, res.config, cfg, dataset(cfg).train_counts())
        hit = Result(cfg, table, res.ledger, res.notes, res.complete, res.cached)
        _remember(memo, key, hit, 128)
    return hit


def _remember(memo: dict, key, value, most: int) -> None:
    """Keep `value` under `key`, dropping the oldest entries beyond `most` (sessions share the memo)."""
    memo[key] = value
    while len(memo) > most:
        try:
            memo.pop(next(iter(memo)), None)
        except (RuntimeError, StopIteration):  # another session changed it meanwhile
            break


def session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-session"


@dataclass
class RunView:
    """What a page knows about one run at one moment."""

    cfg: RunConfig
    result: Result | None = None  # partial while running
    done: bool = False
    error: str | None = None
    stopped: bool = False
    cached: bool = False
    watchers: int = 0
    version: int = -1
    resumed_from: int = 0
    queued: int | None = None  # waiting for a training slot: runs ahead of it
    elsewhere: bool = False  # waiting for another process training the same config into the same cache

    @property
    def rounds_done(self) -> int:
        return 0 if self.result is None else len(self.result.table)


def _view(cfg: RunConfig, job: jobs.Job) -> RunView:
    """The job (of training_config(cfg)) as `cfg` shows it: re-timed when cfg's wall-clock knobs differ."""
    return RunView(cfg, timed(job.snapshot, cfg), job.done, job.error, job.stopped, False, job.watchers, job.version,
                   job.resumed_from, hub().ahead(job) if job.queued else None, job.elsewhere and not job.done)


def stop(cfg: RunConfig) -> None:
    """This session stops watching `cfg`; the run stops between two rounds unless others watch it."""
    job = hub().get(training_config(cfg), default_cache_dir())
    if job is not None:
        job.release(session_id(), now=True)
        deadline = time.monotonic() + STOP_WAIT_S  # let it finish its round: the page then shows where it stopped
        while not job.done and job.watchers == 0 and time.monotonic() < deadline:
            job.wait(job.version, 0.1)


def stopped_view(cfg: RunConfig) -> RunView:
    """A stopped run as it stands: the job's last snapshot."""
    job = hub().get(training_config(cfg), default_cache_dir())
    if job is None:
        return RunView(cfg, None, True, None, True)
    v = _view(cfg, job)
    v.done, v.stopped = True, True
    return v


def _frontend() -> bool:
    """Is a browser attached? Without one (AppTest, bare mode) nothing triggers periodic reruns."""
    mode = os.environ.get("LABCORE_APP_STREAM", "auto")
    if mode in ("fragment", "loop"):
        return mode == "fragment"
    try:
        return bool(st.context.headers.get("host"))
    except Exception:
        return False


@st.cache_resource(show_spinner=False)
def _figures() -> dict:
    return {}


def figure(name: str, ident, progress, make):
    """A figure rebuilt only when what it shows (ident) or how far the runs are (progress) changed.

    Shared by every session of the server: a class watching the same run builds each figure once.
    """
    memo = _figures()
    key = (name, ident)
    hit = memo.get(key)
    if hit is None or hit[0] != progress:
        hit = (progress, make())
        _remember(memo, key, hit, 256)
    return hit[1]


def chart_config(final: bool) -> dict:
    """Static (no hover layers, cheap for the browser) while runs stream, interactive at the end."""
    return {"displaylogo": False, "staticPlot": not final}


class Keys:
    """Element keys of one draw: stable across fragment reruns, unique within a blocking loop."""

    def __init__(self, page: str, suffix: str = ""):
        self.page, self.suffix = page, suffix

    def __call__(self, name: str) -> str:
        return f"{self.page}.{name}{self.suffix}"


def _attach(page, cfgs, stopped, sid) -> tuple[list[RunView], list[jobs.Job | None]]:
    views: list[RunView] = []
    # each job is noted as followed the moment it is: a script run interrupted by the next change (a slider moved
    # key by key) must still release it, else it trains on for nobody until its heartbeat expires
    following = st.session_state.setdefault(f"_lab_following.{page}", {})
    followed: list[jobs.Job | None] = []
    trained = st.session_state.setdefault("_lab_trained", set())  # runs this session watched train
    for cfg in cfgs:
        job = None
        res = finished(cfg)
        if res is not None:
            views.append(RunView(cfg, res, True, cached=train_key(cfg) not in trained, version=0))
        elif train_key(cfg) in stopped:
            views.append(stopped_view(cfg))
        else:
            try:
                data = dataset(cfg)
                check_fits(cfg, data)
                base = training_config(cfg)  # wall-clock knobs are a view (timed), never a reason to train
                job = hub().follow(base, data, sid, default_cache_dir())
                following[id(job)] = job
                trained.add(base.key())
                views.append(_view(cfg, job))
            except (ConfigError, jobs.Busy) as e:
                views.append(RunView(cfg, None, True, str(e)))
            except Exception as e:  # a dataset that cannot be found or read
                views.append(RunView(cfg, None, True, f"{type(e).__name__}: {e}"))
        followed.append(job)
    return views, followed


def _refresh(cfgs, views, followed, sid) -> bool:
    """Update the views from their jobs (and tell the jobs this session still watches); True if any changed."""
    changed = False
    for k, job in enumerate(followed):
        if job is None:
            continue
        if not job.done:
            job.touch(sid)
        if job.version != views[k].version or job.queued or views[k].queued is not None:
            views[k] = _view(cfgs[k], job)
            changed = True
    return changed


def _release_others(page: str, followed: list, sid: str) -> None:
    """Jobs this page followed in an earlier run but not any more (a setting changed): they stop at their next round
    unless another session watches them (no grace: the run the page now shows gets the cores)."""
    now = {id(j): j for j in followed if j is not None}
    before = st.session_state.get(f"_lab_following.{page}", {})
    for key, job in before.items():
        if key not in now and not job.done:
            job.release(sid, now=True)
    st.session_state[f"_lab_following.{page}"] = now


Draw = Callable[[list[RunView], bool, Keys], None]


def follow(page: str, cfgs: Sequence[RunConfig], status: Draw, charts: Draw, *, stopped: Sequence[str] = ()) -> None:
    """Train (or fetch) every config and draw them as results stream in.

    status(views, final, key) draws the cheap part (progress, numbers), charts(views, final, key) the
    figures; key(name) gives element keys. With a browser attached each is a fragment, rerun every
    STATUS_S and CHART_S seconds while runs train (charts keep their keys, so the browser updates them
    in place, drawn static until the end to keep the browser's work small); when every run is done
    the page reruns once. Without a browser (AppTest) this blocks and redraws until the runs are done.
    `stopped`: keys of configs this session stopped; they are shown as they stand and not resumed.
    """
    sid = session_id()
    refused = over_budget(cfgs, stopped)
    if refused:
        _release_others(page, [], sid)
        st.warning(refused, icon=":material/speed:")
        return
    views, followed = _attach(page, cfgs, stopped, sid)
    _release_others(page, followed, sid)
    live = [j for j in followed if j is not None and not j.done]
    if live and not any(v.rounds_done for v in views):  # give the first round a moment: drawing starts with it
        live[0].wait(live[0].version, FIRST_WAIT_S)
    _refresh(cfgs, views, followed, sid)
    if _frontend():
        _fragments(page, cfgs, views, followed, status, charts, sid)
    else:
        _loop(page, cfgs, views, followed, lambda v, f, k: (status(v, f, k), charts(v, f, k)), sid)


def to_train(cfgs: Sequence[RunConfig], stopped: Sequence[str] = ()) -> list[RunConfig]:
    """The configs a request would start training: not finished, not stopped by this session, not training already
    (a run another session started costs this request nothing)."""
    out = []
    for cfg in cfgs:
        if train_key(cfg) in stopped or finished(cfg) is not None:
            continue
        job = hub().get(training_config(cfg), default_cache_dir())
        if job is not None and not job.done:
            continue
        out.append(training_config(cfg))
    return list({c.key(): c for c in out}.values())


def over_budget(cfgs: Sequence[RunConfig], stopped: Sequence[str] = ()) -> str | None:
    """The work budget's message if the runs `cfgs` still need exceed it (`budget.over`), else None."""
    costs = []
    for cfg in to_train(cfgs, stopped):
        try:
            costs.append(budget.cost(cfg, dataset(cfg)))
        except Exception:  # a dataset that cannot be read: the page reports it when it tries to train
            continue
    return budget.over(costs, at_once=max(1, jobs.TRAINING_SLOTS))


def live_intervals(sessions: int) -> tuple[float, float]:
    """(status, charts) rerun intervals of one session when `sessions` sessions watch a training run."""
    n = max(1, sessions)
    return max(STATUS_S, n / (0.75 * LIVE_RATE)), max(CHART_S, n / (0.25 * LIVE_RATE))


def _fragments(page, cfgs, views, followed, status, charts, sid) -> None:
    periodic = any(not v.done for v in views)
    status_s, chart_s = live_intervals(hub().sessions()) if periodic else (None, None)
    registered = time.monotonic()

    def status_part():
        _refresh(cfgs, views, followed, sid)
        final = all(v.done for v in views)
        if final and periodic:
            st.rerun()  # at once, once more as a whole page: drops the timers, shows the finished state
        status(views, final, Keys(page))
        if periodic and time.monotonic() - registered > 5 * status_s:
            want = live_intervals(hub().sessions())[0]
            if want > 1.5 * status_s or want < status_s / 1.5:
                st.rerun()  # the class grew or left: register the timers again at the new pace

    def chart_part():
        _refresh(cfgs, views, followed, sid)
        if periodic and all(v.done for v in views):
            st.rerun()  # the runs ended since the status last looked: the whole page redraws them, not this part
        charts(views, all(v.done for v in views) and not periodic, Keys(page))

    st.fragment(status_part, run_every=status_s)()
    st.fragment(chart_part, run_every=chart_s)()


def _loop(page, cfgs, views, followed, draw, sid) -> None:
    holder = st.empty()
    n = [0]

    def redraw(final):
        n[0] += 1
        with holder.container():
            draw(views, final, Keys(page, f".{n[0]}"))

    try:
        live = [k for k, v in enumerate(views) if not v.done]
        redraw(not live)
        if not live:
            return
        last = time.monotonic()
        while live:
            followed[live[0]].wait(views[live[0]].version, POLL_S)
            changed = _refresh(cfgs, views, followed, sid)
            live = [k for k in live if not views[k].done]
            if live and changed and time.monotonic() - last >= REDRAW_S:
                redraw(False)
                last = time.monotonic()
        redraw(True)
    finally:
        for job in followed:
            if job is not None and not job.done:
                job.release(sid)


# --------------------------------------------------------------------------- encryption views

@st.cache_resource(show_spinner="Generating CKKS keys...", max_entries=6)
def ckks_context(degree: int, coeff_bits: tuple, scale_bits: int):
    """A TenSEAL context (secret and public copies) per parameter set, generated once per server."""
    from ..privacy.ckks import CkksParams, make_context

    return make_context(CkksParams(degree, coeff_bits, scale_bits))


@st.cache_data(show_spinner="Measuring CKKS costs (once per parameter set)...", max_entries=512)
def ckks_costs(n_values: int, degree: int, coeff_bits: tuple, scale_bits: int) -> dict:
    from ..privacy.ckks import CkksParams
    from ..privacy.costs import ckks_costs as costs

    ckks_context(degree, coeff_bits, scale_bits)  # key generation through the shared resource cache
    return costs(n_values, CkksParams(degree, coeff_bits, scale_bits))


def task_done(page: str, task: jobs.Task, waiting: str) -> bool:
    """Whether `task` is done; while it is not, a status line (`waiting`) that this session keeps the task alive
    with. In a browser the line is a fragment that reruns the page when the task ends; without one (AppTest)
    this call waits for the task."""
    sid = session_id()
    _release_others(page, [task], sid)
    if not task.done and not _frontend():
        while not task.done:
            task.wait(task.version, POLL_S)
            task.touch(sid)
    if task.done:
        return True

    def status():
        task.touch(sid)
        if task.done:
            st.rerun()
        if task.queued:
            st.info(f"Waiting for a free training slot on this server: {hub().ahead(task)} run(s) ahead of this "
                    "one. It starts by itself.", icon=":material/hourglass_top:")
        else:
            st.info(waiting, icon=":material/hourglass_top:")

    st.fragment(status, run_every=live_intervals(hub().sessions())[0])()
    return False


def in_background(page: str, key: str, work: Callable[[jobs.Task], T], waiting: str) -> T | None:
    """`work(task)` as a task of the server's job queue, never in the page's thread: it waits for a training slot,
    is shared by every session asking for the same `key` of `page`, reports progress through `task.report` and
    stops when nobody watches. The page waits for it under a progress bar (a changed control reruns the page
    and lets the task go), then gets its result; a failure is shown by name, like a refused setting."""
    sid = session_id()
    try:
        task = hub().task(f"{page}:{key}", work, sid)
    except jobs.Busy as e:
        st.warning(str(e))
        return None
    _release_others(page, [task], sid)
    bar = None
    while not task.done:
        task.wait(task.version, POLL_S)
        task.touch(sid)
        if bar is None:
            bar = st.progress(0.0, text=waiting)
        if task.queued:
            bar.progress(0.0, text=f"Waiting for a free training slot on this server: {hub().ahead(task)} run(s) "
                                   "ahead of this one.")
        elif task.progress is not None:
            fraction, text = task.progress
            bar.progress(fraction, text=f"{waiting} {text}".strip())
    if bar is not None:
        bar.empty()
    if task.error:
        notices.error(task.error)
        return None
    if task.result is None:
        st.info("Stopped before its end (nobody was watching it); it starts again on the next visit.")
        return None
    return task.result

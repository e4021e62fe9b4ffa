"""The app's background runs: shared between sessions, stoppable between rounds, resumed exactly."""
import time

import pandas as pd
import pytest

from labcore import RunConfig, run
from labcore.app import jobs, runs

CFG = RunConfig(synthetic_size="tiny", dim=8, rank=2, rounds=12, clients_per_round=10, eval_every=3, rank_every=2,
                checkpoint_every=1000)
NUMERIC = ["loss", "hr", "ndcg", "bytes_up", "bytes_down", "cum_bytes", "t_comm", "wallclock", "n90_mean"]


def _wait(job, timeout=900):
    """Wait for the job as its watchers' pages do: polling, which keeps them alive past HEARTBEAT_S.
    The timeout only guards against a hang (far above any run here, even on a loaded laptop)."""
    t0 = time.monotonic()
    while not job.done:
        job.wait(job.version, 0.2)
        for s in job.sessions():
            job.touch(s)
        assert time.monotonic() - t0 < timeout, "the job never finished (hung)"
    return job


def _data():
    from labcore.data import load_dataset

    return load_dataset("synthetic", size="tiny")


def test_sessions_asking_for_the_same_config_share_one_job(tmp_path):
    hub = jobs.JobHub()
    a = hub.follow(CFG, _data(), "session-a", tmp_path)
    b = hub.follow(CFG, _data(), "session-b", tmp_path)
    assert a is b and a.watchers == 2
    _wait(a)
    assert a.error is None and a.snapshot.complete and len(a.snapshot.table) == CFG.rounds
    assert jobs.stored(CFG, tmp_path) is not None  # saved in the core's on-disk cache
    assert hub.follow(CFG, _data(), "session-c", tmp_path) is a  # finished: served, not retrained


def test_a_stopped_run_resumes_to_the_same_numbers_as_an_uninterrupted_one(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "PUBLISH_S", 0.0)  # publish every round
    hub = jobs.JobHub()
    slow = CFG.replace(rounds=300, clients_per_round=40, dim=32)
    job = hub.follow(slow, _data(), "s", tmp_path)
    while job.round < 3:
        job.wait(job.version, 0.5)
    job.release("s", now=True)  # the Stop button
    _wait(job)
    assert job.stopped and 3 <= job.round < slow.rounds
    assert (tmp_path / slow.key() / "checkpoint.pt").exists()
    again = hub.follow(slow, _data(), "s", tmp_path)
    assert again is not job
    _wait(again)
    assert again.resumed_from == job.round and again.snapshot.complete
    ref = run(slow, data=_data(), use_cache=False, progress=False)
    pd.testing.assert_frame_equal(again.snapshot.table[NUMERIC], ref.table[NUMERIC])


def test_a_job_nobody_watches_stops_and_a_quick_reattach_keeps_it(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "RELEASE_GRACE_S", 0.5)
    hub = jobs.JobHub()
    slow = CFG.replace(rounds=20_000, clients_per_round=40, dim=32)
    job = hub.follow(slow, _data(), "s", tmp_path)
    job.release("s")  # a rerun of the same view releases ...
    assert hub.follow(slow, _data(), "s", tmp_path) is job  # ... and re-attaches before the grace ends
    time.sleep(0.8)
    assert not job.done
    job.release("s")  # a changed setting: nobody re-attaches
    _wait(job)
    assert job.stopped and job.round < slow.rounds


def test_errors_reach_the_watchers_and_the_server_bounds_concurrent_runs(tmp_path):
    hub = jobs.JobHub(max_running=1)
    bad = CFG.replace(clients_per_round=1000)  # more clients than the tiny dataset has users
    job = _wait(hub.follow(bad, _data(), "s", tmp_path))
    assert job.error and "clients_per_round" in job.error
    long = hub.follow(CFG.replace(rounds=10_000), _data(), "s", tmp_path)
    with pytest.raises(jobs.Busy):
        hub.follow(CFG.replace(rounds=10_001), _data(), "s", tmp_path)
    long.release("s", now=True)
    _wait(long)


def test_runs_beyond_the_training_slots_wait_in_line(tmp_path):
    hub = jobs.JobHub(training=1)
    first = hub.follow(CFG.replace(rounds=20_000, clients_per_round=40, dim=32), _data(), "a", tmp_path)
    second = hub.follow(CFG.replace(rounds=5, seed=1), _data(), "b", tmp_path)
    third = hub.follow(CFG.replace(rounds=5, seed=2), _data(), "c", tmp_path)
    time.sleep(0.3)
    assert not first.queued and second.queued and third.queued
    assert hub.ahead(second) == 0 and hub.ahead(third) == 1
    third.release("c", now=True)  # nobody waits for it any more: it leaves the line without training
    _wait(third)
    assert third.stopped and third.snapshot is None
    first.release("a", now=True)  # the slot frees up: the next in line trains
    _wait(first), _wait(second)
    assert first.stopped and second.complete and not second.queued
    again = hub.follow(CFG.replace(rounds=5, seed=2), _data(), "c", tmp_path)
    assert again is not third
    assert _wait(again).complete


def test_a_job_waits_for_another_process_training_its_config_and_shows_that_result(tmp_path):
    """A `labcore figure` command (here: the lock it holds) training the same config into the same cache: the
    app's job waits instead of training it a second time, then shows the stored result."""
    from filelock import FileLock

    from labcore.runner.lock import LOCK_NAME

    folder = tmp_path / CFG.key()
    folder.mkdir()
    hub = jobs.JobHub()
    with FileLock(folder / LOCK_NAME):
        job = hub.follow(CFG, _data(), "s", tmp_path)
        time.sleep(1.5)  # the job had time to train a round if it did not wait
        assert job.snapshot is None and not job.done
        assert runs._view(CFG, job).elsewhere  # the Explorer says another process trains it
        ref = run(CFG, data=_data(), use_cache=False, progress=False)
        ref.save(folder)  # what the other process stores when it finishes
    _wait(job)
    assert job.error is None and job.complete and job.snapshot.cached  # read from the cache, not trained
    assert not runs._view(CFG, job).elsewhere
    pd.testing.assert_frame_equal(job.snapshot.table[NUMERIC], ref.table[NUMERIC])


def test_a_job_waiting_for_the_lock_stops_when_nobody_watches(tmp_path):
    from filelock import FileLock

    from labcore.runner.lock import LOCK_NAME

    folder = tmp_path / CFG.key()
    folder.mkdir()
    hub = jobs.JobHub()
    with FileLock(folder / LOCK_NAME):
        job = hub.follow(CFG, _data(), "s", tmp_path)
        job.release("s", now=True)  # the Stop button
        _wait(job, timeout=60)
    assert job.stopped and job.error is None and job.snapshot is None
    assert not (folder / "result.json").exists()


def test_a_page_whose_settings_changed_stops_its_old_run_at_once(tmp_path, monkeypatch):
    """A slider moved key by key starts a run at each step: the runs the page no longer shows stop at their next
    round (no grace), unless another session still watches them."""
    monkeypatch.setattr(runs.st, "session_state", {})
    hub = jobs.JobHub()
    slow = CFG.replace(rounds=20_000, clients_per_round=40, dim=32)
    old = hub.follow(slow, _data(), "s", tmp_path)
    shared = hub.follow(slow.replace(seed=1), _data(), "s", tmp_path)
    hub.follow(slow.replace(seed=1), _data(), "t", tmp_path)  # another session watches this one
    runs.st.session_state["_lab_following.explorer"] = {id(old): old, id(shared): shared}
    new = hub.follow(CFG, _data(), "s", tmp_path)
    runs._release_others("explorer", [new], "s")
    assert old.should_stop() and not shared.should_stop()
    assert runs.st.session_state["_lab_following.explorer"] == {id(new): new}
    shared.release("t", now=True)
    for job in (old, shared, new):
        _wait(job)
    assert old.stopped and old.round < slow.rounds

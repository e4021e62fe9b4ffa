"""`runtime.in_processes`, the runner behind every topic's prefetch: the costliest item first, every result once,
in processes of their own with one torch thread each."""
import os

import pytest

from labcore.runtime import in_processes


def where_and_how(x: int) -> tuple:
    import torch

    return x * x, os.getpid(), torch.get_num_threads()


def test_one_job_runs_here_costliest_first():
    out = list(in_processes(where_and_how, [3, 1, 2], 1, cost=lambda x: x, progress=False))
    assert [item for item, _ in out] == [3, 2, 1]
    assert [r[0] for _, r in out] == [9, 4, 1]
    assert {r[1] for _, r in out} == {os.getpid()}


def test_two_jobs_run_in_spawned_processes_of_one_thread():
    out = dict(in_processes(where_and_how, [1, 2, 3, 4], 2, progress=False))
    assert {k: v[0] for k, v in out.items()} == {1: 1, 2: 4, 3: 9, 4: 16}
    pids = {v[1] for v in out.values()}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert {v[2] for v in out.values()} == {1}


def test_nothing_to_run_yields_nothing():
    assert list(in_processes(where_and_how, [], 2)) == []


def test_a_workers_error_reaches_the_caller():
    with pytest.raises(TypeError):
        list(in_processes(where_and_how, [1, "a"], 2, progress=False))

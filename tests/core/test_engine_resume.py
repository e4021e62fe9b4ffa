"""Exact resume: a run interrupted at any phase of a round (Ctrl-C, a notebook's interrupt, SIGKILL) and run
again ends with the very tables, bit for bit, of one run straight through.

A KeyboardInterrupt raised inside a round leaves the last checkpoint written at a round boundary (the round's
partial work is dropped and replays); one raised between rounds, or a SIGINT (which the engine defers to the
round's end), checkpoints the state after the round with its counter advanced."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

import labcore.runner.store
from conftest import make_tiny
from labcore.config import RunConfig
from labcore.fed import engine
from labcore.fed.engine import Simulation, run
from labcore.runner.cached import run_with_progress, train_cached
from labcore.runner import checkpoint
from labcore.runner.checkpoint import CHECKPOINT, load_checkpoint
from labcore.runner.rounds import train_rounds
from labcore.fed.scaffold import ControlVariates
from labcore.results import Result

ROOT = Path(__file__).resolve().parents[2]
COMMON = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rounds=8, eval_every=3, rank_every=2,
              checkpoint_every=2)
ALGORITHMS = {
    "colr": dict(method="colr", rank=2),
    "fedmf": dict(method="fedmf"),
    "scaffold": dict(method="fedmf", aggregation="weighted", scaffold=True),  # per-client state (c_i)
}
MEASURED = ["sec_local"]  # this machine's time: differs between any two runs


class Interrupt:
    """Wraps `owner.name` so that its `call`-th call raises KeyboardInterrupt (optionally after calling through)
    or sends this process a SIGINT from inside the phase."""

    def __init__(self, monkeypatch, owner, name: str, call: int, how: str = "raise"):
        self.real, self.calls, self.call, self.how, self.fired = getattr(owner, name), 0, call, how, False
        if isinstance(owner, type):  # a method: called with its instance
            monkeypatch.setattr(owner, name, lambda obj, *args, **kwargs: self(obj, *args, **kwargs))
        else:
            monkeypatch.setattr(owner, name, self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.call:
            self.fired = True
            if self.how == "sigint":
                os.kill(os.getpid(), signal.SIGINT)
                return self.real(*args, **kwargs)
            if self.how == "partial_write":  # a checkpoint cut off in the middle of its bytes
                args[1].write(b"PK\x03\x04 half a checkpoint")
            raise KeyboardInterrupt
        return self.real(*args, **kwargs)


PHASES = {  # phase: (owner, attribute, which call raises, algorithms that reach it)
    "train": (engine, "train_cohort", 4, ("colr", "fedmf", "scaffold")),
    "uplink": (Simulation, "_uplink", 4, ("colr", "fedmf")),
    "uplink_scaffold": (ControlVariates, "exchange", 4, ("scaffold",)),
    "aggregate": (engine, "aggregate", 4, ("colr", "fedmf")),
    "apply": (Simulation, "_apply_downlink", 4, ("colr", "fedmf", "scaffold")),
    "evaluate": (Simulation, "evaluate", 2, ("colr", "fedmf", "scaffold")),
    "rank_statistics": (Simulation, "_effective_rank", 3, ("colr", "fedmf", "scaffold")),
    "checkpoint_write": (torch, "save", 1, ("colr", "fedmf", "scaffold")),
    "store": (labcore.runner.store, "write_atomic", 1, ("colr", "fedmf", "scaffold")),
}


def _play(cfg, data, folder, after_round=None):
    """One `run` through the cache as the CLI plays it, returning the simulation too (its model tables)."""
    box = {}

    def make():
        box["sim"] = Simulation(cfg, data)
        return box["sim"]

    res = train_cached(make, folder, Result.load,
                       lambda sim, _resumed: run_with_progress(sim, folder, on_round=after_round))
    return box.get("sim"), res


def _state_tensors(sim) -> dict:
    st = checkpoint._plain(sim.state())
    out = {"Q": st["Q"], "P": st["P"]}
    for part in ("variates", "server"):
        for k, v in (st.get(part) or {}).items():
            out[f"{part}.{k}"] = v
    return out


def _assert_same(got, ref) -> None:
    (sim, res), (ref_sim, ref_res) = got, ref
    assert res.complete and len(res.table) == len(ref_res.table)
    pd.testing.assert_frame_equal(res.table.drop(columns=MEASURED), ref_res.table.drop(columns=MEASURED),
                                  check_exact=True)
    pd.testing.assert_frame_equal(res.ledger, ref_res.ledger, check_exact=True)
    a, b = _state_tensors(sim), _state_tensors(ref_sim)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def _assert_consistent_checkpoint(folder) -> int:
    """The checkpoint left on disk holds whole rounds: as many rows as its counter says, numbered 0..round-1."""
    path = folder / CHECKPOINT
    if not path.exists():
        return 0
    st = load_checkpoint(path)
    assert [r["round"] for r in st["rows"]] == list(range(st["round"]))
    assert {r["round"] for r in st["ledger"]} <= set(range(st["round"]))
    return st["round"]


@pytest.fixture(scope="module")
def references():
    data = make_tiny()
    out = {}
    for name, extra in ALGORITHMS.items():
        cfg = RunConfig(**COMMON, **extra)
        sim = Simulation(cfg, data)
        out[name] = (sim, train_rounds(sim, None))
    return data, out


@pytest.mark.parametrize(("phase", "algorithm"),
                         [(phase, algorithm) for phase, (*_, reaches) in PHASES.items() for algorithm in reaches])
def test_an_interrupt_in_any_phase_resumes_to_the_same_bits(phase, algorithm, references, tmp_path, monkeypatch):
    owner, name, call, _ = PHASES[phase]
    data, refs = references
    cfg = RunConfig(**COMMON, **ALGORITHMS[algorithm])
    folder = tmp_path / cfg.key()
    with monkeypatch.context() as m:
        hook = Interrupt(m, owner, name, call, "partial_write" if phase == "checkpoint_write" else "raise")
        with pytest.raises(KeyboardInterrupt):
            _play(cfg, data, folder)
        assert hook.fired
    assert not (folder / "result.json").exists()
    assert not list(folder.glob("*.tmp"))
    _assert_consistent_checkpoint(folder)
    _assert_same(_play(cfg, data, folder), refs[algorithm])
    assert Result.load(folder).table["round"].tolist() == list(range(cfg.rounds))


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_an_interrupt_between_rounds_checkpoints_that_round(algorithm, references, tmp_path):
    data, refs = references
    cfg = RunConfig(**COMMON, **ALGORITHMS[algorithm])
    folder = tmp_path / cfg.key()

    def stop_after_round_5(row):
        if row["round"] == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _play(cfg, data, folder, after_round=stop_after_round_5)
    assert _assert_consistent_checkpoint(folder) == 5  # not the periodic one of round 4: nothing is lost
    _assert_same(_play(cfg, data, folder), refs[algorithm])


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="the test runner replaced Python's SIGINT handler")
@pytest.mark.parametrize("phase", ["train", "evaluate", "rank_statistics"])
def test_a_sigint_mid_round_finishes_the_round_then_checkpoints_it(phase, references, tmp_path, monkeypatch):
    data, refs = references
    cfg = RunConfig(**COMMON, **ALGORITHMS["colr"])
    folder = tmp_path / cfg.key()
    owner, name, call, _ = PHASES[phase]
    rounds_done = []
    with monkeypatch.context() as m:
        hook = Interrupt(m, owner, name, call, "sigint")
        with pytest.raises(KeyboardInterrupt):
            _play(cfg, data, folder, after_round=lambda row: rounds_done.append(row["round"]))
        assert hook.fired
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the engine's handler is gone
    assert _assert_consistent_checkpoint(folder) == len(rounds_done) > 0  # the round in progress was finished
    _assert_same(_play(cfg, data, folder), refs["colr"])


# --- a real process interrupted by a signal ---------------------------------------------------------------------
# Long enough that the test, starved of the cores by other work, still signals mid-run: at 300 and at 1000 rounds
# (a second or two) the whole run ended between two looks for its first checkpoint, on a machine whose two cores
# were busy with the suite's other worker.
CLI_CFG = dict(method="colr", rank=2, dim=8, synthetic_size="tiny", clients_per_round=4, local_epochs=1,
               batch_size=16, eval_every=100, rank_every=100, checkpoint_every=10, rounds=4000)


# `labcore run` as a shell starts it: Ctrl-C at its default and not blocked. A test worker can hold SIGINT ignored
# or blocked (a library's doing, some tests earlier); both survive exec, and the child would never see the signal.
_AS_FROM_A_SHELL = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT]); sys.argv[0] = 'labcore'; "
                    "runpy.run_module('labcore.cli', run_name='__main__')")


def _cli(cache):
    args = [f"--{k.replace('_', '-')}={v}" for k, v in CLI_CFG.items()]
    env = dict(os.environ, LABCORE_CACHE=str(cache), PYTHONPATH=str(ROOT), LABCORE_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", _AS_FROM_A_SHELL, "run", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _signal_after_next_checkpoint(proc, path: Path, sig) -> str:
    """Send `sig` once `path` is (re)written by `proc`: mid-run. Returns the process's stderr."""
    before = path.stat().st_mtime_ns if path.exists() else None
    try:
        while proc.poll() is None and (not path.exists() or path.stat().st_mtime_ns == before):
            time.sleep(0.02)
        proc.send_signal(sig)
        return proc.communicate(timeout=600)[1]
    finally:
        proc.kill()


def test_a_process_stopped_by_sigint_then_by_sigkill_resumes_exactly(tmp_path):
    """The CLI: Ctrl-C (SIGINT) mid-run, run again and killed (SIGKILL) mid-run, then finished: the stored tables
    are those of one run straight through."""
    cfg = RunConfig(**CLI_CFG)
    folder, rounds = tmp_path / cfg.key(), CLI_CFG["rounds"]
    first = _cli(tmp_path)
    err = _signal_after_next_checkpoint(first, folder / CHECKPOINT, signal.SIGINT)
    assert not (folder / "result.json").exists(), (
        f"the run ended although signalled (exit {first.returncode}; this worker's SIGINT: "
        f"{signal.getsignal(signal.SIGINT)}, blocked {signal.pthread_sigmask(signal.SIG_BLOCK, [])}): {err[-300:]}")
    at_sigint = _assert_consistent_checkpoint(folder)
    assert first.returncode == 130 and f"interrupted after round {at_sigint}" in err, err
    second = _cli(tmp_path)
    _signal_after_next_checkpoint(second, folder / CHECKPOINT, signal.SIGKILL)
    assert second.returncode == -signal.SIGKILL and not (folder / "result.json").exists()
    at_sigkill = _assert_consistent_checkpoint(folder)
    assert 0 < at_sigint < at_sigkill < rounds
    resumed_from = []
    resumed = run(cfg, cache_dir=tmp_path, progress=False, on_round=lambda row: resumed_from.append(row["round"]))
    assert resumed_from[0] == at_sigkill and resumed.complete
    straight = run(cfg, use_cache=False, progress=False)
    stored = Result.load(folder)
    pd.testing.assert_frame_equal(stored.table.drop(columns=MEASURED), straight.table.drop(columns=MEASURED),
                                  check_exact=True)
    pd.testing.assert_frame_equal(stored.ledger, straight.ledger, check_exact=True)


def test_a_notebook_kernel_interrupt_resumes_exactly(tmp_path):
    """Jupyter's interrupt (the ■ button: SIGINT to a real ipykernel) mid-run, then the same cell again: the
    stored tables are those of one run straight through."""
    from jupyter_client.manager import start_new_kernel

    cfg = RunConfig(**CLI_CFG)
    folder = tmp_path / cfg.key()
    env = dict(os.environ, LABCORE_CACHE=str(tmp_path), PYTHONPATH=str(ROOT), LABCORE_THREADS="1")
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(ROOT))
    cell = f"import labcore\nres = labcore.run(labcore.RunConfig(**{CLI_CFG!r}), progress=False)\nres.complete"
    try:
        msg_id = kc.execute(cell)
        deadline = time.monotonic() + 600
        while not (folder / CHECKPOINT).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=600)
        while reply["parent_header"].get("msg_id") != msg_id:  # skip the kernel-info reply of the start
            reply = kc.get_shell_msg(timeout=600)
        reply = reply["content"]
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
        assert not (folder / "result.json").exists(), "the run ended before the interrupt: raise rounds"
        at_interrupt = _assert_consistent_checkpoint(folder)
        assert 0 < at_interrupt < CLI_CFG["rounds"]
        reply = kc.execute_interactive(cell, timeout=600)["content"]  # the same cell again: resumes
        assert reply["status"] == "ok", reply
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    straight = run(cfg, use_cache=False, progress=False)
    stored = Result.load(folder)
    pd.testing.assert_frame_equal(stored.table.drop(columns=MEASURED), straight.table.drop(columns=MEASURED),
                                  check_exact=True)
    pd.testing.assert_frame_equal(stored.ledger, straight.ledger, check_exact=True)

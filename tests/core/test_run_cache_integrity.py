"""A cache that proves itself: a stored run records the sha256 and row count of its files, a checkpoint its sha256.
A truncated CSV, an edited value, a truncated JSON, a missing file, a result stored without the record, or a
checkpoint with flipped bits is reported by name and recomputed: through `labcore.run`, the CLI and the app's
jobs."""
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from labcore import RunConfig, run
from labcore.app import jobs
from labcore.cli import main as cli_main
from labcore.runner.checkpoint import CHECKPOINT, CHECKSUM_TAG
from labcore.results import Result
from labcore.runner.store import INTEGRITY, DamagedResult, verify

ROOT = Path(__file__).resolve().parents[2]
CFG = RunConfig(method="colr", synthetic_size="tiny", dim=8, rank=2, rounds=6, clients_per_round=8, local_epochs=1,
                batch_size=16, eval_every=2, rank_every=3, checkpoint_every=2)
CLI_ARGS = ["run", "--method=colr", "--synthetic-size=tiny", "--dim=8", "--rank=2", "--rounds=6",
            "--clients-per-round=8", "--local-epochs=1", "--batch-size=16", "--eval-every=2", "--rank-every=3",
            "--checkpoint-every=2", "--quiet"]
MEASURED = ["sec_local"]


def _truncate_csv(folder: Path) -> str:
    lines = (folder / "table.csv").read_text().splitlines(keepends=True)
    (folder / "table.csv").write_text("".join(lines[: len(lines) // 2]))
    return "table.csv"


def _edit_hr(folder: Path) -> str:
    t = pd.read_csv(folder / "table.csv")
    t.loc[t["hr"].notna().idxmax(), "hr"] += 0.01
    t.to_csv(folder / "table.csv", index=False)
    return "table.csv"


def _truncate_json(folder: Path) -> str:
    text = (folder / "result.json").read_text()
    (folder / "result.json").write_text(text[: len(text) // 2])
    return "result.json"


def _drop_ledger(folder: Path) -> str:
    (folder / "ledger.csv").unlink()
    return "ledger.csv"


def _no_record(folder: Path) -> str:  # as results were stored before they carried checksums
    meta = json.loads((folder / "result.json").read_text())
    del meta[INTEGRITY]
    (folder / "result.json").write_text(json.dumps(meta, indent=1))
    return "result.json"


DAMAGES = {"truncated_csv": _truncate_csv, "edited_hr": _edit_hr, "truncated_json": _truncate_json,
           "missing_file": _drop_ledger, "no_integrity_record": _no_record}


@pytest.fixture(scope="module")
def reference():
    return run(CFG, use_cache=False, progress=False)


def _same(res, ref) -> None:
    assert res.complete
    pd.testing.assert_frame_equal(res.table.drop(columns=MEASURED), ref.table.drop(columns=MEASURED),
                                  check_exact=True)
    pd.testing.assert_frame_equal(res.ledger, ref.ledger, check_exact=True)


def _stored_run(cache: Path) -> Path:
    run(CFG, cache_dir=cache, progress=False)
    folder = cache / CFG.key()
    verify(folder)
    return folder


def _flip_checkpoint_bits(cache: Path) -> Path:
    """A run stopped after 3 rounds leaves a checkpoint; flip low bits in the middle of its tensors' bytes."""
    stops = iter([False] * 3 + [True])
    run(CFG, cache_dir=cache, progress=False, should_stop=lambda: next(stops))
    path = cache / CFG.key() / CHECKPOINT
    data = bytearray(path.read_bytes())
    assert data[-(len(CHECKSUM_TAG) + 64):].startswith(CHECKSUM_TAG)
    data[len(data) // 2] ^= 0x01
    data[len(data) // 2 + 9] ^= 0x04
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_stored_result_is_named_and_recomputed(damage, reference, tmp_path):
    folder = _stored_run(tmp_path)
    name = DAMAGES[damage](folder)
    with pytest.raises(DamagedResult, match=name):
        Result.load(folder)
    trained = []
    with pytest.warns(UserWarning, match=rf"{name}.*recomputing"):
        res = run(CFG, cache_dir=tmp_path, progress=False, on_round=lambda row: trained.append(row["round"]))
    assert trained == list(range(CFG.rounds)) and not res.cached
    _same(res, reference)
    _same(Result.load(folder), reference)  # stored again, with a record that holds


def test_a_checkpoint_with_flipped_bits_is_named_and_ignored(reference, tmp_path):
    path = _flip_checkpoint_bits(tmp_path)
    trained = []
    with pytest.warns(UserWarning, match=rf"{CHECKPOINT}.*checksum mismatch.*round 0"):
        res = run(CFG, cache_dir=tmp_path, progress=False, on_round=lambda row: trained.append(row["round"]))
    assert trained == list(range(CFG.rounds))  # from round 0, not from the damaged state
    _same(res, reference)
    assert not path.exists()


def _cli(tmp_path, capsys):
    rc = cli_main([*CLI_ARGS, f"--cache-dir={tmp_path}"])
    return rc, capsys.readouterr()


@pytest.mark.parametrize("damage", ["truncated_csv", "edited_hr", "truncated_json", "flipped_checkpoint"])
def test_the_cli_names_the_damaged_file_and_recomputes(damage, reference, tmp_path, capsys):
    if damage == "flipped_checkpoint":
        _flip_checkpoint_bits(tmp_path)
        name = CHECKPOINT
    else:
        name = DAMAGES[damage](_stored_run(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc, out = _cli(tmp_path, capsys)
    assert rc == 0 and "(cached)" not in out.out and f"{CFG.rounds} rounds" in out.out
    assert any(name in str(w.message) for w in caught), [str(w.message) for w in caught]
    _same(Result.load(tmp_path / CFG.key()), reference)


def test_a_cli_process_reports_a_truncated_json_by_name_and_recomputes(reference, tmp_path):
    folder = _stored_run(tmp_path)
    _truncate_json(folder)
    env = dict(os.environ, LABCORE_CACHE=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "labcore.cli", *CLI_ARGS], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{folder / 'result.json'}: unreadable" in done.stderr and "recomputing" in done.stderr
    assert "(cached)" not in done.stdout
    _same(Result.load(folder), reference)


def _wait(job, timeout=600):
    t0 = time.monotonic()
    while not job.done:
        job.wait(job.version, 0.2)
        for s in job.sessions():
            job.touch(s)
        assert time.monotonic() - t0 < timeout, "the job never finished (hung)"
    return job


@pytest.mark.parametrize("damage", ["truncated_csv", "edited_hr", "truncated_json", "flipped_checkpoint"])
def test_the_app_recomputes_a_damaged_folder_instead_of_failing(damage, reference, tmp_path):
    from labcore.data import load_dataset

    if damage == "flipped_checkpoint":
        _flip_checkpoint_bits(tmp_path)
        name = CHECKPOINT
    else:
        name = DAMAGES[damage](_stored_run(tmp_path))
        with pytest.warns(UserWarning, match=name):
            assert jobs.stored(CFG, tmp_path) is None  # the page asks first: a damaged folder is no result
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        job = _wait(jobs.JobHub().follow(CFG, load_dataset("synthetic", size="tiny"), "s", tmp_path))
    assert job.error is None and job.complete and not job.snapshot.cached
    assert any(name in str(w.message) for w in caught), [str(w.message) for w in caught]
    _same(job.snapshot, reference)
    assert jobs.stored(CFG, tmp_path) is not None  # the next visit reads it

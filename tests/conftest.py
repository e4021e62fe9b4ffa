import os
from pathlib import Path

import numpy as np
import pytest

from labcore.data.base import InteractionData

ROOT = Path(__file__).resolve().parents[1]


def make_tiny(n_users=30, n_items=50, seed=0, max_items=20) -> InteractionData:
    """A hand-sized dataset for exact engine tests (no loader involved)."""
    rng = np.random.default_rng(seed)
    rows = [np.sort(rng.choice(n_items, size=rng.integers(3, max_items), replace=False)) for _ in range(n_users)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    test = np.array([rng.choice(np.setdiff1d(np.arange(n_items), r)) for r in rows], dtype=np.int64)
    negs = np.stack([rng.choice(np.setdiff1d(np.arange(n_items), np.append(r, t)), 9, replace=False)
                     for r, t in zip(rows, test)]).astype(np.int64)
    return InteractionData("tiny-test", n_users, n_items, indptr, np.concatenate(rows).astype(np.int64), test, negs)


@pytest.fixture
def tiny():
    return make_tiny()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own result cache."""
    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path / "runs"))


def shared_data() -> Path | None:
    p = os.environ.get("LABCORE_DATA")
    return Path(p) if p and Path(p).is_dir() else None


def assert_a_stopped_run_resumes(cfg, data, folder, stop_after: int = 7):
    """Stop a run after `stop_after` rounds (a checkpoint is left), run it again: the same numbers as one run
    straight through (the state a run keeps across rounds must all be in its checkpoint)."""
    from labcore.fed.engine import CHECKPOINT, run

    full = run(cfg, data=data, use_cache=False, progress=False)
    stops = iter([False] * stop_after + [True])
    part = run(cfg, data=data, cache_dir=folder, progress=False, should_stop=lambda: next(stops))
    assert not part.complete and (folder / cfg.key() / CHECKPOINT).exists()
    resumed = run(cfg, data=data, cache_dir=folder, progress=False)
    assert resumed.table["loss"].tolist() == full.table["loss"].tolist()
    for col in ("hr", "hr_personal", "backdoor_success"):  # the personal models and attackers are state too
        if col in full.table:
            assert resumed.table[col].dropna().tolist() == full.table[col].dropna().tolist()

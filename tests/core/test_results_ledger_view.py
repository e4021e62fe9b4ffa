"""`Result.ledger_by_round`: the payload ledger summed over message parts, one row per round, with the accountant's
epsilon and sigma from the run table when the run used DP (and no epsilon column without DP)."""
import numpy as np
import pandas as pd

from labcore.config import RunConfig
from labcore.fed.engine import run
from labcore.results import KB, LEDGER_VIEW, MB, Result

DP = dict(client_schedule="poisson", aggregation="weighted", clients_per_round=10, local_epochs=1, batch_size=16,
          dim=8, eval_every=3, rank_every=0)
UP, DOWN, CUM, SIGMA, EPS = (LEDGER_VIEW[k] for k in ("up", "down", "cum", "dp_sigma", "epsilon"))


def _ledger_sums(res: Result, direction: str) -> list[int]:
    led = res.ledger[res.ledger["direction"] == direction]
    return [int(led.loc[led["round"] == r, "bytes"].sum()) for r in res.table["round"]]


def test_a_dp_run_has_the_tables_epsilon_and_the_ledgers_bytes_round_by_round(tiny, tmp_path):
    cfg = RunConfig(method="colr", rank=2, dp_mode="central", dp_noise_multiplier=1.2, dp_clip=0.5, rounds=3, **DP)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    view = res.ledger_by_round()
    assert list(view.columns) == ["round", UP, DOWN, CUM, SIGMA, EPS]
    assert view["round"].tolist() == res.table["round"].tolist() == [0, 1, 2]
    assert view[EPS].tolist() == res.table["epsilon"].tolist()
    assert view[SIGMA].tolist() == res.table["dp_sigma"].tolist() == [1.2] * 3
    up, down = _ledger_sums(res, "up"), _ledger_sums(res, "down")
    assert (view[UP] * KB).tolist() == up and (view[DOWN] * KB).tolist() == down
    assert (view[CUM] * MB).tolist() == np.cumsum(np.add(up, down)).tolist()
    # a plain (unencrypted) run's ledger holds every byte of its table
    assert up == res.table["bytes_up"].tolist() and down == res.table["bytes_down"].tolist()
    res.save(tmp_path / "r")
    pd.testing.assert_frame_equal(Result.load(tmp_path / "r").ledger_by_round(), view)


def test_without_dp_there_is_no_epsilon_column(tiny):
    cfg = RunConfig(method="fedmf", aggregation="weighted", clients_per_round=10, rounds=2, dim=8, eval_every=2,
                    rank_every=0)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    view = res.ledger_by_round()
    assert list(view.columns) == ["round", UP, DOWN, CUM]
    assert (view[UP] * KB).tolist() == _ledger_sums(res, "up")


def test_parts_are_summed_and_a_round_without_ledger_rows_sent_nothing():
    cfg = RunConfig(dp_mode="central", dp_noise_multiplier=1.0, client_schedule="poisson", aggregation="weighted")
    table = pd.DataFrame({"round": [0, 1, 2], "dp_sigma": [1.0, 1.0, 1.0], "epsilon": [0.5, 0.75, 0.875]})
    ledger = pd.DataFrame([(0, "up", "A", "factors", 4, 1000, 8000), (0, "up", "mask", "bitmap", 4, 24, 192),
                           (0, "down", "A", "factors", 4, 2048, 16384), (2, "up", "A", "factors", 2, 512, 4096)],
                          columns=["round", "direction", "part", "kind", "messages", "bytes", "bits"])
    view = Result(cfg, table, ledger).ledger_by_round()
    assert view["round"].tolist() == [0, 1, 2]
    assert view[UP].tolist() == [1.0, 0.0, 0.5] and view[DOWN].tolist() == [2.0, 0.0, 0.0]
    assert (view[CUM] * MB).tolist() == [3072, 3072, 3584]
    assert view[EPS].tolist() == [0.5, 0.75, 0.875]
    plain = Result(RunConfig(), table.assign(epsilon=np.nan, dp_sigma=np.nan), ledger).ledger_by_round()
    assert EPS not in plain and SIGMA not in plain

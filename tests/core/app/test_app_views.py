"""The Explorer's time and rank charts at defaults: scales that do not mislead, older runs without new columns."""
import numpy as np
import pandas as pd

from labcore import RunConfig
from labcore.plots import effective_rank, round_breakdown
from labcore.results import Result


def _result(agg: bool) -> Result:
    t = pd.DataFrame({"round": [0, 5, 10], "n90_mean": [1.0, 1.0, 1.0], "n90_std": [0.0, 0.0, 0.0],
                      "n99_mean": [1.0, 1.02, 1.0], "n99_std": [0.0, 0.01, 0.0], "erank_mean": [1.03, 1.02, 1.02],
                      "t_comm": [0.03, 0.03, 0.03], "t_comp": [10.0, 10.0, 10.0], "t_round": [10.03] * 3})
    if agg:
        t["agg_n90"], t["agg_n99"], t["agg_erank"] = [3.0, 5.0, 7.0], [9.0, 12.0, 14.0], [8.0, 10.0, 12.0]
    return Result(RunConfig(), t, pd.DataFrame())


def test_effective_rank_starts_at_zero_and_shows_the_aggregated_update_when_measured():
    old = effective_rank(_result(agg=False), ceiling=4)
    assert len(old.data) == 3 and old.layout.yaxis.range[0] == 0 and old.layout.yaxis.range[1] >= 4
    n90, n99 = old.data[0], old.data[1]
    assert (n90.line.dash, n90.marker.symbol) != (n99.line.dash, n99.marker.symbol)  # N90 does not hide N99
    new = effective_rank(_result(agg=True), ceiling=4)
    names = [d.name for d in new.data]
    assert "N90 aggregated" in names and "N99 aggregated" in names
    assert new.layout.yaxis.range[1] >= 14  # the aggregate's rank fits


def test_round_time_gives_communication_its_own_axis_and_its_share():
    fig = round_breakdown(_result(agg=False))
    comm = next(d for d in fig.data if d.name == "communication")
    assert comm.yaxis != next(d for d in fig.data if d.name == "computation").yaxis
    assert np.allclose(comm.y, 0.03)
    assert any("communication" in a.text and "(0.3%)" in a.text for a in fig.layout.annotations)


def test_card_tables_get_readable_column_names_without_relabelling_units():
    import pandas as pd

    from labcore.app.downloads import human_columns

    t = human_columns(pd.DataFrame({"hr": [0.5], "up_kb": [1.0], "round_best": [3], "bytes_up": [2048], "wall_s": [1.5]}))
    assert list(t.columns) == ["HR@10", "up (KB)", "round best", "bytes up", "wall (s)"]
    assert t.iloc[0].tolist() == [0.5, 1.0, 3, 2048, 1.5]  # values untouched: raw bytes are not called KB

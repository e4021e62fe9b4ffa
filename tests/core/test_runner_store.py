"""One on-disk format for every topic's runs (labcore/runner/store.py): tables as CSV, one result.json with the
config, command, versions, timing and an integrity record that refuses a damaged run by name."""
import json

import pandas as pd
import pytest

from labcore.runner.store import RESULT, DamagedResult, load_run, load_timing, save_run, stored, timing, verify


def _tables():
    return {"table": pd.DataFrame({"round": [0, 1, 2], "loss": [0.5, 0.25, 0.125]}),
            "ledger": pd.DataFrame({"round": [0, 1], "bytes": [10, 20]})}


def test_a_run_reads_back_as_it_was_written_with_its_config_command_versions_and_timing(tmp_path):
    folder = tmp_path / "run"
    assert not stored(folder)
    save_run(folder, _tables(), {"config": {"rank": 4}, "notes": "a split"}, timing(1.234, 1.111, rounds=3))
    assert stored(folder) and sorted(p.name for p in folder.iterdir()) == ["ledger.csv", RESULT, "table.csv"]
    tables, meta = load_run(folder, ("table", "ledger"))
    for name, frame in _tables().items():
        pd.testing.assert_frame_equal(tables[name], frame)
    assert meta["config"] == {"rank": 4} and meta["notes"] == "a split"
    assert meta["command"] and {"labcore", "python"} <= set(meta["versions"])
    assert load_timing(folder)["seconds"] == 1.23 and load_timing(folder)["cpu_seconds"] == 1.11
    assert load_timing(folder)["rounds"] == 3


@pytest.mark.parametrize(("damage", "named"), [
    (lambda f: (f / "table.csv").write_text((f / "table.csv").read_text().replace("0.25", "0.26")), "sha256"),
    (lambda f: (f / "ledger.csv").write_text("round,bytes\n0,10\n"), "rows"),
    (lambda f: (f / "ledger.csv").unlink(), "missing"),
    (lambda f: (f / RESULT).write_text((f / RESULT).read_text().replace('"rank": 4', '"rank": 8')), "fields"),
    (lambda f: (f / RESULT).write_text("{"), "unreadable"),
])
def test_a_damaged_run_is_refused_naming_what_is_wrong(tmp_path, damage, named):
    save_run(tmp_path, _tables(), {"config": {"rank": 4}})
    damage(tmp_path)
    with pytest.raises(DamagedResult, match=named):
        load_run(tmp_path, ("table", "ledger"))


def test_a_table_the_reader_needs_must_be_recorded(tmp_path):
    save_run(tmp_path, {"table": _tables()["table"]}, {"config": {}})
    with pytest.raises(DamagedResult, match="lists no ledger.csv"):
        verify(tmp_path, ("table", "ledger"))


def test_a_run_without_an_integrity_record_cannot_prove_itself(tmp_path):
    save_run(tmp_path, _tables(), {"config": {}})
    meta = json.loads((tmp_path / RESULT).read_text())
    del meta["integrity"]
    (tmp_path / RESULT).write_text(json.dumps(meta))
    with pytest.raises(DamagedResult, match="no integrity record"):
        verify(tmp_path)


def test_numpy_values_sets_and_paths_in_a_topics_fields_read_back_as_plain_json(tmp_path):
    import numpy as np

    save_run(tmp_path, _tables(), {"config": {}, "a": np.arange(3), "x": np.float32(0.5), "s": {2, 1},
                                   "p": tmp_path / "f"})
    _, meta = load_run(tmp_path, ("table", "ledger"))
    assert meta["a"] == [0, 1, 2] and meta["x"] == 0.5 and meta["s"] == [1, 2] and meta["p"] == str(tmp_path / "f")

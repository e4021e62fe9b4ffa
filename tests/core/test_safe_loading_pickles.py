"""Pickles planted in a shared folder run no code: a checkpoint in the run cache is read with weights_only after its
checksum; a Planetoid file in the data folder through an unpickler that allows only the format's classes. Each
planted file would create a marker file if anything unpickled it; the marker must never appear."""
import hashlib
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from conftest import shared_data
from labcore import RunConfig, run
from labcore.runner.checkpoint import CHECKPOINT, CHECKSUM_TAG
from labcore.gist import planetoid
from labcore.sdp import graphs

CFG = RunConfig(method="colr", synthetic_size="tiny", dim=8, rank=2, rounds=4, clients_per_round=8, local_epochs=1,
                batch_size=16, eval_every=2, rank_every=2)


class Planted:
    """Unpickled by a trusting loader, this writes the marker file."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


def _assert_plant_would_run(data: bytes, marker: Path) -> None:
    """The planted bytes do run code under a plain unpickler (so the checks below can fail)."""
    import io

    class Plain(pickle.Unpickler):
        pass

    try:
        torch.load(io.BytesIO(data), weights_only=False) if data[:2] == b"PK" else Plain(io.BytesIO(data)).load()
    except Exception:
        pass
    assert marker.exists(), "the planted pickle does not run code: the test proves nothing"
    marker.unlink()


@pytest.mark.parametrize("with_checksum", [False, True])
def test_a_planted_checkpoint_runs_no_code_and_the_run_trains_from_round_0(with_checksum, tmp_path):
    marker = tmp_path / "marker"
    folder = tmp_path / "cache" / CFG.key()
    folder.mkdir(parents=True)
    path = folder / CHECKPOINT
    torch.save({"round": 2, "key": CFG.key(), "Q": Planted(marker)}, path)
    _assert_plant_would_run(path.read_bytes(), marker)
    if with_checksum:  # a planter can compute the checksum: weights_only still refuses the object
        path.write_bytes(path.read_bytes() + CHECKSUM_TAG + hashlib.sha256(path.read_bytes()).hexdigest().encode())
    why = "refused: it holds objects other than tensors.*exec" if with_checksum else "no checksum"
    trained = []
    with pytest.warns(UserWarning, match=rf"{CHECKPOINT}.*({why})"):
        res = run(CFG, cache_dir=tmp_path / "cache", progress=False, on_round=lambda row: trained.append(row["round"]))
    assert not marker.exists()
    assert res.complete and trained == list(range(CFG.rounds))


def _planetoid_copy(tmp_path: Path) -> Path:
    root = shared_data()
    if root is None or not (root / "planetoid" / "ind.cora.graph").is_file():
        pytest.skip("the Planetoid files are not in $LABCORE_DATA/planetoid")
    folder = tmp_path / "data" / "planetoid"
    folder.mkdir(parents=True)
    for f in (root / "planetoid").glob("ind.cora.*"):
        shutil.copy(f, folder / f.name)
    return folder


def test_a_planted_planetoid_file_runs_no_code_and_is_named(tmp_path, monkeypatch):
    folder = _planetoid_copy(tmp_path)
    monkeypatch.setenv("LABCORE_DATA", str(folder.parent))
    marker = tmp_path / "marker"
    planted = pickle.dumps(Planted(marker), protocol=2)
    _assert_plant_would_run(planted, marker)
    for part in ("graph", "x"):  # the graph (read by both labs) and a feature matrix
        original = (folder / f"ind.cora.{part}").read_bytes()
        (folder / f"ind.cora.{part}").write_bytes(planted)
        refused = rf"ind\.cora\.{part}: refusing to load (__builtin__|builtins)\.exec"  # Python 2 pickles say __builtin__
        with pytest.raises(planetoid.PlanetoidError, match=refused):
            planetoid.load("cora", download=False)
        if part == "graph":
            with pytest.raises(ValueError, match=refused):
                graphs.cora()
        (folder / f"ind.cora.{part}").write_bytes(original)
        assert not marker.exists()
    assert planetoid.load("cora", download=False).summary()["edges"] == 5278  # the copy itself loads


def test_the_restricted_unpickler_refuses_any_other_class(tmp_path):
    path = tmp_path / "ind.cora.y"
    path.write_bytes(pickle.dumps(shutil.rmtree, protocol=2))
    with pytest.raises(planetoid.PlanetoidError, match=rf"{path}: refusing to load shutil\.rmtree"):
        planetoid.read_pickle(path)
    path.write_bytes(b"\x80\x02not a pickle")
    with pytest.raises(planetoid.PlanetoidError, match=rf"{path} is not a Planetoid pickle"):
        planetoid.read_pickle(path)


def test_the_real_planetoid_files_still_load():
    root = shared_data()
    if root is None or not (root / "planetoid").is_dir():
        pytest.skip("the Planetoid files are not in $LABCORE_DATA/planetoid")
    assert planetoid.load("cora", download=False).summary() == {
        "graph": "cora", "nodes": 2708, "features": 1433, "classes": 7, "edges": 5278, "train": 140, "val": 500,
        "test": 1000}
    assert planetoid.load("citeseer", download=False).summary()["nodes"] == 3327
    for f in sorted((root / "planetoid").glob("ind.pubmed.*")):
        if not f.name.endswith("test.index"):
            assert planetoid.read_pickle(f) is not None
    A = graphs.cora()
    assert A.shape == (2708, 2708) and A.nnz == 2 * 5278

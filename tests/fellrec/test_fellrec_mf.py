"""Table 2's matrix factorization baselines: ranking on a tiny exact case, and training that learns."""
import numpy as np
import pandas as pd
import pytest
import torch

from labcore.fellrec import mf
from labcore.fellrec.data import SeqData


def _data() -> SeqData:
    # 4 users over 25 items (20 of them never seen); each trains on two items, validates on one, tests on the last
    seqs = [np.array(s) for s in ([0, 1, 2, 3], [1, 2, 3, 4], [0, 2, 4, 1], [3, 4, 0, 2])]
    return SeqData("tiny", 25, [f"item {i}" for i in range(25)], np.zeros((25, 1), np.int64), 0, 1, seqs,
                   n_train=np.array([2, 2, 2, 2]), n_val=np.array([1, 1, 1, 1]), foundation_users=np.array([], int),
                   client_users=np.arange(4))


def test_evaluate_ranks_the_catalogue_without_the_seen_items_per_client():
    data, clients = _data(), [np.array([0, 1]), np.array([2, 3])]
    Q = torch.zeros(25, 5)
    Q[:5] = torch.eye(5)  # item i's vector is e_i (the others 0): a user scores items by its own coordinates
    P = torch.tensor([[0, 0, 0, 9, 1], [5, 0, 0, 0, 1], [0, 9, 0, 0, 0], [0, 0, 0, 0, 0.0]])
    out = mf.evaluate(P, Q, data, clients).set_index("client")
    # user 0 (seen 0, 1, 2; test 3): top item 3, a hit at rank 1; user 1 (seen 1, 2, 3; test 4): item 0 first, 4 second
    assert out.loc[0, "N@10"] == pytest.approx((1 + 1 / np.log2(3)) / 2) and out.loc[0, "R@10"] == 1.0
    assert out.loc[1, "R@10"] == 1.0 and out["users"].tolist() == [2, 2]


def test_both_baselines_learn_the_training_items():
    data, clients = _data(), [np.array([0, 1]), np.array([2, 3])]
    s = mf.MFSettings(dim=4, lr=0.1, batch_size=4, epochs=30, rounds=30)
    for train in (mf.central, mf.federated):
        out = train(data, clients, s, seed=0)
        assert isinstance(out, pd.DataFrame) and len(out) == 2 and out["R@10"].between(0, 1).all()
    rows, items = mf._pairs(data, np.arange(4))
    gen = torch.Generator().manual_seed(0)
    P, Q = mf._init(4, s, gen), mf._init(25, s, gen)
    before = torch.nn.functional.cross_entropy(P[rows] @ Q.T, items)
    P, Q = mf._epochs(P, Q, rows, items, s, 30, gen)
    assert torch.nn.functional.cross_entropy(P[rows] @ Q.T, items) < before - 0.5

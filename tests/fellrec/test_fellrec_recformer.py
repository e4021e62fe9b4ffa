"""The RecFormer-style recommender on MiniLM: texts, scores, the split for every k, a federated run."""
import numpy as np
import pytest
import torch

from labcore.fellrec.config import FellrecConfig
from labcore.fellrec.federated import dataset, foundation
from labcore.fellrec.model import freeze_base
from labcore.fellrec.offload import Channel, split, split_step
from labcore.fellrec.recformer import CLS, SEP, few_shot

CFG = FellrecConfig(backbone="minilm", dataset="synthetic", history=3, title_tokens=4, samples=64, lora_rank=2,
                    batch_size=16, rounds=1, mf_rounds=3, vocab_size=100)


@pytest.fixture(scope="module")
def model():
    m = foundation(CFG)
    freeze_base(m)
    with torch.no_grad():  # trained-looking adapters, so their gradients and the split are not trivial
        for n, p in m.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(len(n)))
    m.refresh_items()
    return m


def test_user_text_is_the_titles_in_order(model):
    x = torch.tensor([[3, 5, -1]])
    ids, mask = model.user_inputs(x)
    t3 = [t for t in model.titles[3].tolist() if t]
    t5 = [t for t in model.titles[5].tolist() if t]
    assert ids[0, : int(mask.sum())].tolist() == [CLS] + t3 + [SEP] + t5 + [SEP]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_split_forward_and_backward_equal_the_unsplit_model(model, k):
    x = torch.tensor([[0, 1, 2], [4, 7, -1], [9, -1, -1]])
    y = torch.tensor([5, 8, 11])
    params = [p for p in model.parameters() if p.requires_grad]
    model.zero_grad(set_to_none=True)
    _, loss = model(x, y)
    loss.backward()
    ref = [p.grad.clone() for p in params]
    model.zero_grad(set_to_none=True)
    ch = Channel()
    split_loss = split_step(*split(model, k), x, y, ch)
    assert abs(float(split_loss) - float(loss.detach())) < 1e-5
    worst = max(float((p.grad - g).abs().max()) for p, g in zip(params, ref))
    assert worst < 1e-5, worst
    assert ch.bytes[("up", "hidden_k")] > 3 * 384 * 4 and ch.bytes[("up", "mask")] > 0


def test_the_few_shot_set_has_the_asked_size_and_stays_with_its_users():
    data = dataset(CFG)
    groups = [data.client_users[:10], data.client_users[10:]]
    parts = few_shot(data, groups, CFG.history, 50, seed=0)
    assert sum(len(y) for _, y in parts) == 50
    again = few_shot(data, groups, CFG.history, 50, seed=0)
    assert all(torch.equal(a[1], b[1]) for a, b in zip(parts, again))


def test_a_minilm_fellrec_round_runs_and_repeats():
    from labcore.fellrec.federated import run

    cfg = CFG.replace(n_clients=2, samples=24, batch_size=12)
    a = run(cfg, use_cache=False)
    b = run(cfg, use_cache=False)
    assert len(a.clients) == cfg.n_clients
    assert np.allclose(a.clients["R@10"], b.clients["R@10"])
    assert (a.ledger["part"] == "mask").any()

"""The wireless channel in the core engine: quantized messages over links with a budget (log2 K levels)."""
from __future__ import annotations

import pytest
import torch

import labcore
from labcore import RunConfig
from labcore.app.state import EXPLORER, parse
from labcore.fed.mods import quantize_wires
from labcore.methods.base import Wire

BASE = dict(dataset="synthetic", synthetic_size="tiny", rounds=4, clients_per_round=10, dim=8, method="colr", rank=2,
            eval_every=2, rank_every=0)


def _table(**kw):
    res = labcore.run(RunConfig(**BASE, **kw), progress=False, use_cache=False)
    return res.table.drop(columns=["sec_local"], errors="ignore")


def test_a_budget_that_carries_the_bits_changes_nothing():
    """k = 2^b - 1 levels fit a budget of b bits: the same numbers, bit for bit, as an unlimited link."""
    plain = _table(up_bits=6, down_bits=6)
    within = _table(up_bits=6, down_bits=6, up_link_budget=6, down_link_budget=6)
    assert plain.equals(within)


def test_bits_beyond_the_budget_arrive_noisy_and_cost_the_same_bytes():
    plain, over = _table(up_bits=8, down_bits=8), _table(up_bits=8, down_bits=8, up_link_budget=3, down_link_budget=3)
    assert list(plain["bytes_up"]) == list(over["bytes_up"]) and list(plain["bytes_down"]) == list(over["bytes_down"])
    assert not plain["loss"].equals(over["loss"])  # the receiver decoded other values


def test_the_channel_adds_noise_only_on_the_receiving_side():
    x = torch.linspace(-1, 1, 64).reshape(2, 32)
    wires = [Wire("A", "factors", x)]
    sent_a, recv_a = quantize_wires(wires, 8, 16, torch.Generator().manual_seed(0))
    sent_b, recv_b = quantize_wires(wires, 8, 16, torch.Generator().manual_seed(0), link_budget=2)
    assert torch.equal(sent_a[0].data, sent_b[0].data)  # the same codes go on the air
    err_a = (recv_a[0].dense() - x).abs().mean()
    err_b = (recv_b[0].dense() - x).abs().mean()
    assert err_b > 3 * err_a  # 255 levels through a 4-level channel


def test_bad_budgets_name_the_field_and_defaults_keep_the_cache_key():
    with pytest.raises(ValueError, match="down_link_budget=30 is invalid"):
        RunConfig(down_bits=8, down_link_budget=30)
    assert RunConfig(up_link_budget=0).key() == RunConfig().key()
    assert RunConfig(up_link_budget=4).key() == RunConfig().key()  # a float32 link: the budget acts on nothing
    assert RunConfig(up_bits=8, up_link_budget=4).key() != RunConfig(up_bits=8).key()


def test_the_explorer_link_sets_the_channel():
    p = parse({"up_bits": "8", "up_link_budget": "4"}, EXPLORER)
    assert not p.warnings and p.cfg.up_link_budget == 4 and p.cfg.up_bits == 8

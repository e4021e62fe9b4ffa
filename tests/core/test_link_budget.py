"""The wireless channel in the core engine: quantized messages over links with a budget (log2 K levels)."""
from __future__ import annotations

import numpy as np
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


@pytest.mark.parametrize("layout", ["item", "factor"])
def test_a_payload_held_by_rows_sends_the_clean_links_codes_and_receives_whole_tables(layout):
    """FedMF's / CoLR's uplink over a noisy link: the codes and norms sent are those of a clean link with the same
    seed (the channel acts after them); the receiver gets each client's whole table, zeros moved in the buckets
    that hold a value, none elsewhere."""
    from labcore.fed.local_train import RowUpdate
    from labcore.methods.base import RowBlock

    M, N, k, bucket = 4, 40, 3, 12
    g = torch.Generator().manual_seed(0)
    touched = torch.rand(M, N, generator=g) < 0.1
    rows = RowUpdate.from_dense(torch.randn(M, N, k, generator=g) * touched[..., None], touched)
    wires = [Wire("u", "values", None, rows=RowBlock(rows, layout))]
    sent_a, recv_a = quantize_wires(wires, 8, bucket, torch.Generator().manual_seed(1))
    sent_b, recv_b = quantize_wires(wires, 8, bucket, torch.Generator().manual_seed(1), link_budget=3)
    assert all(torch.equal(a.data, b.data) for a, b in zip(sent_a, sent_b))  # codes, then norms
    assert recv_a[0].rows is not None and recv_b[0].rows is None and not recv_b[0].exact_zeros
    clean, noisy = recv_a[0].dense(), recv_b[0].dense()
    assert noisy.shape == clean.shape == (M, N * k)
    with_norm = np.repeat(sent_b[1].data.numpy() > 0, bucket, axis=1)[:, :N * k]
    assert (noisy[~with_norm] == 0).all() and (noisy[with_norm & (clean == 0).numpy()] != 0).any()


def test_bad_budgets_name_the_field_and_defaults_keep_the_cache_key():
    with pytest.raises(ValueError, match="down_link_budget=30 is invalid"):
        RunConfig(down_bits=8, down_link_budget=30)
    assert RunConfig(up_link_budget=0).key() == RunConfig().key()
    assert RunConfig(up_link_budget=4).key() == RunConfig().key()  # a float32 link: the budget acts on nothing
    assert RunConfig(up_bits=8, up_link_budget=4).key() != RunConfig(up_bits=8).key()


def test_the_explorer_link_sets_the_channel():
    p = parse({"up_bits": "8", "up_link_budget": "4"}, EXPLORER)
    assert not p.warnings and p.cfg.up_link_budget == 4 and p.cfg.up_bits == 8


def _message(M=5, n=61, bits=4, bucket=8, seed=0):
    """A packed QSGD message whose clients hold a few rows: most buckets without a norm, zeros beside held values."""
    from labcore.methods.quantize import pack_codes, quantize

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, n, generator=g) * (torch.rand(M, n, generator=g) < 0.15)
    x[2] = 0.0  # a client that holds nothing
    levels, signs, norms = quantize(x, bits, bucket, g)
    return pack_codes(levels.numpy(), signs.numpy(), bits), norms.numpy(), levels, signs


@pytest.mark.parametrize("bits,budget", [(4, 1), (32, 20)], ids=["5-bit-codes", "33-bit-codes"])
@pytest.mark.parametrize("block", [None, 1], ids=["one-block", "a-block-per-client"])
def test_the_channel_on_packed_codes_is_eq6_on_the_levels_with_draws_where_a_bucket_has_a_norm(block, bits, budget,
                                                                                               monkeypatch):
    """`transmit_packed` as written (`literal`; past TABLE_LEVELS levels, always) gives what Eq. (6) and the
    dequantizer give on the unpacked levels (the float64 steps of `transmit_levels` and `dequantize`) with one normal
    and one uniform per value of a bucket with a norm (a block of clients' normals, then its uniforms): bit for bit; a
    bucket without a norm arrives as zeros, drawing nothing."""
    from labcore.methods.quantize import draws_for
    from labcore.net import channel

    M, n, bucket = 5, 61, 8
    packed, norms, levels, signs = _message(M, n, bits, bucket)
    if block:
        monkeypatch.setattr(channel, "BLOCK_VALUES", block)
    got = channel.transmit_packed(packed, norms, n, bits, bucket, budget, torch.Generator().manual_seed(3),
                                  literal=bits < 32)

    s, sigma = 2**bits - 1, channel.noise_std(budget)
    has_norm = np.repeat(norms > 0, bucket, axis=1)[:, :n]
    rng = draws_for(torch.Generator().manual_seed(3))
    want = np.zeros((M, n), dtype=np.float32)
    for clients in ([[m] for m in range(M)] if block else [list(range(M))]):
        at = has_norm[clients]
        z, u = rng.standard_normal(int(at.sum())), rng.random(int(at.sum()))
        y = levels.numpy()[clients][at] / s + z * sigma
        r = np.clip(y, 0.0, 1.0) * s
        lv = np.minimum(np.floor(r) + (u < r - np.floor(r)), s)
        norm = np.repeat(norms[clients], bucket, axis=1)[:, :n][at].astype(np.float64)
        part = want[clients]
        part[at] = ((lv / s) * np.where(signs.numpy()[clients][at], -1.0, 1.0) * norm).astype(np.float32)
        want[clients] = part
    assert np.array_equal(got.numpy(), want)
    assert (got.numpy()[~has_norm] == 0).all() and (got.numpy()[has_norm & (levels.numpy() == 0)] != 0).any()
    with pytest.raises(channel.ChannelError, match="budget_bits=4 carries 15 levels exactly"):
        channel.transmit_packed(packed, norms, n, 4, bucket, 4, torch.Generator())


@pytest.mark.parametrize("block", [None, 1], ids=["one-block", "a-block-per-client"])
def test_the_channel_on_packed_codes_draws_each_received_level_from_its_table_with_one_uniform(block, monkeypatch):
    """Up to TABLE_LEVELS levels: each value of a bucket with a norm arrives as the inverse of its sent level's row of
    `received_level_table` at one uniform draw (a block of clients' uniforms at a time), bit for bit."""
    from labcore.methods.quantize import draws_for
    from labcore.net import channel

    M, n, bits, bucket, budget = 5, 61, 4, 8, 1
    packed, norms, levels, signs = _message(M, n, bits, bucket)
    if block:
        monkeypatch.setattr(channel, "BLOCK_VALUES", block)
    got = channel.transmit_packed(packed, norms, n, bits, bucket, budget, torch.Generator().manual_seed(3)).numpy()

    s = 2**bits - 1
    cdf, _ = channel.received_level_table(s, budget)
    has_norm = np.repeat(norms > 0, bucket, axis=1)[:, :n]
    u = draws_for(torch.Generator().manual_seed(3)).random(int(has_norm.sum()))  # blocks draw the same stream
    sent = levels.numpy()[has_norm]
    lv = np.array([np.searchsorted(cdf[l], x, side="right") for l, x in zip(sent, u)])
    norm = np.repeat(norms, bucket, axis=1)[:, :n][has_norm].astype(np.float64)
    want = np.zeros((M, n), dtype=np.float32)
    want[has_norm] = ((lv / s) * np.where(signs.numpy()[has_norm], -1.0, 1.0) * norm).astype(np.float32)
    assert np.array_equal(got, want)
    assert (lv != sent).mean() > 0.3  # the link does move levels


@pytest.mark.parametrize("literal", [False, True], ids=["table", "eq6"])
def test_the_channel_receives_into_a_kept_buffer_as_into_fresh_zeros(literal):
    """`transmit_packed(..., out=)`: a buffer holding anything (the last round's table) ends as the fresh table, the
    buckets without a norm zeroed; a buffer of another shape or dtype is refused."""
    from labcore.net import channel

    M, n, bits, bucket, budget = 5, 61, 4, 8, 1
    packed, norms, _, _ = _message(M, n, bits, bucket)
    fresh = channel.transmit_packed(packed, norms, n, bits, bucket, budget, torch.Generator().manual_seed(3),
                                    literal=literal).numpy()
    dirty = np.full((M, n), np.nan, dtype=np.float32)
    got = channel.transmit_packed(packed, norms, n, bits, bucket, budget, torch.Generator().manual_seed(3),
                                  literal=literal, out=dirty)
    assert np.shares_memory(got.numpy(), dirty) and np.array_equal(got.numpy(), fresh)
    assert (fresh == 0).any()  # buckets without a norm were there to clear
    with pytest.raises(ValueError, match=r"the received table is \(5, 61\) float32"):
        channel.transmit_packed(packed, norms, n, bits, bucket, budget, torch.Generator(),
                                out=np.zeros((M, n), dtype=np.float64))


@pytest.mark.parametrize("s,budget", [(15, 1), (255, 6)])
def test_the_received_level_table_is_eq6s_distribution(s, budget):
    """Each row of `received_level_table` is the distribution of the level Eq. 6 delivers (clipped Gaussian noise of
    the budget's resolution, then the requantizer's rounding), against 400,000 draws of Eq. 6 as written for sent
    levels at both ends and inside: within 5 standard errors at every level (fails with the noise scaled by 1.2)."""
    from labcore.net import channel

    cdf, guide = channel.received_level_table(s, budget)
    assert cdf.shape == guide.shape == (s + 1, s + 1) and (np.diff(cdf, axis=1) >= 0).all() and (cdf[:, -1] == 1).all()
    rng, sigma, n = np.random.default_rng(0), channel.noise_std(budget), 400_000
    for l in (0, 1, s // 3, s - 1, s):
        r = np.clip(l / s + rng.standard_normal(n) * sigma, 0.0, 1.0) * s
        lv = np.minimum(np.floor(r) + (rng.random(n) < r - np.floor(r)), s).astype(np.int64)
        share = np.bincount(lv, minlength=s + 1) / n
        p = np.diff(cdf[l], prepend=0.0)
        assert (np.abs(share - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-9).all(), l


def test_the_channel_on_packed_codes_delivers_each_level_as_the_torch_channel_does():
    """The received levels' distribution (its mean and how often a level stays put) is that of `transmit_levels`, the
    channel on unpacked levels with torch's draws, for the levels a message holds: 0 (a zero, or a small value) and
    a large one."""
    from labcore.methods.quantize import pack_codes
    from labcore.net import channel

    bits, budget, n = 4, 1, 200_000
    s = 2**bits - 1
    for level in (0, 11):
        levels = np.full((1, n), level, dtype=np.int64)
        packed = pack_codes(levels, np.zeros((1, n), dtype=bool), bits)
        norms = np.ones((1, 1), dtype=np.float32)  # one bucket of norm 1: a received value is its level / s
        new = channel.transmit_packed(packed, norms, n, bits, n, budget, torch.Generator().manual_seed(1)).numpy() * s
        new = np.rint(new).astype(np.int64)
        old = channel.transmit_levels(torch.from_numpy(levels), s, budget, torch.Generator().manual_seed(2)).numpy()
        for stat in (lambda v: v.mean(), lambda v: (v == level).mean()):
            a, b = stat(new), stat(old)
            spread = max(np.std(new), 0.5) / np.sqrt(n)  # the standard error of a mean of n draws (a share's is <= 0.5)
            assert abs(a - b) < 6 * spread, (level, a, b)
        assert new.min() >= 0 and new.max() <= s and (new != level).mean() > 0.3  # the link does move levels

"""FAIR's hashed subspaces: Eq. 3-7 and Theorem 4.2, checked exactly on small n."""
import itertools

import pytest
import torch

from labcore.fair.hashing import PRIME, Subspace, SubspaceFamily, UniversalHash, collapse_matrix, is_collapsible, mix31, \
    subspace_dim

FAMILIES = [dict(sizes="pow2", block=1, signed=True), dict(sizes="pow2", block=1, signed=False),
            dict(sizes="pow2", block=4, signed=True), dict(sizes="chain", block=1, signed=True),
            dict(sizes="chain", block=2, signed=True)]


@pytest.mark.parametrize("kw", FAMILIES)
@pytest.mark.parametrize("n", [48, 64])
def test_theorem_4_2_consistent_and_collapsible_exactly(kw, n):
    """Every smaller subspace is spanned by columns of every larger one: S_small == S_big @ C exactly."""
    ratios = [1, 2, 4, 8]
    fam = SubspaceFamily(n, seed=7, max_ratio=8, **kw)
    subs = {r: fam.subspace(r) for r in ratios}
    for small, big in itertools.permutations(ratios, 2):
        if small > big:  # ratio small > ratio big: fewer columns
            s, b = subs[small], subs[big]
            assert is_collapsible(s, b), (small, big)
            if not b.full:
                assert b.m % s.m == 0
                assert torch.equal(s.matrix(), b.matrix() @ collapse_matrix(s.m, b.m))
    # consistent: the same capacity gives the same subspace, even from a second family with the same seed
    again = SubspaceFamily(n, seed=7, max_ratio=8, **kw)
    for r in ratios:
        assert torch.equal(again.subspace(r).matrix(), subs[r].matrix())
    # full capacity is the server basis itself
    assert torch.equal(subs[1].matrix(), torch.eye(n, dtype=torch.float64))


def test_inconsistent_subspaces_are_not_nested():
    """Two devices hashing independently (the ablation) get subspaces that do not contain each other."""
    n = 64
    a = SubspaceFamily(n, seed=1).subspace(4)
    b = SubspaceFamily(n, seed=2).subspace(2)
    assert not is_collapsible(a, b)


@pytest.mark.parametrize("kw", FAMILIES)
def test_reduction_is_least_squares_and_recovery_projects(kw):
    n = 64
    fam = SubspaceFamily(n, seed=3, max_ratio=8, **kw)
    theta = torch.randn(n, dtype=torch.float64)
    for r in (2, 4, 8):
        s = fam.subspace(r)
        S = s.matrix()
        assert ((S != 0).sum(1) == 1).all()  # one non-zero per row (Eq. 7)
        gram = S.T @ S
        assert torch.equal(gram, torch.diag(torch.diagonal(gram)))  # orthogonal columns
        psi = s.reduce(theta)  # Eq. 4
        lstsq = torch.linalg.pinv(S) @ theta  # Eq. 3, minimum-norm (an empty column makes S rank-deficient)
        assert torch.allclose(psi, lstsq, atol=1e-12)
        back = s.recover(psi)  # Eq. 5
        proj = S @ torch.linalg.pinv(S) @ theta
        assert torch.allclose(back, proj, atol=1e-12)
        assert torch.allclose(s.reduce(back), psi, atol=1e-12)  # reduce(recover(psi)) == psi
        # Eq. 6: the rows a batch needs, realized from psi on the fly, are rows of S psi
        items = torch.tensor([0, 3, 5, 3])
        d = 8
        assert torch.allclose(s.rows(psi, items, d).double(), (S @ psi).view(-1, d)[items], atol=1e-12)


def test_reduction_then_recovery_is_the_identity_at_full_capacity():
    n = 1000
    s = SubspaceFamily(n, seed=0).subspace(1)
    theta = torch.randn(n)
    assert s.full and s.m == n
    assert torch.equal(s.recover(s.reduce(theta)), theta)
    assert torch.equal(s.rows(theta, torch.tensor([0, 7]), 10), theta.view(-1, 10)[[0, 7]])


def test_sizes_follow_the_paper_and_stay_within_capacity():
    assert subspace_dim(1000, 1) == 1000
    assert subspace_dim(1000, 2) == 256  # the greatest power of two <= 500
    assert subspace_dim(1000, 4) == 128  # <= 250
    for n in (64, 1000, 2_872_112):
        for r in (2, 4, 8, 16, 64):
            for sizes in ("pow2", "chain"):
                m = subspace_dim(n, r, sizes, max_ratio=64)
                assert 1 <= m <= n / r
    chain = [subspace_dim(2_872_112, r, "chain", max_ratio=64) for r in (2, 4, 8, 16, 32, 64)]
    assert all(a % b == 0 for a, b in zip(chain, chain[1:]))  # each size divides the larger ones
    assert abs(2_872_112 / chain[0] - 2) < 1e-4  # chain keeps the ratio exact
    assert subspace_dim(2_872_112, 2, "pow2", block=8) % 8 == 0
    with pytest.raises(ValueError, match="power of two"):
        subspace_dim(100, 3)
    with pytest.raises(ValueError, match="chain"):
        subspace_dim(48, 2, "chain", max_ratio=64)


def test_universal_hash_is_seeded_and_in_range():
    h = UniversalHash.from_seed(5)
    assert h == UniversalHash.from_seed(5) and h != UniversalHash.from_seed(6)
    keys = torch.arange(0, 2**31 - 1, 2**20, dtype=torch.int64)
    raw = h.raw(keys)
    assert int(raw.min()) >= 0 and int(raw.max()) < 2**31
    signs = h.sign(torch.arange(10_000), block=8)
    assert set(signs.unique().tolist()) == {-1.0, 1.0}
    assert abs(float(signs.mean())) < 0.05
    # a 32-wide block needs two sign words; each coordinate still gets its own sign
    wide = h.sign(torch.arange(64 * 32), block=32).view(64, 32)
    assert abs(float(wide.mean())) < 0.1


def _rows_used(h: UniversalHash, n: int, rows: int) -> int:
    return int((h.raw(torch.arange(n)) % rows).unique().numel())


def test_every_draw_spreads_keys_like_random_balls():
    """1,682 keys (ML-100K's items) on 512 rows: random placement fills 512 (1 - (1 - 1/512)^1682) = 493 rows.

    Before the hash was mixed, the run seed 0's item hash (c1 = 543,659,800) filled 174, at 2x and 4x alike.
    """
    expected = 512 * (1 - (1 - 1 / 512) ** 1682)
    used = [_rows_used(UniversalHash.from_seed(s), 1682, 512) for s in range(200)]
    assert min(used) >= 0.95 * expected
    assert _rows_used(UniversalHash(543_659_800, 1_775_423_559, 1, 0), 1682, 512) >= 0.95 * expected
    assert _rows_used(UniversalHash(543_659_800, 1_775_423_559, 1, 0), 1682, 256) >= 250


def test_mix_is_a_bijection_of_31_bit_integers():
    """Distinct keys stay distinct, so the sizes still nest: h mod m_i = (h mod m_j) mod m_i."""
    x = torch.arange(0, 2**20, dtype=torch.int64) * 2047 % PRIME
    y = mix31(x)
    assert y.unique().numel() == x.numel() and int(y.min()) >= 0 and int(y.max()) < 2**31
    assert mix31(5) == int(mix31(torch.tensor([5]))[0])


def test_block_hashing_keeps_rows_contiguous():
    """With blocks of one embedding row, the d values of a row sit side by side in psi."""
    d, rows = 8, 100
    s = SubspaceFamily(rows * d, seed=4, block=d).subspace(4)
    slots = s.slots().view(rows, d)
    assert torch.equal(slots - slots[:, :1], torch.arange(d).expand(rows, d))
    assert isinstance(s, Subspace) and s.m_blocks * d == s.m

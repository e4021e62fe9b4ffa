"""FAIR's lesson (notebook 06): the lab's base run and the exercise checks."""
from __future__ import annotations

from ..labs_support import Feedback, close, missing, paper_size, todo

# The FAIR lab's smoke size: the small synthetic ranking set (12 users, 300 items), NeuMF with 8 factors,
# 4 devices a round, one local epoch; 30 rounds take a fraction of a second per strategy.
FAIR_LAB_BASE = dict(rounds=30, eval_every=2, clients_per_round=4, batch_size=32, local_epochs=1, lr=0.01)


def fair_config(paper: bool | None = None, **overrides):
    """The FAIR lab's base run (a `labcore.fair.FairConfig`, ranking task) with `overrides`.

    Smoke size: FAIR_LAB_BASE on synthetic data (no download). Paper size: ML-1M-100 with the settings of
    the FAIR figure cards (Table 2 / Fig. 1), so a notebook run and a card's run share the run cache.
    """
    from . import paper_ranking

    if paper if paper is not None else paper_size():
        from .cards import ML1M100

        return paper_ranking("ml-1m-100", **{**ML1M100, **overrides})
    return paper_ranking("synthetic", **{**FAIR_LAB_BASE, **overrides})


def check_collapsed_bucket(answer, bucket: int, m_big: int, m_small: int) -> Feedback:
    """Lab 06: a coordinate sits in column `bucket` of the m_big subspace; which column of m_small holds it?"""
    if missing(answer):
        return todo(f"an integer between 0 and {m_small - 1}")
    from .hashing import collapse_matrix

    expected = int(collapse_matrix(m_small, m_big)[bucket].argmax())
    ok = close(answer, expected, abs_=0)
    return Feedback(ok, f"{expected}: h(a) mod {m_small} = (h(a) mod {m_big}) mod {m_small}, so column {bucket} "
                        f"of the larger subspace is one of the columns summed into column {expected}" if ok else
                    f"{answer} is not it: both columns come from the same h(a); what is {bucket} mod {m_small}?")


def check_table_values(answer, n_items: int, dim: int, ratio: int) -> Feedback:
    """Lab 06: how many values of one item table (n_items x dim, rows hashed) a device at `ratio`x stores."""
    if missing(answer):
        return todo("an integer (values of psi for one table)")
    from .hashing import subspace_dim

    expected = subspace_dim(n_items * dim, ratio, "pow2", block=dim)
    rows = expected // dim
    ok = close(answer, expected, abs_=0)
    return Feedback(ok, f"{expected} = {rows} rows x {dim}: the greatest power of two <= {n_items} / {ratio} = "
                        f"{n_items / ratio:g} rows, so '{ratio}x' is really {n_items * dim / expected:.2f}x" if ok else
                    f"{answer} is not it: m is the greatest POWER OF TWO of rows <= n_items / ratio, times d = {dim}")


def check_devices_share(answer, capacities: str, model_ratio: int, n_users: int = 100) -> Feedback:
    """Lab 06: with one model size for everybody, which share of the devices of `capacities` can train it?"""
    if missing(answer):
        return todo("a share between 0 and 1")
    from . import FairConfig
    from .baselines import device_ratios

    expected = float((device_ratios(FairConfig(capacities=capacities), n_users) <= model_ratio).mean())
    ok = close(answer, expected, abs_=0.011)
    return Feedback(ok, f"{expected:g}: the devices whose capacity holds a {model_ratio}x model (tiers up to "
                        f"{model_ratio}x); the others are data loss" if ok else
                    f"{answer} is not it: the users are split evenly by id into the tiers of {capacities}; which "
                    f"tiers can hold a model at {model_ratio}x?")

"""Exercise checks of `labs/10_gist.ipynb` and its base config. Each check computes its answer with labcore."""
from __future__ import annotations

import torch

from ..labs_support import Feedback, close, missing, paper_size, todo
from . import subnets
from .config import GistConfig
from .model import init_params


def lab_config(paper: bool | None = None, **overrides) -> GistConfig:
    """Cora when its files are found (else the synthetic graph); paper size = Table 1's m = 2 row."""
    from .graph import default_graph

    paper = paper_size() if paper is None else paper
    base = dict(graph=default_graph(), subnets=2, split="layer1", hidden=16, local=1, lr=0.05, layernorm=True,
                epochs=200 if paper else 40)
    if paper:
        base.update(graph="cora", lr=0.025, layernorm=False)
    return GistConfig(**{**base, **overrides})


def theta1_values_per_subnet(cfg: GistConfig) -> int:
    """Entries of θ1 one subnet owns (and sends) per sync, read off a real partition and its blocks."""
    f = cfg.n_features()
    p = init_params(f, cfg.hidden, 2, cfg.seed)
    part = subnets.draw(cfg, 0, f)
    return int(subnets.extract(p, part, 0)["theta1"].numel())


def check_theta1_values(answer, cfg: GistConfig) -> Feedback:
    """How many float32 values of θ1 does one subnet send per sync?"""
    if missing(answer):
        return todo(f"the number of θ1 values one subnet sends per sync for F = {cfg.n_features()}, "
                    f"H = {cfg.hidden}, m = {cfg.subnets}, split = {cfg.split!r}")
    want = theta1_values_per_subnet(cfg)
    if close(answer, want, rel=0.0, abs_=0.5):
        return Feedback(True, f"{want:,} values = {4 * want:,} bytes of float32 per subnet per sync.")
    hint = "|θ1|/m: each subnet owns F/m rows" if cfg.split == "layer1" else \
        "|θ1|/m²: each subnet owns an (F/m) x (H/m) block"
    return Feedback(False, f"not {answer}; hint: {hint}.")


def trained_share(cfg: GistConfig) -> float:
    """Share of θ1's entries that some subnet trains in one sync round."""
    f = cfg.n_features()
    return float((subnets.draw(cfg, 0, f).owner_map(f, cfg.hidden) >= 0).mean())


def check_trained_share(answer, cfg: GistConfig) -> Feedback:
    """Which share of θ1 moves in one sync round?"""
    if missing(answer):
        return todo(f"the share (0..1) of θ1 trained in one round with m = {cfg.subnets}, split = {cfg.split!r}")
    want = trained_share(cfg)
    if close(answer, want, rel=0.01):
        extra = "" if cfg.split == "layer1" else " The off-diagonal blocks wait for a later partition."
        return Feedback(True, f"{want:.3g} of θ1 is trained per round.{extra}")
    return Feedback(False, f"not {answer}: count the blocks of the owner map that are not grey.")


def scale_ratio(g, cfg: GistConfig) -> float:
    """Std of the full model's first-layer pre-activation Â X θ1 over the mean std of a subnet's Â X_i θ1_i.

    A subnet only sums over its F/m features, so it trains on pre-activations about sqrt(m) times smaller
    than the merged model will compute; LayerNorm makes the next layer blind to that scale."""
    p = init_params(g.n_features, cfg.hidden, g.n_classes, cfg.seed)
    part = subnets.draw(cfg, 0, g.n_features)
    full = torch.sparse.mm(g.adj, g.x @ p["theta1"]).std()
    sub = torch.stack([torch.sparse.mm(g.adj, subnets.subnet_input(g.x, part, i)
                                       @ subnets.extract(p, part, i)["theta1"]).std() for i in range(cfg.subnets)])
    return float(full / sub.mean())


def check_scale_ratio(answer, cfg: GistConfig) -> Feedback:
    """By what factor is the merged model's first-layer pre-activation larger (std) than a subnet's, at init?"""
    if missing(answer):
        return todo(f"the ratio std(full) / std(subnet) of the first-layer pre-activation for m = {cfg.subnets}")
    from .graph import for_config

    want = scale_ratio(for_config(cfg), cfg)
    if close(answer, want, rel=0.1):
        return Feedback(True, f"measured {want:.2f} (about sqrt(m) = {cfg.subnets ** 0.5:.2f}): the second layer "
                              "was trained on smaller inputs than the merged model gives it, unless a LayerNorm "
                              "rescales the hidden layer. With both layers split the output layer also sees only "
                              "H/m hidden units per subnet, so the mismatch compounds.")
    return Feedback(False, f"not {answer}: a sum of m independent partial sums has sqrt(m) times the std of one.")

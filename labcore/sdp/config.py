"""`SdpConfig`: one low-rank SDP run (graph, method, rank, stopping rule), frozen and validated.

A bad value fails as `<field>=<value> is invalid: <what is allowed>`; `key()` names the run's cached results.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..typed_config import TypedConfig, build, check_choices, check_ranges, check_types, fail, hash_key

GRAPHS = ("random", "cora", "lastfm", "sync")
METHODS = ("mixing", "mixing++", "bm", "hazan", "inface")
METHOD_LABELS = {"mixing": "mixing method", "mixing++": "Mixing++ (momentum)", "bm": "Burer-Monteiro ALM (L-BFGS)",
                 "hazan": "Hazan / Frank-Wolfe 2/(t+2)", "inface": "in-face extended Frank-Wolfe"}
FAMILIES = {"mixing": "Burer-Monteiro: mixing", "mixing++": "Burer-Monteiro: mixing", "bm": "Burer-Monteiro: ALM",
            "hazan": "Frank-Wolfe", "inface": "Frank-Wolfe"}
RULES = ("cyclic", "uniform", "importance", "greedy")
CODE_VERSION = 1  # part of every run's cache key: bump it when a solver's numbers change


@dataclass(frozen=True)
class SdpConfig(TypedConfig):
    # problem
    graph: str = "random"  # random: G(n, p) with mean degree `avg_degree`; sync: Z2 synchronization (signed C)
    n: int = 100  # nodes of a random / sync problem (Cora: 2,708, Last.fm: 1,892 are fixed)
    avg_degree: float = 4.0
    noise: float = 1.0  # sync: noise level of the observations
    graph_seed: int = 0
    # method
    method: str = "mixing"
    rule: str = "cyclic"  # mixing: which block to update (cyclic is the original method)
    k: int = 0  # rank of V (mixing, bm); 0 = ceil(sqrt(2n)) + 1
    momentum: float = 0.8  # mixing++: beta
    penalty: float = 0.0  # Frank-Wolfe: beta of the penalty on diag(X) = 1 (0 = mean weighted degree; in-face: 1/8 of it)
    alm_every: int = 20  # Frank-Wolfe: update the multipliers every this many steps (0 = fixed penalty only)
    # stopping and logging
    max_iters: int = 500  # sweeps (mixing: n block updates each), outer ALM steps (bm), FW steps
    tol: float = 1e-6  # stop when the certified relative gap is below this
    time_limit: float = 60.0  # seconds of solver time
    cert_every: int = 1  # certificate every this many iterations; 0 = about 40 log-spaced ones
    seed: int = 0

    def __post_init__(self):
        types = typing.get_type_hints(type(self))
        check_types(self, {f.name: types[f.name] for f in fields(self)})
        check_choices(self, {"graph": GRAPHS, "method": METHODS, "rule": RULES})
        check_ranges(self, {"n": (2, 20000), "k": (0, 20000), "momentum": (0.0, 0.99), "max_iters": (1, 10**6),
                            "cert_every": (0, 10**6), "alm_every": (0, 10**6), "seed": (0, 2**63 - 1),
                            "graph_seed": (0, 2**63 - 1)},
                     positive=("avg_degree", "tol", "time_limit"), nonnegative=("noise", "penalty"),
                     at_most={"avg_degree": 20000.0, "tol": 1.0, "time_limit": 86400.0, "noise": 1e6,
                              "penalty": 1e12})
        if self.graph == "random" and self.avg_degree > self.n - 1:
            fail("avg_degree", self.avg_degree, f"at most n - 1 = {self.n - 1} for a random graph of {self.n} nodes")
        if self.method == "mixing++" and self.rule == "greedy":
            fail("rule", self.rule, "Mixing++ runs with cyclic, uniform or importance (greedy has no momentum form)")

    def key(self) -> str:
        """The cache key: every field, plus CODE_VERSION (bumped when a solver's numbers change)."""
        return hash_key({**self.to_dict(), "code": CODE_VERSION}, "sdp-")

    def label(self) -> str:
        m = METHOD_LABELS[self.method]
        return f"{m}, {self.rule}" if self.method in ("mixing", "mixing++") and self.rule != "cyclic" else m


def from_dict(d: dict) -> SdpConfig:
    return build(SdpConfig, d)

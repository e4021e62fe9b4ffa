"""FAIR: federated averaging in hashed random subspaces, for devices of different memory.

    from labcore import fair
    cfg = fair.paper_ranking("goodreads-100", method="fair", capacities="1x-2x")
    res = fair.run(cfg)            # per-round table, payload ledger, device memory per tier
    res.best                       # (NDCG@20, round)

Modules: hashing (Eq. 4-7, Theorem 4.2), model (NeuMF, the digits MLP), engine
(the round loop), baselines (FedAvg, FAIR-HOM, FULL-TRN, FedHM, inconsistent
subspaces), metrics (NDCG@20 over all items), tradeoff (Fig. 1 from runs),
plots (plotly figures).
"""
from .config import FairConfig, from_dict, paper_mlp, paper_ranking, paper_rating
from .engine import FairResult, FairSimulation, run
from .hashing import Subspace, SubspaceFamily, UniversalHash

__all__ = ["FairConfig", "FairResult", "FairSimulation", "Subspace", "SubspaceFamily", "UniversalHash", "from_dict",
           "paper_mlp", "paper_ranking", "paper_rating", "run"]

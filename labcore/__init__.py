"""labcore: a small core for a teaching lab on communication-efficient and
privacy-preserving federated recommendation.

    import labcore
    res = labcore.run(labcore.RunConfig(method="colr", rank=4))
    res.table          # one row per round: HR@10, NDCG@10, loss, bytes, wall-clock, effective rank
    labcore.plots.metric_curves([res], x="cum_bytes")
"""
from . import plot_style  # noqa: F401  (the lab's plotly template, readable on a projector)
from .config import ConfigError, RunConfig, from_dict, from_query, paper_ml1m
from .fed.engine import Simulation, run
from .results import Result

__version__ = "0.1.0"
__all__ = ["RunConfig", "ConfigError", "from_dict", "from_query", "paper_ml1m", "run", "Simulation", "Result"]

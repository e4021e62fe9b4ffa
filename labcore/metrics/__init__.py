from .client_data import client_data_gini, client_data_summary, gini
from .effective_rank import effective_rank_stats, explained_variance_ratios
from .ranking import hit_ratio_ndcg

__all__ = ["hit_ratio_ndcg", "effective_rank_stats", "explained_variance_ratios", "gini", "client_data_gini",
           "client_data_summary"]

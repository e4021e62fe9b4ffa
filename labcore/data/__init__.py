"""Datasets of the lab: readers, evaluation protocols and `load_dataset`.

Every loader returns an `InteractionData` (implicit feedback, one held-out
test item per user ranked against sampled negatives).
"""
from .base import InteractionData
from .errors import DatasetFormatError, DatasetNotFoundError
from .lightgcn import InteractionLists, load_lightgcn, read_lightgcn_lists
from .movielens import Ratings, read_ml100k_ratings, read_ml1m_ratings
from .ncf import TestNegatives, load_ncf, read_ncf_negatives, read_ncf_ratings, read_ncf_test
from .registry import DATASET_NAMES, load_dataset
from .split import leave_latest_out, random_holdout, sample_negatives
from .synthetic import SIZES as SYNTHETIC_SIZES
from .synthetic import make_synthetic

__all__ = [
    "DATASET_NAMES",
    "SYNTHETIC_SIZES",
    "DatasetFormatError",
    "DatasetNotFoundError",
    "InteractionData",
    "InteractionLists",
    "Ratings",
    "TestNegatives",
    "leave_latest_out",
    "load_dataset",
    "load_lightgcn",
    "load_ncf",
    "make_synthetic",
    "random_holdout",
    "read_lightgcn_lists",
    "read_ml100k_ratings",
    "read_ml1m_ratings",
    "read_ncf_negatives",
    "read_ncf_ratings",
    "read_ncf_test",
    "sample_negatives",
]

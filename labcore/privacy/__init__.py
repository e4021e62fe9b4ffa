"""Privacy layer of labcore: encrypted and masked aggregation, and what a curious server learns.

Schemes (selected by name in the engine configuration):
  * "ckks"     - CKKS (TenSEAL) encrypted weighted sum of packed flat updates  (ckks.py)
  * "paillier" - per-value Paillier encryption of Top-K values, indices in clear  (paillier.py)
  * "secagg"   - exact secure aggregation with pairwise masks and dropout recovery  (secagg.py)
  * "chain"    - STTFedRec's circular secret-sharing chain  (chain.py)
params.py holds the CKKS parameter rules (no TenSEAL import: the run configuration uses them);
attacks.py runs the item-recovery attack on plain and protected views (`labcore.colr.curious_server` runs it
on what the server receives in engine runs; labcore.fed.secure plugs the schemes into the engine);
costs.py is the CKKS cost explorer and CoLR's Table 3.

Modules are imported lazily so that importing labcore.privacy does not load
TenSEAL or phe until a scheme that needs them is used.
"""
from __future__ import annotations

import importlib

SCHEMES = ("ckks", "paillier", "secagg", "chain")


def check_scheme(name: str) -> str:
    """Return the normalised scheme name or raise ValueError listing the known ones."""
    key = str(name).strip().lower()
    if key not in SCHEMES:
        raise ValueError(f"unknown privacy scheme {name!r}; expected one of {', '.join(repr(s) for s in SCHEMES)}")
    return key


_EXPORTS = {
    # params (pure Python)
    "CkksParams": "params",
    "check_ckks": "params",
    # ckks
    "CkksContext": "ckks",
    "CkksAggregator": "ckks",
    "CkksRoundReport": "ckks",
    "HeRoundReport": "ckks",
    "make_context": "ckks",
    "encrypt_update": "ckks",
    "aggregate": "ckks",
    "decrypt_aggregate": "ckks",
    "ciphertext_parts": "ckks",
    # paillier
    "PaillierAggregator": "paillier",
    "EncryptedTopK": "paillier",
    "keypair": "paillier",
    "encrypt_topk": "paillier",
    "aggregate_topk": "paillier",
    "decrypt_sparse": "paillier",
    "per_value_costs": "paillier",
    # secagg
    "FixedPoint": "secagg",
    "SecureAggregationError": "secagg",
    "SecAggReport": "secagg",
    "key_agreement": "secagg",
    "unmask_sum": "secagg",
    "secure_aggregate": "secagg",
    "masked_part": "secagg",
    # chain
    "ChainBrokenError": "chain",
    "ChainReport": "chain",
    "chain_aggregate": "chain",
    # attacks
    "synthetic_fedmf_update": "attacks",
    "recover_interacted_items": "attacks",
    "attack_scores": "attacks",
    "topk_index_leak": "attacks",
    "server_view_rows": "attacks",
    "attack_protected_view": "attacks",
    # costs
    "ckks_costs": "costs",
    "table3_rows": "costs",
    "table3_frame": "costs",
    "TABLE3_PARAMS": "costs",
    "TABLE3_SETTINGS": "costs",
    "format_table3": "costs",
    "PAPER_TABLE3": "costs",
}

__all__ = ["SCHEMES", "check_scheme", *_EXPORTS]


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'labcore.privacy' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value

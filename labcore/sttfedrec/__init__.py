"""STTFedRec: split two-tower federated recommendation (Qin et al.), with its baselines.

    from labcore.sttfedrec import STTConfig, run
    res = run(STTConfig(framework="sttfedrec", tower="dssm", rounds=50))      # synthetic catalogue, seconds
    res.final, res.history, res.ledger

    run(STTConfig(dataset="ml-1m", framework="fl", tower="clsm"))               # naive FL-CLSM on ML-1M

Modules:
  features     letter-trigram hashing of titles / genres and user side information; ML-1M and a synthetic catalogue
  towers       DSSM and CLSM towers, cosine similarity, softmax over the requested items (Eq. 1-3, 8)
  frameworks   centralized, naive FL, STTFedRec (split + chain + FedAdam), FedMVMF, FCF (core engine); `run`
  privacy      how well the server guesses the clicks of obfuscated requests; the chain under dropouts
  efficiency   per-device time and measured bytes, FL vs STTFedRec (Table 3); the chain's cost as K grows
  experiments  the reproduction grids behind the cards (`labcore figure 'sttfedrec-*' --full --save`)
  plots        plotly figures and small computations for the app page and the notebook
"""
from .config import FRAMEWORKS, STTConfig
from .frameworks import STTResult, run

__all__ = ["FRAMEWORKS", "STTConfig", "STTResult", "run"]

"""The cards' experiments: which runs each card needs at each size, and the tables it draws from them.

Every run is `simulation.run(cfg)` (cached by cfg.key()), so a card recomputes only what changed.
Smoke sizes are a few rounds on few clients (seconds, CI); full sizes follow the papers' settings where the
lab can afford them (see each function and the card notes).
"""
from __future__ import annotations

import pandas as pd

from .config import FLConfig
from .simulation import run


def _frame(runs: list[tuple[dict, FLConfig]], progress: bool = False, what: str = "history") -> pd.DataFrame:
    it = runs
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(runs, desc="runs", leave=False)
    out = []
    for labels, cfg in it:
        df = getattr(run(cfg), what).copy()
        for k, v in labels.items():
            df.insert(0, k, v)
        out.append(df)
    return pd.concat(out, ignore_index=True)


def configs(runs) -> list[FLConfig]:
    return [c for _, c in runs]


# --- FedProx Fig. 1: stragglers on Synthetic(1, 1) ---------------------------------------------------------------
STRAGGLER_SHARES = (0.0, 0.5, 0.9)
STRAGGLER_METHODS = (("FedAvg (drops stragglers)", "fedavg", 0.0), ("FedProx mu=0", "fedprox", 0.0),
                     ("FedProx mu=1", "fedprox", 1.0))


def stragglers_runs(size: str):
    """FedProx Section 5: 30 devices, 10 a round, lr 0.01, batch 10, mu = 1 for Synthetic(1,1); E = 20 epochs is
    replaced by a fixed number of local minibatch steps (50 full, 10 smoke)."""
    base = dict(task="synthetic", synthetic_alpha=1.0, synthetic_beta=1.0, n_clients=30, clients_per_round=10,
                batch_size=10, lr=0.01, model="logreg")
    base.update(local_steps=50, rounds=200, eval_every=5) if size == "full" else base.update(
        local_steps=5, rounds=4, eval_every=2)
    return [({"stragglers": s, "method": label}, FLConfig(algorithm=a, mu=mu, stragglers=s, **base))
            for s in STRAGGLER_SHARES for label, a, mu in STRAGGLER_METHODS]


# --- SCAFFOLD against FedAvg: quadratics and digits ----------------------------------------------------------
def quadratic_runs(size: str):
    """Heterogeneous quadratics, full participation, deterministic gradients (float64)."""
    base = dict(task="quadratic", n_clients=10, clients_per_round=10, local_steps=10, lr=0.1, weighting="uniform",
                rounds=100 if size == "full" else 30, eval_every=2)
    return [({"method": l}, FLConfig(algorithm=a, mu=mu, **base)) for l, a, mu in
            (("FedAvg", "fedavg", 0.0), ("FedProx mu=0.1", "fedprox", 0.1), ("SCAFFOLD", "scaffold", 0.0))]


DRIFT_ALPHAS = (0.1, 1.0)


def drift_runs(size: str):
    """Digits over 30 clients, 10 a round, 20 local steps of batch 10 (lr 0.05), Dirichlet label skew."""
    base = dict(task="digits", n_clients=30, clients_per_round=10, local_steps=20, batch_size=10, lr=0.05,
                rounds=150 if size == "full" else 6, eval_every=5 if size == "full" else 2)
    return [({"dirichlet_alpha": al, "method": l}, FLConfig(algorithm=a, mu=mu, dirichlet_alpha=al, **base))
            for al in DRIFT_ALPHAS for l, a, mu in
            (("FedAvg", "fedavg", 0.0), ("FedProx mu=0.1", "fedprox", 0.1), ("SCAFFOLD", "scaffold", 0.0))]


# --- q-FFL fairness ---------------------------------------------------------------------------------------------
Q_VALUES = (0.0, 1.0, 3.0)


def qffl_runs(size: str):
    """Synthetic(1,1), all 100 devices every round (q-FFL's count), 2 local steps of batch 32, lr 0.05 (L = 20),
    1500 rounds: few local steps keep q-FedAvg's step (1 / sum h, which shrinks with q ||Delta w||^2) close to
    q-FFL's own. With FedProx's 30 devices the variance fell 5.5 % at most (q = 3), with 100 it falls 12 % at q = 1."""
    base = dict(task="synthetic", n_clients=100, clients_per_round=100, local_steps=2, batch_size=32, lr=0.05,
                weighting="uniform", rounds=1500 if size == "full" else 6, eval_every=750 if size == "full" else 6)
    return [({"q": q}, FLConfig(algorithm="qffl", q=q, **base)) for q in Q_VALUES]


# --- personalization at Dirichlet 0.1 --------------------------------------------------------------------------
PERSONAL = (("FedAvg (global)", "fedavg"), ("Ditto", "ditto"), ("pFedMe", "pfedme"), ("APFL", "apfl"),
            ("Per-FedAvg (FO)", "perfedavg"))


def personal_runs(size: str):
    base = dict(task="digits", dirichlet_alpha=0.1, n_clients=30, clients_per_round=10, local_steps=20,
                batch_size=10, lr=0.05, lam=0.1, personal_lr=0.05, apfl_alpha=0.5,
                rounds=100 if size == "full" else 4, eval_every=100 if size == "full" else 4)
    return [({"method": l}, FLConfig(algorithm=a, **base)) for l, a in PERSONAL]


# --- backdoors and defenses -------------------------------------------------------------------------------------
DEFENSES = (("none", "none"), ("median", "median"), ("trimmed mean", "trimmed"), ("Krum", "krum"),
            ("norm clipping", "clip"), ("clipping + noise", "clip"))


def backdoor_runs(size: str):
    """Digits, 30 clients (3 malicious), 10 a round; clean training then attacks from round 40 (full)."""
    base = dict(task="digits", n_clients=30, clients_per_round=10, local_steps=20, batch_size=10, lr=0.1,
                dirichlet_alpha=0.5, clip_norm=0.5, krum_f=2,
                rounds=60 if size == "full" else 6, eval_every=2)
    frm = 40 if size == "full" else 3
    runs = [({"attack": "none", "defense": "none"}, FLConfig(**base))]
    for attack in ("replacement", "dba"):
        for label, d in DEFENSES:
            runs.append(({"attack": attack, "defense": label},
                         FLConfig(attack=attack, attackers=3, attack_from=frm, defense=d,
                                  dp_noise=0.5 if label == "clipping + noise" else 0.0, **base)))
    return runs


# --- bytes per round ----------------------------------------------------------------------------------------------
BYTES_ALGOS = ("fedavg", "fedprox", "scaffold", "qffl", "fedadam", "ditto", "pfedme", "apfl", "perfedavg")


def bytes_runs(size: str):
    base = dict(task="digits", n_clients=30, clients_per_round=10, local_steps=2, rounds=1, eval_every=1,
                model="mlp" if size == "full" else "logreg", hidden=64)
    runs = [({"algorithm": a, "quantize_bits": 0}, FLConfig(algorithm=a, **base)) for a in BYTES_ALGOS]
    runs += [({"algorithm": a, "quantize_bits": 4}, FLConfig(algorithm=a, quantize_bits=4, **base))
             for a in ("fedavg", "scaffold")]
    return runs


def bytes_table(size: str, progress: bool = False) -> pd.DataFrame:
    rows = []
    for labels, cfg in bytes_runs(size):
        led = run(cfg).ledger
        m = cfg.clients_per_round
        up = led[led.direction == "up"]
        down = led[led.direction == "down"]
        rows.append({**labels, "params": _params(cfg), "up_parts": " + ".join(up.part.unique()),
                     "up_bytes_per_client": up.bytes.sum() / m, "down_bytes_per_client": down.bytes.sum() / m})
    df = pd.DataFrame(rows)
    ref = df[(df.algorithm == "fedavg") & (df.quantize_bits == 0)]["up_bytes_per_client"].iloc[0]
    df["up_vs_fedavg"] = df["up_bytes_per_client"] / ref
    return df


def _params(cfg: FLConfig) -> int:
    d, k = 64, 10
    return d * k + k if cfg.model == "logreg" else d * cfg.hidden + cfg.hidden + cfg.hidden * k + k


# --- the algorithms on the lab's engine: MF recommendation with private user vectors -------------------------
# The engine (`labcore.fed`) runs FedProx in its compiled local training and the server optimizers on its item
# table, so they compose with its compression methods (CoLR), quantization, encryption and payload ledger.
ENGINE_METHODS = ("fedmf", "colr")
ENGINE_ALGORITHMS = (("FedAvg", {}), ("FedProx mu=0.01", {"prox_mu": 0.01}),
                     ("FedAvgM", {"server_optimizer": "fedavgm", "server_lr": 0.5, "server_momentum": 0.5}),
                     ("FedAdam", {"server_optimizer": "fedadam", "server_lr": 0.01}),
                     ("FedYogi", {"server_optimizer": "fedyogi", "server_lr": 0.01}))
ENGINE_SMOKE = dict(dataset="synthetic", synthetic_size="small", rounds=6, clients_per_round=20, local_epochs=1,
                    batch_size=64, eval_every=3, rank_every=0, client_schedule="rotating")


def engine_runs(size: str):
    """FedMF d=64 and CoLR@4 on MovieLens-1M at CoLR's settings (`paper_ml1m`: 60 clients a round, E = 2,
    B = 256, lr 0.5, 1000 rounds, the authors' rotating schedule), one run per algorithm; smoke: the small
    synthetic set for 6 rounds."""
    from ..config import RunConfig, paper_ml1m

    out = []
    for method in ENGINE_METHODS:
        for label, algo in ENGINE_ALGORITHMS:
            kw = dict(method=method, rank=4, **algo)
            cfg = (paper_ml1m(eval_every=100, rank_every=0, **kw) if size == "full"
                   else RunConfig(**ENGINE_SMOKE, **kw))
            out.append(({"method": cfg.describe(), "algorithm": label}, cfg))
    return out


def engine_table(size: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all

    runs = engine_runs(size)
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.dropna(subset=["hr"])[["round", "hr", "ndcg", "bytes_up_client", "bytes_down_client"]].copy()
        t["round"] = t["round"] + 1  # rounds played
        for k, v in reversed(labels.items()):
            t.insert(0, k, v)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


# --- SCAFFOLD and q-FFL on the engine (FedMF: their variates and weights live in the whole item table) -----------
ENGINE_DRIFT_ALGORITHMS = (("FedAvg", {}), ("SCAFFOLD", {"scaffold": True}),
                    ("q-FFL q=0.001", {"qffl_q": 0.001}), ("q-FFL q=0.01", {"qffl_q": 0.01}),
                    ("q-FFL q=1", {"qffl_q": 1.0}))


def engine_drift_runs(size: str):
    """FedMF d=64 on MovieLens-1M at CoLR's settings (`paper_ml1m`), every arm with the FedAvg weights N_u / N
    (SCAFFOLD and q-FFL replace them, so the per-item mean of CoLR's code is not used here); smoke: the small
    synthetic set for 6 rounds."""
    from ..config import RunConfig, paper_ml1m

    out = []
    for label, algo in ENGINE_DRIFT_ALGORITHMS:
        kw = dict(method="fedmf", aggregation="weighted", **algo)
        cfg = (paper_ml1m(eval_every=100, rank_every=0, **kw) if size == "full" else RunConfig(**ENGINE_SMOKE, **kw))
        out.append(({"algorithm": label}, cfg))
    return out


ENGINE_DRIFT_COLUMNS = ("round", "hr", "ndcg", "loss", "client_loss_mean", "client_loss_std", "client_loss_worst10",
                 "bytes_up_client", "bytes_down_client")


def engine_drift_table(size: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all

    runs = engine_drift_runs(size)
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.dropna(subset=["hr"]).reindex(columns=list(ENGINE_DRIFT_COLUMNS))
        t["round"] = t["round"] + 1  # rounds played
        t.insert(0, "algorithm", labels["algorithm"])
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


# --- stragglers on the engine (FedProx's systems heterogeneity, MovieLens-1M) -----------------------------------
ENGINE_STRAGGLER_SHARES = (0.0, 0.5, 0.9)
ENGINE_STRAGGLER_ALGORITHMS = (("FedAvg (drops stragglers)", {}),
                               ("FedProx mu=0 (keeps them)", {"straggler_policy": "keep"}),
                               ("FedProx mu=0.01", {"prox_mu": 0.01}))


def engine_straggler_runs(size: str):
    """FedMF d=64 on MovieLens-1M at CoLR's settings with 0, 50 and 90 % stragglers (a uniform 1..K-1 of their K
    local steps); smoke: the small synthetic set for 6 rounds. At 0 % the three arms are FedAvg, FedAvg and
    FedProx mu=0.01 (nobody straggles)."""
    from ..config import RunConfig, paper_ml1m

    out = []
    for share in ENGINE_STRAGGLER_SHARES:
        for label, algo in ENGINE_STRAGGLER_ALGORITHMS:
            kw = dict(method="fedmf", stragglers=share, **algo)
            cfg = (paper_ml1m(eval_every=100, rank_every=0, **kw) if size == "full"
                   else RunConfig(**ENGINE_SMOKE, **kw))
            out.append(({"stragglers": share, "algorithm": label}, cfg))
    return out


def engine_straggler_table(size: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all

    runs = engine_straggler_runs(size)
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.reindex(columns=["round", "loss", "hr", "bytes_up"]).copy()
        t["loss_smooth"] = t["loss"].rolling(20, min_periods=1).mean()  # the training loss, 20-round mean
        t = t.dropna(subset=["hr"])
        t["round"] = t["round"] + 1
        t.insert(0, "algorithm", labels["algorithm"])
        t.insert(0, "stragglers", labels["stragglers"])
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


# --- clients that drop out, with and without secure aggregation (MovieLens-1M) ------------------------------------
ENGINE_DROPOUT_SHARES = (0.0, 0.2, 0.4)
ENGINE_DROPOUT_THRESHOLD = 0.25  # secagg: more than a quarter of the sampled clients must upload
ENGINE_DROPOUT_FAILING = (0.45, 0.5)  # dropout, threshold: some round falls below a strict majority
ENGINE_DROPOUT_ARMS = (("FedAvg", {}),
                       ("FedAvg + SecAgg", {"encryption": "secagg", "secagg_threshold": ENGINE_DROPOUT_THRESHOLD}))


def _dropout_config(size: str, **kw):
    from ..config import RunConfig, paper_ml1m

    return (paper_ml1m(eval_every=100, rank_every=0, method="fedmf", **kw) if size == "full"
            else RunConfig(**ENGINE_SMOKE, method="fedmf", **kw))


def engine_dropout_runs(size: str):
    """FedMF d=64 on MovieLens-1M at CoLR's settings (per-item mean), each sampled client dropping out with
    probability 0, 20 or 40 % after the downlink, in plaintext and under secure aggregation (threshold 25 %);
    smoke: the small synthetic set for 6 rounds."""
    return [({"dropout": share, "arm": label}, _dropout_config(size, dropout=share, **arm))
            for share in ENGINE_DROPOUT_SHARES for label, arm in ENGINE_DROPOUT_ARMS]


def _recovery_bytes(res) -> float:
    """Mean bytes a round of the survivors' revealed seeds (0 without secure aggregation or dropout)."""
    led = res.ledger
    return float(led.loc[led["part"] == "secagg.revealed_seeds", "bytes"].sum() / max(len(res.table), 1))


def engine_dropout_table(size: str, progress: bool = False) -> pd.DataFrame:
    """The runs' HR@10 curves and bytes, and the run whose threshold is too high for its dropout: it stops at the
    first round with too few survivors (status says which and why)."""
    from ..fed.engine import run as run_engine
    from ..figures.runs import run_all
    from ..privacy.secagg import SecureAggregationError

    runs = engine_dropout_runs(size)
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.dropna(subset=["hr"]).reindex(columns=["round", "hr", "bytes_up_client", "clients_dropped"])
        t["round"] = t["round"] + 1
        t["recovery_bytes_round"] = _recovery_bytes(res)
        t["status"] = "complete"
        t.insert(0, "arm", labels["arm"])
        t.insert(0, "dropout", labels["dropout"])
        frames.append(t)
    share, thr = ENGINE_DROPOUT_FAILING
    cfg = _dropout_config(size, dropout=share, encryption="secagg", secagg_threshold=thr,
                          **({"rounds": 60} if size == "full" else {}))
    try:
        run_engine(cfg, progress=progress)
        status, stopped = "complete", cfg.rounds
    except SecureAggregationError as e:
        status = str(e)
        stopped = int(status.split(":")[0].removeprefix("round "))
    frames.append(pd.DataFrame([{"dropout": share, "arm": f"FedAvg + SecAgg (threshold {thr:g})", "round": stopped,
                                 "hr": float("nan"), "status": status}]))
    return pd.concat(frames, ignore_index=True)


# --- the model-replacement backdoor and robust aggregation (MovieLens-1M) ----------------------------------------
ENGINE_ATTACKER_SHARE = 0.05  # 302 of MovieLens-1M's 6,040 users; about 3 of each round's 60
ENGINE_BACKDOOR_ARMS = (("FedAvg, no attack", {}),
                        ("FedAvg, attacked", {"attack": "replacement"}),
                        ("clip 20", {"attack": "replacement", "defense": "clip", "clip_norm": 20.0}),
                        ("clip 10", {"attack": "replacement", "defense": "clip", "clip_norm": 10.0}),
                        ("median", {"attack": "replacement", "defense": "median"}),
                        ("trimmed mean 20 %", {"attack": "replacement", "defense": "trimmed", "trim_frac": 0.2}),
                        ("Krum f=5", {"attack": "replacement", "defense": "krum", "krum_f": 5}),
                        ("DBA, attacked", {"attack": "dba"}),
                        ("DBA, clip 10", {"attack": "dba", "defense": "clip", "clip_norm": 10.0}),
                        ("DBA, Krum f=5", {"attack": "dba", "defense": "krum", "krum_f": 5}))


def engine_backdoor_runs(size: str):
    """FedMF d=64 on MovieLens-1M at CoLR's settings with the FedAvg weights; 5 % of the users attack the least
    popular item by model replacement, against no defense, norm clipping (20 and 10: about twice and once an
    honest update's median norm), the per-item median and trimmed mean and multi-Krum (f = 5, about the attackers
    of a round and a half); then by DBA (4 groups, one block of the target row each), undefended, clipped and
    against Krum; smoke: the small synthetic set."""
    from ..config import RunConfig, paper_ml1m

    out = []
    for label, arm in ENGINE_BACKDOOR_ARMS:
        kw = dict(method="fedmf", aggregation="weighted", **arm)
        if "attack" in arm:
            kw["attacker_share"] = ENGINE_ATTACKER_SHARE
        cfg = (paper_ml1m(eval_every=100, rank_every=0, **kw) if size == "full"
               else RunConfig(**{**ENGINE_SMOKE, "eval_every": 2}, **kw))
        out.append(({"arm": label}, cfg))
    return out


def engine_backdoor_table(size: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all

    runs = engine_backdoor_runs(size)
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.dropna(subset=["hr"]).reindex(columns=["round", "hr", "backdoor_success", "bytes_up_client"])
        t["round"] = t["round"] + 1
        t.insert(0, "arm", labels["arm"])
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


# --- personal models on the engine: Ditto and APFL (MovieLens-100K) -----------------------------------------------
ENGINE_DITTO_LAMBDAS = (0.01, 0.1, 1.0, 1.9)
ENGINE_APFL_ALPHAS = (0.25, 0.5, 0.75, 1.0)
_PERSONAL = {"ditto": ("lambda", "ditto_lambda", ENGINE_DITTO_LAMBDAS), "apfl": ("alpha", "apfl_alpha",
                                                                                ENGINE_APFL_ALPHAS)}


def engine_personal_runs(size: str, kind: str):
    """FedMF d=64 on MovieLens-100K (every user's personal table fits: 943 x 1,682 x 64 floats, 406 MB), 20
    clients a round in turn (each user every 47 rounds), E = 2, B = 256, lr 0.5, the FedAvg weights, 1000 rounds;
    one run per Ditto lambda or APFL alpha (`kind`; the global model is the same FedAvg run in each); smoke: the
    small synthetic set."""
    from ..config import RunConfig

    label, field, values = _PERSONAL[kind]
    return [({label: v}, RunConfig(**_personal_base(size), personalization=kind, **{field: v})) for v in values]


def _personal_base(size: str) -> dict:
    base = (dict(dataset="ml-100k", dim=64, clients_per_round=20, local_epochs=2, batch_size=256, rounds=1000,
                 eval_every=100, rank_every=0, client_schedule="rotating") if size == "full" else ENGINE_SMOKE)
    return {**base, "method": "fedmf", "aggregation": "weighted"}


def engine_ditto_runs(size: str):
    return engine_personal_runs(size, "ditto")


def engine_apfl_runs(size: str):
    return engine_personal_runs(size, "apfl")


def engine_personal_table(size: str, kind: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all

    runs = engine_personal_runs(size, kind)
    label = _PERSONAL[kind][0]
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.dropna(subset=["hr"]).reindex(columns=["round", "hr", "hr_personal", "ndcg", "ndcg_personal"])
        t["round"] = t["round"] + 1
        t.insert(0, label, labels[label])
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


# --- the four personalizations against FedAvg on the engine (MovieLens-100K) ----------------------------------------
ENGINE_PERSONAL_ARMS = (("FedAvg", {}),
                        ("Ditto lambda=1", {"personalization": "ditto", "ditto_lambda": 1.0}),
                        ("APFL alpha=0.25", {"personalization": "apfl", "apfl_alpha": 0.25}),
                        ("pFedMe lambda=1 K=5", {"personalization": "pfedme", "pfedme_lambda": 1.0,
                                                 "pfedme_steps": 5}),
                        ("Per-FedAvg alpha=0.5", {"personalization": "perfedavg", "perfedavg_alpha": 0.5}))


def engine_personal_compare_runs(size: str):
    """FedAvg and one setting of each personalization at `engine_personal_runs`' settings (MovieLens-100K)."""
    from ..config import RunConfig

    return [({"arm": label}, RunConfig(**_personal_base(size), **arm)) for label, arm in ENGINE_PERSONAL_ARMS]


def engine_personal_compare_table(size: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all

    runs = engine_personal_compare_runs(size)
    frames = []
    for (labels, _), res in zip(runs, run_all([c for _, c in runs], progress)):
        t = res.table.dropna(subset=["hr"]).reindex(columns=["round", "hr", "hr_personal", "ndcg", "ndcg_personal"])
        t["round"] = t["round"] + 1
        t.insert(0, "arm", labels["arm"])
        frames.append(t)
    return pd.concat(frames, ignore_index=True)

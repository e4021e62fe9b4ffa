"""The runs behind the cards, at two sizes and on two backbones, and the tables the cards draw.

backbone="minilm" (all-MiniLM-L6-v2, RecFormer style; `LM_SIZES`):
smoke: the synthetic set, history 2 titles of <= 3 tokens, 48 few-shot samples, 2 rounds, one seed.
full:  ML-100K titles, history 5 titles of <= 8 tokens, the paper's 1024 few-shot samples, 5 rounds,
       LoRA r=8 on q/k/v/output of the 6 layers, 3 seeds for Tables 1, 4, 6 and Figs. 5, 7.
backbone="tiny":

smoke: the synthetic set (80 users, 60 items), an 8-layer 16-wide model, 2 rounds, one seed: seconds.
full:  ML-100K titles, an 8-layer 32-wide model (129,266 parameters, 6,144 of them LoRA: `model_size`),
       5 rounds of one local epoch, 3 seeds for Tables 1 and 4 and Fig. 5.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..runtime import in_processes
from .config import FellrecConfig
from .federated import run

SEEDS = {"smoke": (0,), "full": (0, 1, 2)}
METHOD_ORDER = ("central", "fedavg", "fedprox", "ditto", "fellrec")
ALPHAS = {"smoke": (0.1, 0.9), "full": (0.1, 0.5, 0.9, 1.3)}
BETAS = {"smoke": (1.0, 5.0), "full": (1.0, 3.0, 10.0, 20.0)}
CS = {"smoke": (0.1, 1.0), "full": (0.1, 0.5, 1.0)}  # the paper's 0.3 and 0.7 left out to fit the time
FIG5_SEEDS = {"smoke": (0,), "full": (0,)}
CLIENT_COUNTS = {"smoke": (2, 8), "full": (5, 10, 20, 50, 100)}  # Fig. 6: the paper's 5 to 100


LM_SIZES = {
    "smoke": dict(backbone="minilm", dataset="synthetic", history=2, title_tokens=3, samples=48, rounds=2,
                  batch_size=16, mf_rounds=3, vocab_size=100, lora_rank=4, lr=1e-3),
    "full": dict(backbone="minilm", dataset="ml-100k", history=5, title_tokens=8, samples=1024, rounds=5,
                 batch_size=64, lora_rank=8, lr=1e-3),  # lr and temperature: chosen on validation R@10
}


def base(size: str, backbone: str = "tiny", **over) -> FellrecConfig:
    if backbone == "minilm":
        return FellrecConfig(**{**LM_SIZES[size], **over})
    if size == "smoke":
        d = dict(dataset="synthetic", n_embd=16, history=8, pretrain_epochs=30, rounds=2, mf_rounds=3,
                 batch_size=32, vocab_size=100)
    else:
        d = dict(dataset="ml-100k")
    return FellrecConfig(**{**d, **over})


def model_size(cfg: FellrecConfig) -> dict:
    from .federated import dataset
    from .model import make_model

    m = make_model(cfg, dataset(cfg))
    total = sum(p.numel() for p in m.parameters())
    lora = sum(p.numel() for n, p in m.named_parameters() if "lora_" in n)
    return {"parameters": total, "lora_parameters": lora, "layers": cfg.n_layer, "width": cfg.n_embd}


# --- config grids ---------------------------------------------------------------------------------------------
def table1_configs(size, backbone="tiny"):
    return [base(size, backbone, method=m, seed=s) for s in SEEDS[size] for m in METHOD_ORDER]


def _lm_seeds(size, backbone, tiny_seeds):
    """MiniLM's cards run every seed of Table 1 (the differences between methods are within one seed's noise);
    the tiny backbone's keep the seeds they were stored with."""
    return SEEDS[size] if backbone == "minilm" else tiny_seeds


def table6_configs(size, backbone="tiny"):
    return [base(size, backbone, method=m, split="dirichlet", dirichlet_c=c, seed=s)
            for s in _lm_seeds(size, backbone, (0,)) for c in CS[size] for m in ("fedavg", "fellrec")]


def fig6_configs(size):
    return [base(size, method=m, n_clients=n) for n in CLIENT_COUNTS[size] for m in ("fedavg", "fellrec")]


def fig5_configs(size, backbone="tiny"):
    variants = [dict(method="fedavg"), dict(method="fellrec", dyn_speed=False), dict(method="fellrec", dyn_agg=False),
                dict(method="fellrec")]
    return [base(size, backbone, seed=s, **v) for s in _lm_seeds(size, backbone, FIG5_SEEDS[size]) for v in variants]


def fig7_configs(size, backbone="tiny"):
    return [c for s in _lm_seeds(size, backbone, (0,))
            for c in ([base(size, backbone, alpha=a, seed=s) for a in ALPHAS[size]]
                      + [base(size, backbone, beta=b, seed=s) for b in BETAS[size]])]


def variant(cfg: FellrecConfig) -> str:
    if cfg.method != "fellrec":
        return cfg.label()
    if not cfg.dyn_agg:
        return "FELLRec: dynamic learning speed only"
    if not cfg.dyn_speed:
        return "FELLRec: dynamic aggregation only"
    return "FELLRec"


def _cost(cfg) -> float:
    """Relative cost of a run, to start the longest first (Ditto trains two models)."""
    return cfg.rounds * cfg.local_epochs * (2 if cfg.method == "ditto" else 1) * cfg.n_clients ** 0.5


def _train_one(cfg):
    r = run(cfg)
    return cfg.key(), (r.timing or {}).get("cpu_seconds")


def prefetch(configs_by_card: dict[str, list[FellrecConfig]], jobs: int) -> dict[str, float | None]:
    """Train every uncached run behind these cards once (the union of their configs) in `jobs` processes,
    longest first; returns the CPU seconds of each run trained."""
    from ..runner.store import stored
    from .federated import FOUNDATION_FIELDS, cache_dir, foundation

    cfgs = {c.key(): c for cs in configs_by_card.values() for c in cs}
    todo = [c for k, c in cfgs.items() if not stored(cache_dir() / "runs" / k)]
    for c in {tuple(getattr(c, f) for f in FOUNDATION_FIELDS): c for c in todo}.values():
        foundation(c)  # each foundation once, before the workers share it through the cache
    return dict(result for _, result in in_processes(_train_one, todo, jobs, cost=_cost, desc="fellrec runs"))


def runs_meta(cfgs: list[FellrecConfig]) -> dict:
    """What a stored card keeps of its runs: the wall-clock and CPU seconds each took when it was trained (from
    the run cache) and the load averages they were trained under."""
    from ..figures.registry import timing_meta
    from ..runner.store import load_timing
    from .federated import cache_dir

    times = {c.key(): load_timing(cache_dir() / "runs" / c.key()) for c in cfgs}
    return {**timing_meta(times), "runs_load_avg": sorted({t["load_avg"] for t in times.values() if t})}


def run_all(configs, progress=False):
    return [run(c, progress=progress) for c in configs]


# --- tables -----------------------------------------------------------------------------------------------------
def table1(size, progress=False, backbone="tiny") -> pd.DataFrame:
    rows = []
    for cfg, r in zip(table1_configs(size, backbone), run_all(table1_configs(size, backbone), progress)):
        rows.append({"method": cfg.method, "seed": cfg.seed, **r.overall()})
    df = pd.DataFrame(rows)
    g = df.groupby("method", sort=False)
    out = g[["R@10", "R@20", "N@10", "N@20", "imbalance"]].mean()
    out["R@10_std"] = g["R@10"].std().fillna(0.0)
    out["imbalance_std"] = g["imbalance"].std().fillna(0.0)
    out["seeds"] = g.size()
    out = out.reset_index()
    if backbone == "minilm":  # the premise: what the untuned language model and popularity score
        out = pd.concat([zero_shot(size), out], ignore_index=True)
    return out


def table4(size, progress=False, backbone="tiny") -> pd.DataFrame:
    """Per-client R@10 (mean over seeds) and the imbalance of each seed, averaged."""
    rows = []
    for cfg, r in zip(table1_configs(size, backbone), run_all(table1_configs(size, backbone), progress)):
        if cfg.method not in ("central", "fedavg", "fellrec"):
            continue
        row = {"method": cfg.method, "seed": cfg.seed, "imbalance": r.overall()["imbalance"]}
        row.update({f"client {c + 1}": v for c, v in enumerate(r.clients["R@10"])})
        rows.append(row)
    df = pd.DataFrame(rows)
    return df.groupby("method", sort=False).mean(numeric_only=True).drop(columns="seed").reset_index()


MF_SETTINGS = {"smoke": dict(dim=8, epochs=5, rounds=3), "full": {}}  # mf.MFSettings' defaults at full size


def table2(size, progress=False) -> pd.DataFrame:
    """Table 2 on our split: centralized MF and FedMF (over the same 5 clients, each seed) beside Table 1's
    centralized, FedAvg and FELLRec language-model runs; means over seeds, R@10's spread, the clients' imbalance."""
    from . import mf
    from .clients import assign_clients
    from .federated import dataset
    from .metrics import overall

    cfg = base(size)
    data = dataset(cfg)
    clients = assign_clients(cfg, data)
    settings = mf.MFSettings(**MF_SETTINGS[size])
    rows = [{"model": name, "family": "MF", "seed": seed, **overall(train(data, clients, settings, seed))}
            for seed in SEEDS[size] for name, train in (("centralized MF", mf.central), ("FedMF", mf.federated))]
    lm = {"central": "centralized LM", "fedavg": "FedAvg LM", "fellrec": "FELLRec LM"}
    for cfg_, r in zip(table1_configs(size), run_all(table1_configs(size), progress)):
        if cfg_.method in lm:
            rows.append({"model": lm[cfg_.method], "family": "LM", "seed": cfg_.seed, **r.overall()})
    df = pd.DataFrame(rows)
    g = df.groupby(["model", "family"], sort=False)
    out = g[["R@10", "R@20", "N@10", "N@20", "imbalance"]].mean()
    out["R@10_std"] = g["R@10"].std().fillna(0.0)
    out["seeds"] = g.size()
    return out.reset_index()


def table6(size, progress=False, backbone="tiny") -> pd.DataFrame:
    rows = [{"c": cfg.dirichlet_c, "method": cfg.method, "seed": cfg.seed, "R@10": r.overall()["R@10"],
             "imbalance": r.overall()["imbalance"]}
            for cfg, r in zip(table6_configs(size, backbone), run_all(table6_configs(size, backbone), progress))]
    return pd.DataFrame(rows)


def fig5(size, progress=False, backbone="tiny") -> pd.DataFrame:
    """Per variant and round: validation R@10 (mean over clients and seeds), and the final test R@10."""
    rows = []
    for cfg, r in zip(fig5_configs(size, backbone), run_all(fig5_configs(size, backbone), progress)):
        curve = r.rounds.groupby("round")["val_R@10"].mean()
        o = r.overall()
        for t, v in curve.items():
            rows.append({"variant": variant(cfg), "seed": cfg.seed, "round": int(t) + 1, "val_R@10": v,
                         "R@10": o["R@10"], "imbalance": o["imbalance"]})
    df = pd.DataFrame(rows)
    out = df.groupby(["variant", "round"], sort=False).mean(numeric_only=True).drop(columns="seed").reset_index()
    final = df.drop_duplicates(["variant", "seed"]).groupby("variant", sort=False)["R@10"].std().fillna(0.0)
    return out.assign(R10_std=out["variant"].map(final), seeds=df["seed"].nunique())


def fig6(size, progress=False) -> pd.DataFrame:
    """R@10 over every client user and the imbalance across clients, per client count and method."""
    cfgs = fig6_configs(size)
    return pd.DataFrame([{"n_clients": cfg.n_clients, "method": cfg.method, **r.overall()}
                         for cfg, r in zip(cfgs, run_all(cfgs, progress))])


def fig7(size, progress=False, backbone="tiny") -> pd.DataFrame:
    """R@10 and the rest per alpha (beta fixed) and per beta (alpha fixed); with several seeds, their means and R@10's
    seed deviation."""
    rows = []
    cfgs = fig7_configs(size, backbone)
    per_seed = len(ALPHAS[size]) + len(BETAS[size])
    for i, (cfg, r) in enumerate(zip(cfgs, run_all(cfgs, progress))):
        sweep = "alpha" if i % per_seed < len(ALPHAS[size]) else "beta"
        rows.append({"sweep": sweep, "value": cfg.alpha if sweep == "alpha" else cfg.beta, "seed": cfg.seed,
                     **r.overall()})
    df = pd.DataFrame(rows)
    if df["seed"].nunique() == 1:
        return df.drop(columns="seed")
    g = df.groupby(["sweep", "value"], sort=False)
    return g.mean(numeric_only=True).drop(columns="seed").assign(R10_std=g["R@10"].std(),
                                                                 seeds=g.size()).reset_index()


def heating(cfg: FellrecConfig) -> pd.DataFrame:
    """w_c per round and client of one FELLRec run, with the client's loss (the curriculum heating plot)."""
    r = run(cfg)
    return r.rounds[["round", "client", "loss", "w"]].assign(round=lambda d: d["round"] + 1)


def aggregation_trace(size: str = "full", backbone: str = "minilm", seed: int = 0) -> pd.DataFrame:
    """Why FELLRec's aggregation differs from FedAvg's, round by round (Table 1's FELLRec run, retrained; the
    stored run is not reused because it keeps no states): each client's own share of the model it gets back and
    its mean cosine similarity (eq. 3) to the others, with its loss and w_c (eq. 4)."""
    from .federated import _train

    cfg = base(size, backbone, method="fellrec", seed=seed)
    trace: list[dict] = []
    res = _train(cfg, False, trace)
    out = pd.DataFrame(trace).merge(res.rounds[["round", "client", "loss", "w"]], on=["round", "client"])
    return out.assign(round=out["round"] + 1)


def client_changes(size: str = "full", backbone: str = "minilm") -> pd.DataFrame:
    """Per client of Table 1's runs: FELLRec's test R@10 minus FedAvg's in each seed, and the client's samples."""
    cfgs = [c for c in table1_configs(size, backbone) if c.method in ("fedavg", "fellrec")]
    runs = {(c.method, c.seed): r.clients for c, r in zip(cfgs, run_all(cfgs))}
    rows = []
    for seed in SEEDS[size]:
        fa, fe = runs[("fedavg", seed)], runs[("fellrec", seed)]
        rows += [{"client": c + 1, "samples": int(fa["samples"][c]), "seed": seed, "fedavg": fa["R@10"][c],
                  "fellrec": fe["R@10"][c], "change": fe["R@10"][c] - fa["R@10"][c]} for c in range(len(fa))]
    return pd.DataFrame(rows)


def zero_shot(size) -> pd.DataFrame:
    """Popularity and the untuned MiniLM (fresh adapters change nothing) on the clients' users' test items."""
    from ..runtime import use_threads
    from .federated import dataset, evaluate, foundation
    from .metrics import rank_metrics

    use_threads()
    cfg = base(size, "minilm")
    data = dataset(cfg)
    users = data.client_users
    counts = np.bincount(np.concatenate([data.train(u) for u in users]), minlength=data.n_items)
    import torch

    from .data import eval_inputs

    _, _, seen, targets = eval_inputs(data, users, cfg.history, "test")
    pop = rank_metrics(torch.as_tensor(counts, dtype=torch.float64).repeat(len(users), 1), seen, targets)
    zs = evaluate(foundation(cfg, data), data, users, cfg.history, "test")
    rows = []
    for name, m in (("popularity", pop), ("zero-shot", zs)):
        rows.append({"method": name, **{k: float(v.mean()) for k, v in m.items()}, "R@10_std": 0.0, "seeds": 1})
    return pd.DataFrame(rows)


def probes(size, backbone="tiny") -> pd.DataFrame:
    from ..runtime import use_threads
    from .federated import dataset, foundation

    use_threads()
    from .probes import probe_similarity

    cfg = base(size, backbone)
    rows = (300 if backbone == "minilm" else 600) if size == "smoke" else 3000  # MiniLM: 384-wide probes
    return probe_similarity(foundation(cfg), dataset(cfg), cfg.history, max_rows=rows)


def costs(size, backbone="tiny") -> pd.DataFrame:
    from ..runtime import use_threads
    from .costs import cost_table

    use_threads()
    if backbone == "minilm":
        return cost_table(base(size, backbone), max_samples=32 if size == "smoke" else 128)
    return cost_table(base(size), max_samples=64 if size == "smoke" else 512)


def summary_check(t1: pd.DataFrame) -> dict:
    f = t1.set_index("method")
    return {"fellrec_R@10": float(f.loc["fellrec", "R@10"]), "fedavg_R@10": float(f.loc["fedavg", "R@10"]),
            "fellrec_imbalance": float(f.loc["fellrec", "imbalance"]),
            "fedavg_imbalance": float(f.loc["fedavg", "imbalance"])}


__all__ = ["base", "zero_shot", "table1", "table4", "table6", "fig5", "fig6", "fig7", "probes", "costs", "heating", "model_size", "np"]

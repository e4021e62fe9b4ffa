"""Training: the central "foundation" pre-training, then LoRA fine-tuning by the clients with one of
FedAvg, FedProx, Ditto, FELLRec (Algorithm 1), or centrally (the BIGRec row of Table 1).

`run(cfg)` returns a `FedResult`: the final per-client test metrics, one row per (round, client)
(loss, w_c, validation R@10) and the measured bytes of every round. Results are cached on disk by
`cfg.key()`; the foundation model by the fields that define it, so every method starts from the same one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..diverged import check_finite
from ..runner.store import timing
from ..runtime import default_cache_dir, use_threads
from ..net.message import array_part, serialize_part
from .aggregate import cosine_similarity_matrix, fedavg, fellrec_aggregate, flatten
from .clients import assign_clients
from .config import FellrecConfig
from .data import SeqData, eval_inputs, load, windows
from .metrics import rank_metrics
from .model import GPTRec, freeze_base, get_state, make_model, set_lora, tuned_names
from .offload import Channel, full_step, split, split_step
from .recformer import TextRec, few_shot, make_textrec, user_scores

FOUNDATION_FIELDS = ("dataset", "item_text", "max_users", "history", "foundation_share", "vocab_size", "data_seed",
                     "n_layer", "n_embd", "n_head", "lora_rank", "lora_alpha", "pretrain_epochs", "pretrain_lr")


def cache_dir() -> Path:
    return default_cache_dir() / "fellrec"


_DATA: dict = {}


def dataset(cfg: FellrecConfig) -> SeqData:
    key = (cfg.dataset, cfg.item_text, cfg.max_users, cfg.foundation_share, cfg.vocab_size, cfg.data_seed)
    if key not in _DATA:
        _DATA[key] = load(cfg)
    return _DATA[key]


def batches(n: int, size: int, gen: torch.Generator):
    order = torch.randperm(n, generator=gen)
    return [order[i: i + size] for i in range(0, n, size)]


# --- the foundation model ---------------------------------------------------------------------------------
def foundation(cfg: FellrecConfig, data: SeqData | None = None) -> GPTRec:
    """The base model pre-trained (all weights) on the foundation users' full sequences; cached.
    backbone=minilm: the general-purpose all-MiniLM-L6-v2 as it is, with fresh adapters (nothing pre-trained here)."""
    data = data or dataset(cfg)
    if cfg.backbone == "minilm":
        return make_textrec(cfg, data)
    from ..typed_config import hash_key

    key = hash_key({f: getattr(cfg, f) for f in FOUNDATION_FIELDS}, "found-")
    path = cache_dir() / "foundation" / f"{key}.pt"
    model = make_model(cfg, data, seed=cfg.data_seed)
    if path.exists():
        model.load_state_dict(torch.load(path, weights_only=True))
        return model
    use_threads()
    x, y = (torch.as_tensor(a) for a in windows(data, data.foundation_users, cfg.history, part="all"))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.pretrain_lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(cfg.data_seed)
    model.train()
    for _ in range(cfg.pretrain_epochs):
        for b in batches(len(x), cfg.batch_size, gen):
            opt.zero_grad(set_to_none=True)
            _, loss = model(x[b], y[b])
            loss.backward()
            opt.step()
            check_finite("pre-training", loss, lower=f"pretrain_lr (now {cfg.pretrain_lr:g})")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(model.state_dict(), tmp)
    tmp.replace(path)
    return model


# --- evaluation --------------------------------------------------------------------------------------------
@torch.no_grad()
def evaluate(model: GPTRec, data: SeqData, users: np.ndarray, history: int, part: str = "test") -> dict:
    """Per-user full-ranking metrics of `users` (arrays), scored at each user's last history position."""
    x, last, seen, targets = eval_inputs(data, users, history, part)
    if isinstance(model, TextRec):
        return rank_metrics(user_scores(model, x), seen, targets)
    logits, _ = model(torch.as_tensor(x))
    scores = logits[torch.arange(len(users)), torch.as_tensor(last)]
    return rank_metrics(scores, seen, targets)


# --- one client's local training -----------------------------------------------------------------------------
def local_train(model: GPTRec, params, x, y, cfg: FellrecConfig, gen: torch.Generator, channel: Channel | None,
                prox: dict | None = None, prox_mu: float = 0.0) -> float:
    """`local_epochs` of Adam on the adapters over (x, y); FedProx/Ditto add mu/2 ||R - prox||^2.
    Through the split model when a channel is given. Returns the mean batch loss."""
    if isinstance(model, TextRec):  # the item table of this round, under the adapters training starts from
        model.refresh_items()
    opt = torch.optim.Adam(params, lr=cfg.lr)
    names = {id(p): n for n, p in model.named_parameters()}
    halves = split(model, cfg.client_layers) if channel is not None else None
    losses = []
    for _ in range(cfg.local_epochs):
        for b in batches(len(x), cfg.batch_size, gen):
            opt.zero_grad(set_to_none=True)
            loss = split_step(*halves, x[b], y[b], channel) if halves else full_step(model, x[b], y[b])
            if prox is not None and prox_mu > 0:
                reg = sum(((p - prox[names[id(p)]]) ** 2).sum() for p in params) * (prox_mu / 2)
                reg.backward()
            opt.step()
            check_finite("local training", loss, lower=f"lr (now {cfg.lr:g})")
            losses.append(float(loss))
    check_finite("local training", tensors=params, lower=f"lr (now {cfg.lr:g})")  # before it is aggregated
    return float(np.mean(losses)) if losses else 0.0


# --- results ----------------------------------------------------------------------------------------------------
@dataclass
class FedResult:
    config: FellrecConfig
    clients: pd.DataFrame  # one row per client: users, samples, R@10, R@20, N@10, N@20 (test)
    rounds: pd.DataFrame  # one row per (round, client): loss, w, val_R@10
    ledger: pd.DataFrame  # one row per (round, direction, part): measured bytes
    notes: str = ""
    timing: dict | None = None  # labcore.runner.store.timing of the training

    TABLES = ("clients", "rounds", "ledger")

    def overall(self) -> dict:
        """User-weighted means over every client user, and the imbalance of R@10 across clients."""
        from .metrics import overall

        return overall(self.clients)

    def save(self, folder: Path) -> None:
        from ..runner.store import save_run

        save_run(folder, {n: getattr(self, n) for n in self.TABLES},
                 {"config": self.config.to_dict(), "notes": self.notes}, self.timing)

    @classmethod
    def load(cls, folder: Path, cfg: FellrecConfig) -> "FedResult":
        from ..runner.store import load_run

        tables, meta = load_run(folder, cls.TABLES)
        return cls(cfg, *(tables[n] for n in cls.TABLES), meta.get("notes", ""), meta.get("timing"))


def lora_bytes(state: dict, layers: list[int]) -> int:
    """Measured bytes of one message of client-specific parameters: those of `layers` (and, when the whole
    model is tuned, the embeddings and head the device holds), each a serialized Part."""
    from .model import layer_of

    return sum(len(serialize_part(array_part(n, "factors", v.numpy()))) for n, v in state.items()
               if layer_of(n) in layers or layer_of(n) is None)


def run(cfg: FellrecConfig, progress: bool = False, use_cache: bool = True) -> FedResult:
    from ..runner.store import read_stored

    folder = cache_dir() / "runs" / cfg.key()
    hit = read_stored(folder, lambda f: FedResult.load(f, cfg)) if use_cache else None
    if hit is not None:
        return hit
    res = _train(cfg, progress)
    if use_cache:
        res.save(folder)
    return res


def _train(cfg: FellrecConfig, progress: bool, trace: list | None = None) -> FedResult:
    """One run; `trace`, when given, receives FELLRec's aggregation of every round (`_aggregation_rows`)."""
    use_threads()
    t0, cpu0 = time.perf_counter(), time.process_time()  # CPU seconds: what the run costs on an idle machine
    data = dataset(cfg)
    groups = assign_clients(cfg, data)
    model = foundation(cfg, data)
    params = freeze_base(model, cfg.tune)
    names = tuned_names(model, cfg.tune)
    init = get_state(model, names)
    n = cfg.depth()
    device_layers = (list(range(1, cfg.client_layers + 1)) + [n]) if cfg.offload else list(range(1, n + 1))
    if cfg.backbone == "minilm":  # the few-shot next-item samples, each client holding its users' share
        local = few_shot(data, groups, cfg.history, cfg.samples, cfg.data_seed)
    else:
        local = [tuple(torch.as_tensor(a) for a in windows(data, g, cfg.history)) for g in groups]
    sizes = [len(x) for x, _ in local]
    C = len(groups)
    states = [dict(init) for _ in range(C)]  # what each client starts its next round from
    personal = [dict(init) for _ in range(C)]  # Ditto's personal models
    glob = dict(init)
    rows, ledger = [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.rounds, desc=cfg.describe(), leave=False)

    if cfg.method == "central":
        x = torch.cat([a for a, _ in local])
        y = torch.cat([b for _, b in local])
    for t in range(cfg.rounds):
        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([cfg.seed, t]).generate_state(1)[0]))
        if cfg.method == "central":
            set_lora(model, glob)
            loss = local_train(model, params, x, y, cfg, gen, None)
            glob = get_state(model, names)
            rows += [{"round": t, "client": c, "loss": loss, "w": np.nan} for c in range(C)]
        else:
            new, losses, channel = [], [], Channel() if cfg.offload else None
            for c in range(C):
                xc, yc = local[c]
                if cfg.method == "ditto":  # the personal model first, pulled towards the global one
                    set_lora(model, personal[c])
                    local_train(model, params, xc, yc, cfg, gen, channel, prox=glob, prox_mu=cfg.ditto_lambda)
                    personal[c] = get_state(model, names)
                set_lora(model, states[c])
                prox = states[c] if cfg.method == "fedprox" else None
                losses.append(local_train(model, params, xc, yc, cfg, gen, channel, prox, cfg.prox_mu))
                new.append(get_state(model, names))
            w = np.full(C, np.nan)
            if cfg.method == "fellrec":
                states, wt, d = fellrec_aggregate(new, losses, t + 1, cfg.alpha, cfg.beta, cfg.dyn_agg,
                                                  cfg.dyn_speed, sizes)
                w = wt.numpy()
                if trace is not None:
                    trace += _aggregation_rows(t, new, d)
            else:
                glob = fedavg(new, sizes)
                states = [glob for _ in range(C)]
            rows += [{"round": t, "client": c, "loss": losses[c], "w": float(w[c])} for c in range(C)]
            up = sum(lora_bytes(s, device_layers) for s in new)
            down = sum(lora_bytes(s, device_layers) for s in states)
            ledger += [{"round": t, "direction": "up", "part": "lora", "bytes": up},
                       {"round": t, "direction": "down", "part": "lora", "bytes": down}]
            if channel is not None:
                ledger += [{"round": t, "direction": d, "part": p, "bytes": b} for (d, p), b in channel.bytes.items()]
        # validation R@10 of every client after the round (the learning curves of Fig. 5)
        for c in range(C):
            set_lora(model, _eval_state(cfg, c, glob, states, personal))
            val = evaluate(model, data, groups[c], cfg.history, "valid")["R@10"]
            rows[-C + c]["val_R@10"] = float(val.mean())
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    crow = []
    for c in range(C):
        set_lora(model, _eval_state(cfg, c, glob, states, personal))
        m = evaluate(model, data, groups[c], cfg.history, "test")
        crow.append({"client": c, "users": len(groups[c]), "samples": sizes[c],
                     **{k: float(v.mean()) for k, v in m.items()}})
    return FedResult(cfg, pd.DataFrame(crow), pd.DataFrame(rows),
                     pd.DataFrame(ledger, columns=["round", "direction", "part", "bytes"]),
                     data.notes, timing(time.perf_counter() - t0, time.process_time() - cpu0, rounds=cfg.rounds))


def _aggregation_rows(t: int, states, d: torch.Tensor) -> list[dict]:
    """What eqs. (1)-(4) did in round t: each client's share of its own model in the state it gets back, and the
    mean cosine similarity (eq. 3) of its LoRA parameters to the other clients'."""
    sim = cosine_similarity_matrix(flatten(states))
    own = d.diagonal() / d.sum(dim=1)
    C = len(states)
    return [{"round": t, "client": c, "own_share": float(own[c]),
             "similarity": float((sim[c].sum() - sim[c, c]) / (C - 1))} for c in range(C)]


def _eval_state(cfg, c, glob, states, personal):
    if cfg.method == "central":
        return glob
    if cfg.method == "ditto":
        return personal[c]
    return states[c]

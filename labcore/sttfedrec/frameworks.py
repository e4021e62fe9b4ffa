"""Training frameworks: centralized two-tower, naive FL two-tower, STTFedRec, FedMVMF and FCF.

One federated round (sections 3.2 and 3.3), K clients:

* Requests (step 2). Each client draws `batches_per_round` requests of T
  items: round((1 - rho) T) of its training clicks and the rest uniformly
  from items it never clicked. Its *obfuscated request* is the set of those
  item ids (sorted, so the order says nothing); it always holds every clicked
  item of the batch (`obfuscated_request`).
* Naive FL (FL-DSSM / FL-CLSM, Fig. 2(b)): the device holds both towers,
  computes the item embeddings of its requested items itself from their raw
  records, and uploads the gradients of both towers; the server averages them.
* STTFedRec (Fig. 2(c)): the recommendation server computes the embeddings
  of the round's requested items with the item tower (Eq. 6) and returns them.
  The device runs only the user tower (Eq. 7), the cosine/softmax loss (Eq. 8)
  and its backward pass (Eq. 9), which gives the user-tower gradient and the
  gradient of the loss with respect to each received item embedding (the cut
  layer of split learning). Gradients and the loss go through the circular
  secret-sharing chain to the secure aggregation server (Eq. 10-12); the mean
  user-tower gradient drives FedAdam on the user tower (Eq. 13) and the mean
  item-embedding gradient is the back-propagation signal the recommendation
  server pushes through the item tower (Eq. 14) before its own FedAdam step (Eq. 15).

  Eq. 14 writes the item-tower gradient as d(mean loss)/d(Theta_v). A scalar
  loss value alone cannot be back-propagated; what the server needs (and what
  split learning sends) is d(mean loss)/d(item embedding). For the chain to
  sum those across clients they must live in one index space: the round's
  union of requested items, which the server announces (it knows every
  request anyway). The server computes each item of the union once per round
  (one dropout mask per item), so the sum of the clients' embedding gradients
  back-propagates exactly to d(mean loss)/d(Theta_v).

Split learning does not change the math: with the same requests, seeds and
dropout masks, STTFedRec's gradients equal the unsplit model's
(`split_gradients` vs `unsplit_gradients`, tested in float64). The only
numeric difference in training is the chain's fixed-point rounding
(at most K * 2**-(frac_bits+1) per value).

The chain in training. Every client's gradient is as large as the user tower
(about a million values for DSSM), so running the real chain (random ring
shares for K clients) every round would dominate the simulation. The round's
sum is therefore computed directly, and on every `chain_every`-th round the
real chain runs on the K per-client gradients: its output replaces the
direct sum for that round and the largest difference is logged
(`chain_max_diff`). The chain's exactness is a test; its costs are measured in
`efficiency.py`.

FedAdam (Eq. 13-15), as printed: m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
theta -= lr m / (sqrt(v) + tau), no bias correction. Learning rate
lr_t = lr (1 - lr_decay) ** (t // decay_every) ("Adam with decay").
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch

from ..runtime import topic_cache
from ..runtime import use_threads as use_one_thread
from ..diverged import check_finite
from ..fed.sampling import SETUP, NegativeSampler, round_rng, sample_clients
from ..net.ledger import Ledger
from ..net.message import Part, array_part, bytes_part, serialize_part
from ..privacy.chain import chain_aggregate
from ..privacy.secagg import FixedPoint
from .config import STTConfig
from .features import Catalog, EvalSet, FeatureSpace, eval_set, load_ml1m, synthetic_catalog
from .towers import MVMFTower, TwoTower, request_loss

STREAM_CLIENTS, STREAM_REQUESTS, STREAM_DROPOUT, STREAM_CHAIN, STREAM_EVAL = 101, 102, 103, 104, 105
HISTORY_COLUMNS = ("round", "loss", "lr", "auc", "p10", "ndcg10", "sec", "union", "chain_max_diff")




def _torch_seed(seed: int, round_idx: int, stream: int) -> int:
    return int(np.random.SeedSequence([seed, round_idx, stream]).generate_state(1)[0])


# --- data ------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Bundle:
    """Everything a run reads: the catalogue, hashed inputs, evaluation triples, negative sampler."""

    catalog: Catalog
    features: FeatureSpace
    evalset: EvalSet
    sampler: NegativeSampler


_BUNDLES: dict[tuple, Bundle] = {}
_BUNDLES_LOCK = threading.Lock()  # the app's sessions are threads: one evicting while another reads its bundle


def load_bundle(cfg: STTConfig) -> Bundle:
    key = (cfg.dataset, cfg.data_seed, cfg.history, cfg.n_features,
           (cfg.synthetic_users, cfg.synthetic_items) if cfg.dataset == "synthetic" else ())
    with _BUNDLES_LOCK:
        if key not in _BUNDLES:
            if cfg.dataset == "ml-1m":
                cat = load_ml1m(history=cfg.history, seed=cfg.data_seed)
            else:
                cat = synthetic_catalog(cfg.synthetic_users, cfg.synthetic_items, history=cfg.history,
                                        seed=cfg.data_seed)
            if len(_BUNDLES) >= 3:
                _BUNDLES.pop(next(iter(_BUNDLES)))
            _BUNDLES[key] = Bundle(cat, FeatureSpace(cat, cfg.n_features), eval_set(cat, seed=cfg.data_seed),
                                   NegativeSampler(cat.interaction_data()))
        return _BUNDLES[key]


# --- requests --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Requests:
    """The round's requests: rows of T items, `row_client` says whose (0..K-1)."""

    clients: np.ndarray  # (K,) user ids
    items: np.ndarray  # (R, T)
    labels: np.ndarray  # (R, T) float32, 1 = clicked
    row_client: np.ndarray  # (R,)

    def client_rows(self, m: int) -> np.ndarray:
        return np.flatnonzero(self.row_client == m)

    def obfuscated(self, m: int) -> np.ndarray:
        """What client m sends the server: the distinct requested item ids, sorted."""
        return obfuscated_request(self.items[self.client_rows(m)])

    def clicked(self, m: int) -> np.ndarray:
        rows = self.client_rows(m)
        return np.unique(self.items[rows][self.labels[rows] > 0])


def obfuscated_request(items: np.ndarray) -> np.ndarray:
    """The distinct ids of a client's requested items (its clicks and sampled non-clicks), sorted."""
    return np.unique(np.asarray(items).reshape(-1))


def build_requests(bundle: Bundle, clients: np.ndarray, n_click: int, n_neg: int, batches: int,
                   rng: np.random.Generator) -> Requests:
    """Each client: `batches` requests of n_click clicks (distinct when it has enough) + n_neg sampled non-clicks."""
    cat = bundle.catalog
    K, T = len(clients), n_click + n_neg
    R = K * batches
    clicks = np.empty((R, n_click), np.int64)
    for m, u in enumerate(clients):
        targets = cat.user_train(int(u))
        need = n_click * batches
        pick = rng.choice(targets, size=need, replace=need > len(targets))
        clicks[m * batches : (m + 1) * batches] = pick.reshape(batches, n_click)
    row_client = np.repeat(np.arange(K), batches)
    negs = bundle.sampler.sample(np.repeat(clients[row_client], n_neg), rng).reshape(R, n_neg)
    items = np.concatenate([clicks, negs], axis=1)
    labels = np.concatenate([np.ones((R, n_click), np.float32), np.zeros((R, n_neg), np.float32)], axis=1)
    order = np.argsort(rng.random((R, T)), axis=1)  # clicks at random positions
    items, labels = np.take_along_axis(items, order, 1), np.take_along_axis(labels, order, 1)
    return Requests(np.asarray(clients, np.int64), items, labels, row_client)


# --- FedAdam ---------------------------------------------------------------------------------------
class FedAdam:
    """Server optimizer of Eq. 13 / 15 over a list of parameters."""

    def __init__(self, params: list[torch.Tensor], beta1: float, beta2: float, tau: float):
        self.params = list(params)
        self.b1, self.b2, self.tau = beta1, beta2, tau
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.den = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, grads: list[torch.Tensor], lr: float) -> None:
        for p, g, m, v, den in zip(self.params, grads, self.m, self.v, self.den):
            g = g.to(p.dtype)
            m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            torch.sqrt(v, out=den).add_(self.tau)  # a kept buffer: fresh large tensors cost page faults
            p.addcdiv_(m, den, value=-lr)

    def state(self) -> dict:
        return {"m": self.m, "v": self.v}


def flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def unflat(vec: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    out, pos = [], 0
    for t in like:
        out.append(vec[pos : pos + t.numel()].view_as(t).to(t.dtype))
        pos += t.numel()
    return out


def n_params(module: torch.nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


# --- split and unsplit gradients -----------------------------------------------------------------
def unsplit_gradients(model: TwoTower, fs: FeatureSpace, req: Requests, gamma: float, shared_items: bool = True):
    """One autograd pass over both towers: (mean loss, user-tower grads, item-tower grads).

    shared_items=True computes each distinct requested item once (as the STTFedRec server does);
    False computes every request row separately (as K naive FL devices do).
    """
    K, (R, T) = len(req.clients), req.items.shape
    if shared_items:  # item tower first, as on the server, so dropout masks are drawn in the same order
        union, inv = np.unique(req.items, return_inverse=True)
        I = model.item(fs.items.batch(union))[torch.from_numpy(inv.reshape(-1))].view(R, T, -1)
    else:
        I = model.item(fs.items.batch(req.items.reshape(-1))).view(R, T, -1)
    u = model.user(fs.users.batch(req.clients))
    loss = _client_losses(u, I, req, gamma).mean()
    gu = torch.autograd.grad(loss, list(model.user.parameters()), retain_graph=True)
    gv = torch.autograd.grad(loss, list(model.item.parameters()))
    return loss.detach(), list(gu), list(gv)


def _client_losses(u: torch.Tensor, I: torch.Tensor, req: Requests, gamma: float, score: str = "cosine"):
    """L_k of every client: the mean of Eq. 8 over its requests."""
    K = len(req.clients)
    rc = torch.from_numpy(req.row_client)
    rows = request_loss(u[rc], I, torch.from_numpy(req.labels).to(u.dtype), gamma, score)
    counts = torch.from_numpy(np.bincount(req.row_client, minlength=K).clip(1)).to(rows.dtype)
    return torch.zeros(K, dtype=rows.dtype).index_add_(0, rc, rows) / counts


@dataclass
class SplitRound:
    """What each party holds after the split forward/backward of one round."""

    union: np.ndarray  # the round's distinct requested items (announced by the server)
    item_emb: torch.Tensor  # server: item tower output on the union (graph kept for Eq. 14)
    client_losses: torch.Tensor  # (K,) L_k
    user_grads: list[torch.Tensor]  # mean over clients (what the aggregation server gets)
    emb_grad: torch.Tensor  # (|union|, d) mean over clients of dL_k / d item embedding
    per_client: np.ndarray | None = None  # (K, n) float64 [user grads | emb grads | loss] when asked


def split_forward_backward(model: TwoTower, fs: FeatureSpace, req: Requests, gamma: float,
                           per_client: bool = False) -> SplitRound:
    """STTFedRec's steps 2-3 for the whole cohort: server item forward, device user forward/backward."""
    K, (R, T) = len(req.clients), req.items.shape
    union, inv = np.unique(req.items, return_inverse=True)
    item_emb = model.item(fs.items.batch(union))  # recommendation server (Eq. 6)
    received = item_emb.detach().requires_grad_(True)  # what crosses the network
    u = model.user(fs.users.batch(req.clients))  # devices (Eq. 7)
    I = received[torch.from_numpy(inv.reshape(-1))].view(R, T, -1)
    losses = _client_losses(u, I, req, gamma)  # Eq. 8
    params = list(model.user.parameters())
    rows = None
    if per_client:  # each device's own gradient (Eq. 9) and embedding gradient, on the same graph
        rows = []
        for k in range(K):
            g = torch.autograd.grad(losses[k], params + [received], retain_graph=True)
            rows.append(torch.cat([flat(list(g)), losses[k].detach().reshape(1)]).double().numpy())
        rows = np.stack(rows)
    g = torch.autograd.grad(losses.mean(), params + [received])
    return SplitRound(union, item_emb, losses.detach(), list(g[:-1]), g[-1], rows)


def item_tower_grads(model: TwoTower, rnd: SplitRound, emb_grad: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Eq. 14 on the server: back-propagate the mean embedding gradient through the item tower."""
    g = rnd.emb_grad if emb_grad is None else emb_grad
    return list(torch.autograd.grad(rnd.item_emb, list(model.item.parameters()), grad_outputs=g.to(rnd.item_emb.dtype)))


def split_gradients(model: TwoTower, fs: FeatureSpace, req: Requests, gamma: float):
    """(mean loss, user-tower grads, item-tower grads) computed the split way."""
    rnd = split_forward_backward(model, fs, req, gamma)
    return rnd.client_losses.mean(), rnd.user_grads, item_tower_grads(model, rnd)


def chain_sum(per_client: np.ndarray, cfg: STTConfig, seed: int, chunk: int = 1 << 17, **kw):
    """Sum the rows of (K, n) through the circular chain, column chunk by column chunk (exact: elementwise).

    Returns (sum, reports). Chunks bound the memory of K x n ring vectors.
    """
    codec = FixedPoint(cfg.frac_bits, cfg.ring_bits)
    out, reports = np.empty(per_client.shape[1]), []
    for c, lo in enumerate(range(0, per_client.shape[1], chunk)):
        s, rep = chain_aggregate(per_client[:, lo : lo + chunk], mode=cfg.chain_mode, codec=codec, seed=seed + c, **kw)
        rep.uploads = []
        out[lo : lo + chunk] = s
        reports.append(rep)
    return out, reports


# --- evaluation ---------------------------------------------------------------------------------------
def rank_metrics(users: np.ndarray, scores: np.ndarray, labels: np.ndarray, k: int = 10) -> dict[str, float]:
    """Per-user AUC, Precision@k and NDCG@k (binary relevance), averaged over users with a positive and a negative."""
    order = np.lexsort((-scores, users))
    u, lab = users[order], labels[order].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    sizes = np.diff(np.r_[starts, len(u)])
    pos_in = np.arange(len(u)) - np.repeat(starts, sizes)
    n_pos = np.add.reduceat(lab, starts)
    n_neg = sizes - n_pos
    cum_pos = np.cumsum(lab) - np.repeat(np.cumsum(lab)[starts] - lab[starts], sizes)  # positives up to here
    negs_above = pos_in + 1 - cum_pos  # negatives ranked above this row
    neg_below_sum = np.add.reduceat(lab * (np.repeat(n_neg, sizes) - negs_above), starts)
    ok = (n_pos > 0) & (n_neg > 0)
    auc = neg_below_sum[ok] / (n_pos[ok] * n_neg[ok])
    top = pos_in < k
    hits = np.add.reduceat(lab * top, starts)
    disc = 1.0 / np.log2(pos_in + 2.0)
    dcg = np.add.reduceat(lab * top * disc, starts)
    ideal_table = np.cumsum(1.0 / np.log2(np.arange(k) + 2.0))
    idcg = ideal_table[np.minimum(n_pos, k) - 1]
    return {"auc": float(auc.mean()), "p10": float((hits[ok] / k).mean()),
            "ndcg10": float((dcg[ok] / idcg[ok]).mean()), "users": int(ok.sum())}


@torch.no_grad()
def embed_all(tower: torch.nn.Module, side, ids: np.ndarray, chunk: int = 512, extra: Callable | None = None):
    out = []
    for lo in range(0, len(ids), chunk):
        part = ids[lo : lo + chunk]
        x = side.batch(part)
        out.append(tower(x) if extra is None else tower(x, torch.from_numpy(part)))
    return torch.cat(out) if out else torch.zeros(0)


@torch.no_grad()
def evaluate_embeddings(U: torch.Tensor, V: torch.Tensor, ev: EvalSet, user_ids: np.ndarray, score: str) -> dict:
    """U: rows of `user_ids`; V: every item. Scores come from one user x item product, then the pairs are read."""
    U, V = U.float(), V.float()
    if score == "cosine":
        U = U / U.norm(dim=1, keepdim=True).clamp_min(1e-8)
        V = V / V.norm(dim=1, keepdim=True).clamp_min(1e-8)
    S = U @ V.T
    pos = np.searchsorted(user_ids, ev.users)
    s = S.reshape(-1)[torch.from_numpy(pos * V.shape[0] + ev.items)]
    return rank_metrics(ev.users, s.double().numpy(), ev.labels)


def evaluate_two_tower(model: torch.nn.Module, bundle: Bundle, ev: EvalSet, score: str = "cosine") -> dict:
    model.eval()
    users = ev.test_users
    fs = bundle.features
    if isinstance(model.user, MVMFTower):
        U = embed_all(model.user, fs.users, users, extra=True)
        V = embed_all(model.item, fs.items, np.arange(bundle.catalog.n_items), extra=True)
    else:
        U = embed_all(model.user, fs.users, users)
        V = embed_all(model.item, fs.items, np.arange(bundle.catalog.n_items))
    model.train()
    return evaluate_embeddings(U, V, ev, users, score)


def eval_subset(bundle: Bundle, cfg: STTConfig) -> EvalSet:
    ev = bundle.evalset
    users = ev.test_users
    if cfg.eval_users and cfg.eval_users < len(users):
        users = np.sort(round_rng(cfg.seed, SETUP, STREAM_EVAL).choice(users, cfg.eval_users, replace=False))
        return ev.subset(users)
    return ev


# --- results ----------------------------------------------------------------------------------------------
@dataclass
class STTResult:
    config: STTConfig
    history: pd.DataFrame  # HISTORY_COLUMNS, metrics NaN on rounds without evaluation
    final: dict  # auc, p10, ndcg10 on every test user
    ledger: pd.DataFrame  # Ledger.COLUMNS (+ link): measured bytes of the recorded rounds
    meta: dict = field(default_factory=dict)
    timing: dict | None = None  # labcore.runner.store.timing of the training
    cached: bool = False

    TABLES = ("history", "ledger")

    def save(self, folder: Path) -> None:
        from ..runner.store import save_run

        save_run(folder, {"history": self.history, "ledger": self.ledger},
                 {"config": self.config.to_dict(), "final": self.final, "meta": self.meta}, self.timing)

    @staticmethod
    def load(folder: Path) -> "STTResult":
        from ..runner.store import load_run
        from .config import from_dict

        tables, d = load_run(folder, STTResult.TABLES)
        return STTResult(from_dict(d["config"]), tables["history"], d["final"], tables["ledger"], d.get("meta", {}),
                         d.get("timing"), cached=True)


def cache_dir() -> Path:
    return topic_cache("sttfedrec")


# --- the ledger of a round ------------------------------------------------------------------------
LINKS = {  # part name -> link it travels on
    "request": "device->server", "raw_items": "server->device", "user_tower": "server->device",
    "item_tower": "server->device", "item_embeddings": "server->device", "union_ids": "server->device",
    "user_tower_grad": "device->server", "item_tower_grad": "device->server", "loss": "device->server",
    "share_user_grad": "device->device", "share_emb_grad": "device->device", "share_loss": "device->device",
    "mixed_user_grad": "device->sas", "mixed_emb_grad": "device->sas", "mixed_loss": "device->sas",
    "raw_catalog": "server->device", "candidate_embeddings": "server->device", "catalog_embeddings": "server->device",
}


def ring_part(name: str, values: np.ndarray, ring_bits: int) -> Part:
    """A ring vector on the wire: uint32 words for rings up to 32 bits, 64-bit words otherwise."""
    v = np.ascontiguousarray(values, dtype=np.uint64)
    arr = v.astype(np.uint32) if ring_bits <= 32 else v.view(np.int64)
    return array_part(name, "values", arr, bits_per_value=ring_bits)


def tower_part(name: str, tensors: list[torch.Tensor]) -> Part:
    return array_part(name, "values", flat([t.detach().float() for t in tensors]).numpy())


def record_parts(ledger: Ledger, round_idx: int, client_parts: list[list[Part]]) -> np.ndarray:
    """Serialize every client's parts; one ledger row per part name (summed over clients). Returns bytes per client."""
    per_client = np.zeros(len(client_parts), np.int64)
    rows: dict[str, dict] = {}
    for m, parts in enumerate(client_parts):
        for p in parts:
            n = len(serialize_part(p))
            per_client[m] += n
            link = LINKS.get(p.name, "device->server")
            r = rows.setdefault(p.name, {"round": round_idx, "direction": "down" if link.startswith("server") else "up",
                                          "part": p.name, "kind": p.kind, "messages": 0, "bytes": 0, "bits": 0,
                                          "link": link})
            r["messages"] += 1
            r["bytes"] += n
            r["bits"] += p.bits
    ledger.rows.extend(rows.values())
    return per_client


def training_parts(framework: str, m: int, req: Requests, model: TwoTower, grads: dict, catalog: Catalog,
                   codec: FixedPoint | None = None, ring_bits: int = 64, rng: np.random.Generator | None = None,
                   union: np.ndarray | None = None) -> list[Part]:
    """The real messages of client m in one training round (framework 'fl' or 'sttfedrec').

    grads: 'user' (list), 'item' (list, FL), 'emb' ((|union|, d) tensor of this client, STTFedRec),
    'loss' (float). For STTFedRec the chain's two messages carry ring shares of
    [user grads | emb grads] and of the loss: the share sent to the next client and the mixed
    value uploaded to the aggregation server (each uniform in the ring, same size).
    """
    request = obfuscated_request(req.items[req.client_rows(m)])
    ids = array_part("request", "indices", request.astype(np.int32))
    if framework == "fl":
        raw = catalog.raw_item_bytes(request)
        return [ids, bytes_part("raw_items", "values", raw), tower_part("user_tower", list(model.user.parameters())),
                tower_part("item_tower", list(model.item.parameters())), tower_part("user_tower_grad", grads["user"]),
                tower_part("item_tower_grad", grads["item"]),
                array_part("loss", "values", np.array([grads["loss"]], np.float32))]
    emb = model_item_rows(grads, request, union)
    vec = np.concatenate([flat([g.detach().double() for g in grads["user"]]).numpy(),
                          grads["emb"].detach().double().numpy().reshape(-1)])
    codec = codec or FixedPoint()
    enc = codec.encode(vec, 1)
    share2 = codec.random(rng or np.random.default_rng(0), enc.size)
    mixed = codec.sub(enc, share2)  # [g]_1; plus the predecessor's share, it is again uniform
    n_user = sum(g.numel() for g in grads["user"])
    lenc = codec.encode(np.array([grads["loss"]]), 1)
    lshare = codec.random(rng or np.random.default_rng(1), 1)
    return [ids, array_part("item_embeddings", "values", emb),
            array_part("union_ids", "indices", np.asarray(union, np.int32)),
            tower_part("user_tower", list(model.user.parameters())),
            ring_part("share_user_grad", share2[:n_user], ring_bits), ring_part("share_emb_grad", share2[n_user:], ring_bits),
            ring_part("share_loss", lshare, ring_bits),
            ring_part("mixed_user_grad", mixed[:n_user], ring_bits), ring_part("mixed_emb_grad", mixed[n_user:], ring_bits),
            ring_part("mixed_loss", codec.sub(lenc, lshare), ring_bits)]


def model_item_rows(grads: dict, request: np.ndarray, union: np.ndarray) -> np.ndarray:
    """The item embeddings client m receives: the rows of its request (float32)."""
    E = grads["item_emb"]
    return E[np.searchsorted(union, request)].astype(np.float32)


# --- federated training -----------------------------------------------------------------------------
class FedTrainer:
    """Federated rounds for 'fl', 'sttfedrec' and 'fedmvmf'; `step()` plays one round."""

    def __init__(self, cfg: STTConfig, bundle: Bundle | None = None, dtype: torch.dtype = torch.float32):
        if cfg.framework not in ("fl", "sttfedrec", "fedmvmf"):
            raise ValueError(f"FedTrainer runs fl, sttfedrec and fedmvmf, not {cfg.framework!r}")
        use_one_thread()
        self.cfg, self.bundle = cfg, bundle or load_bundle(cfg)
        cat = self.bundle.catalog
        if cfg.clients_per_round > cat.n_users:
            from ..config import ConfigError

            raise ConfigError(f"clients_per_round={cfg.clients_per_round} is invalid: {cat.name} has only "
                              f"{cat.n_users} users (allowed range 2..{cat.n_users})")
        torch.manual_seed(_torch_seed(cfg.seed, SETUP, 0))
        if cfg.framework == "fedmvmf":
            self.model = torch.nn.Module()
            self.model.user = MVMFTower(cfg.n_features, cat.n_users, cfg.mf_dim, cfg.init_std)
            self.model.item = MVMFTower(cfg.n_features, cat.n_items, cfg.mf_dim, cfg.init_std)
            self.shared_u = [self.model.user.side.weight]
        else:
            self.model = TwoTower(cfg.tower, cfg.n_features, cfg.dropout, cfg.init_std)
            self.shared_u = list(self.model.user.parameters())
        self.model.to(dtype)
        self.opt_u = FedAdam(self.shared_u, cfg.beta1, cfg.beta2, cfg.tau)
        self.opt_v = FedAdam(list(self.model.item.parameters()), cfg.beta1, cfg.beta2, cfg.tau)
        self.codec = FixedPoint(cfg.frac_bits, cfg.ring_bits)
        self.ledger = Ledger()
        self.rows: list[dict] = []
        self.round = 0
        self.ev_periodic = eval_subset(self.bundle, cfg)

    def lr(self, t: int) -> float:
        c = self.cfg
        return c.lr * (1.0 - c.lr_decay) ** (t // c.decay_every)

    def requests(self, t: int) -> Requests:
        c, cat = self.cfg, self.bundle.catalog
        clients = sample_clients(cat.n_users, c.clients_per_round, round_rng(c.seed, t, STREAM_CLIENTS))
        return build_requests(self.bundle, clients, c.n_click, c.n_neg, c.batches_per_round,
                              round_rng(c.seed, t, STREAM_REQUESTS))

    def step(self) -> dict:
        c, t = self.cfg, self.round
        fs = self.bundle.features
        req = self.requests(t)
        torch.manual_seed(_torch_seed(c.seed, t, STREAM_DROPOUT))  # dropout masks of the round
        t0 = time.perf_counter()
        record = t == 0 or (c.ledger_every and t % c.ledger_every == 0)
        chain_diff = float("nan")
        union_size = 0
        if c.framework == "sttfedrec":
            audit = bool(c.chain_every) and t % c.chain_every == 0
            rnd = split_forward_backward(self.model, fs, req, c.gamma, per_client=audit or record)
            gu, gemb, loss = rnd.user_grads, rnd.emb_grad, float(rnd.client_losses.mean())
            check_finite(f"round {t + 1}", loss, lower=f"lr (now {c.lr:g})")  # before the chain encodes it
            union_size = len(rnd.union)
            if audit:  # the real chain: its sum replaces the direct one
                total, _ = chain_sum(rnd.per_client, c, _torch_seed(c.seed, t, STREAM_CHAIN))
                K = len(req.clients)
                direct = np.concatenate([flat(gu).double().numpy(), gemb.double().numpy().reshape(-1),
                                         [loss]]) * K
                chain_diff = float(np.abs(total - direct).max())
                mean = torch.from_numpy(total / K)
                n_u = sum(g.numel() for g in gu)
                gu = unflat(mean[:n_u], gu)
                gemb = mean[n_u:-1].view_as(gemb).to(gemb.dtype)
                loss = float(mean[-1])
            gv = item_tower_grads(self.model, rnd, gemb)
            if record:
                self._record_stt(t, req, rnd)
        else:
            gu, gv, loss = self._fl_grads(req, record)
        lr = self.lr(t)
        self.opt_u.step(gu, lr)
        self.opt_v.step(gv, lr)
        check_finite(f"round {t + 1}", loss, list(self.model.parameters()), lower=f"lr (now {c.lr:g})")
        row = {"round": t, "loss": loss, "lr": lr, "sec": time.perf_counter() - t0, "union": union_size,
               "chain_max_diff": chain_diff}
        if (t + 1) % c.eval_every == 0 and t + 1 < c.rounds:
            row.update(self.evaluate(self.ev_periodic))
        self.rows.append(row)
        self.round += 1
        return row

    def _fl_grads(self, req: Requests, record: bool):
        c, fs, model = self.cfg, self.bundle.features, self.model
        K, (R, T) = len(req.clients), req.items.shape
        if c.framework == "fedmvmf":
            cl = torch.from_numpy(req.clients)
            u = model.user(fs.users.batch(req.clients), cl)
            flat_items = req.items.reshape(-1)
            I = model.item(fs.items.batch(flat_items), torch.from_numpy(flat_items)).view(R, T, -1)
            losses = _client_losses(u, I, req, 1.0, score="dot")
            loss = losses.mean()
            g = torch.autograd.grad(loss, self.shared_u + [model.user.ids.weight] + list(model.item.parameters()))
            gu, gpriv, gv = list(g[:1]), g[1], list(g[2:])
            with torch.no_grad():  # private user vectors: a local SGD step with the device's own gradient (K * mean)
                model.user.ids.weight[cl] -= c.private_lr * K * gpriv[cl]
            return gu, gv, loss.item()
        torch_losses = None
        u = model.user(fs.users.batch(req.clients))
        I = model.item(fs.items.batch(req.items.reshape(-1))).view(R, T, -1)  # every device embeds its own items
        torch_losses = _client_losses(u, I, req, c.gamma)
        loss = torch_losses.mean()
        params_u, params_v = list(model.user.parameters()), list(model.item.parameters())
        if record:
            self._record_fl(req, torch_losses, params_u, params_v)
        g = torch.autograd.grad(loss, params_u + params_v)
        return list(g[: len(params_u)]), list(g[len(params_u) :]), loss.item()

    def _record_fl(self, req, losses, params_u, params_v):
        parts = []
        for m in range(len(req.clients)):
            g = torch.autograd.grad(losses[m], params_u + params_v, retain_graph=True)
            grads = {"user": list(g[: len(params_u)]), "item": list(g[len(params_u) :]), "loss": float(losses[m].detach())}
            parts.append(training_parts("fl", m, req, self.model, grads, self.bundle.catalog))
        record_parts(self.ledger, self.round, parts)

    def _record_stt(self, t, req, rnd: SplitRound):
        n_u = sum(g.numel() for g in rnd.user_grads)
        d = rnd.emb_grad.shape[1]
        rng = round_rng(self.cfg.seed, t, STREAM_CHAIN)
        E = rnd.item_emb.detach().float().numpy()
        parts = []
        for m in range(len(req.clients)):
            row = rnd.per_client[m]
            grads = {"user": [torch.from_numpy(row[:n_u])], "emb": torch.from_numpy(row[n_u:-1]).view(-1, d),
                     "loss": float(row[-1]), "item_emb": E}
            parts.append(training_parts("sttfedrec", m, req, self.model, grads, self.bundle.catalog, self.codec,
                                        self.cfg.ring_bits, rng, rnd.union))
        record_parts(self.ledger, t, parts)

    def evaluate(self, ev: EvalSet | None = None) -> dict:
        score = "dot" if self.cfg.framework == "fedmvmf" else "cosine"
        out = evaluate_two_tower(self.model, self.bundle, ev or self.bundle.evalset, score)
        return {k: out[k] for k in ("auc", "p10", "ndcg10")}

    def history(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows).reindex(columns=list(HISTORY_COLUMNS))


# --- centralized -------------------------------------------------------------------------------------
def train_centralized(cfg: STTConfig, bundle: Bundle, progress: bool = False,
                      on_step: Callable[[dict], None] | None = None) -> tuple[TwoTower, list[dict]]:
    """Adam on all training clicks: each step takes `central_batch` requests (n_click clicks of one user + n_neg
    non-clicks), softmax over each request's T items as in the federated frameworks."""
    use_one_thread()
    cat, fs = bundle.catalog, bundle.features
    torch.manual_seed(_torch_seed(cfg.seed, SETUP, 0))
    model = TwoTower(cfg.tower, cfg.n_features, cfg.dropout, cfg.init_std)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.tau)
    ev_periodic = eval_subset(bundle, cfg)
    rows, step = [], 0
    n_click, n_neg = cfg.n_click, cfg.n_neg
    for epoch in range(cfg.epochs):
        rng = round_rng(cfg.seed, epoch, STREAM_REQUESTS)
        # every training click once per epoch, grouped n_click at a time within a user
        users, clicks = [], []
        for u in range(cat.n_users):
            t = rng.permutation(cat.user_train(u))
            g = len(t) // n_click
            if g:
                clicks.append(t[: g * n_click].reshape(g, n_click))
                users.append(np.full(g, u, np.int64))
        users, clicks = np.concatenate(users), np.concatenate(clicks)
        order = rng.permutation(len(users))
        users, clicks = users[order], clicks[order]
        n_steps = math.ceil(len(users) / cfg.central_batch)
        for s in range(n_steps):
            t0 = time.perf_counter()
            sl = slice(s * cfg.central_batch, (s + 1) * cfg.central_batch)
            bu, bc = users[sl], clicks[sl]
            R = len(bu)
            negs = bundle.sampler.sample(np.repeat(bu, n_neg), rng).reshape(R, n_neg)
            items = np.concatenate([bc, negs], 1)
            labels = np.concatenate([np.ones((R, n_click), np.float32), np.zeros((R, n_neg), np.float32)], 1)
            uu, uinv = np.unique(bu, return_inverse=True)
            req = Requests(uu, items, labels, uinv)
            for group in opt.param_groups:
                group["lr"] = cfg.lr * (1.0 - cfg.lr_decay) ** (step // cfg.decay_every)
            union, inv = np.unique(items, return_inverse=True)
            I = model.item(fs.items.batch(union))[torch.from_numpy(inv.reshape(-1))].view(R, cfg.request_size, -1)
            u = model.user(fs.users.batch(uu))
            rows_loss = request_loss(u[torch.from_numpy(uinv)], I, torch.from_numpy(labels), cfg.gamma)
            loss = rows_loss.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            check_finite(f"step {step + 1}", loss, list(model.parameters()), lower=f"lr (now {cfg.lr:g})")
            row = {"round": step, "loss": loss.item(), "lr": opt.param_groups[0]["lr"],
                   "sec": time.perf_counter() - t0, "union": len(union)}
            if (step + 1) % cfg.eval_every == 0:
                row.update({k: v for k, v in evaluate_two_tower(model, bundle, ev_periodic).items() if k != "users"})
            rows.append(row)
            if on_step:
                on_step(row)
            step += 1
            if cfg.max_steps and step >= cfg.max_steps:
                return model, rows
    return model, rows


# --- FCF through the core MF engine ------------------------------------------------------------------
def run_fcf(cfg: STTConfig, bundle: Bundle, progress: bool = False) -> tuple[dict, list[dict], pd.DataFrame]:
    """Federated MF (labcore's FedMF engine) on the same split; evaluated with the same candidates (dot product)."""
    from ..config import RunConfig
    from ..fed.engine import Simulation

    data = bundle.catalog.interaction_data()
    rc = RunConfig(method="fedmf", dataset="ml-1m" if cfg.dataset == "ml-1m" else "synthetic", dim=cfg.mf_dim,
                   clients_per_round=cfg.clients_per_round, rounds=cfg.rounds, lr=cfg.lr, local_epochs=2,
                   batch_size=256, num_negatives=4, eval_every=cfg.rounds, rank_every=0, seed=cfg.seed)
    sim = Simulation(rc, data)
    ev_periodic = eval_subset(bundle, cfg)
    rows = []
    users = np.arange(bundle.catalog.n_users)
    for t in range(cfg.rounds):
        t0 = time.perf_counter()
        r = sim.step()
        row = {"round": t, "loss": r["loss"], "lr": cfg.lr, "sec": time.perf_counter() - t0}
        if (t + 1) % cfg.eval_every == 0 and t + 1 < cfg.rounds:
            m = evaluate_embeddings(sim.P, sim.Q, ev_periodic, users, "dot")
            row.update({k: m[k] for k in ("auc", "p10", "ndcg10")})
        rows.append(row)
    final = evaluate_embeddings(sim.P, sim.Q, bundle.evalset, users, "dot")
    return final, rows, sim.ledger.frame()


# --- one entry point ---------------------------------------------------------------------------------
def run(cfg: STTConfig, *, use_cache: bool = True, progress: bool = False, bundle: Bundle | None = None,
        on_round: Callable[[dict], None] | None = None) -> STTResult:
    """Train and evaluate one configuration (cached on disk under $LABCORE_CACHE/sttfedrec/<key>/)."""
    from ..runner.store import read_stored, timing

    folder = cache_dir() / cfg.key()
    hit = read_stored(folder, STTResult.load) if use_cache else None
    if hit is not None:
        return hit
    use_one_thread()
    bundle = bundle or load_bundle(cfg)
    t0, c0 = time.perf_counter(), time.process_time()
    ledger = pd.DataFrame(columns=list(Ledger.COLUMNS) + ["link"])
    meta = {"notes": bundle.catalog.notes, "label": cfg.label(), "features": bundle.features.describe()}
    if cfg.framework == "centralized":
        model, rows = train_centralized(cfg, bundle, progress, on_round)
        final = evaluate_two_tower(model, bundle, bundle.evalset)
        meta["params_user"], meta["params_item"] = n_params(model.user), n_params(model.item)
    elif cfg.framework == "fcf":
        final, rows, ledger = run_fcf(cfg, bundle, progress)
    else:
        tr = FedTrainer(cfg, bundle)
        bar = _bar(cfg) if progress else None
        for _ in range(cfg.rounds):
            row = tr.step()
            if on_round:
                on_round(row)
            if bar is not None:
                bar.update(1)
                if "auc" in row:
                    bar.set_postfix(auc=f"{row['auc']:.4f}")
        if bar is not None:
            bar.close()
        final = tr.evaluate()
        rows = tr.rows
        ledger = tr.ledger.frame().join(pd.DataFrame([r.get("link") for r in tr.ledger.rows], columns=["link"]))
        meta["params_user"], meta["params_item"] = n_params(tr.model.user), n_params(tr.model.item)
    spent = timing(time.perf_counter() - t0, time.process_time() - c0, rounds=cfg.rounds)
    hist = pd.DataFrame(rows).reindex(columns=list(HISTORY_COLUMNS))
    final = {k: float(final[k]) for k in ("auc", "p10", "ndcg10")}
    res = STTResult(cfg, hist, final, ledger, meta, spent)
    if use_cache:
        res.save(folder)
    return res


def _bar(cfg: STTConfig):
    from tqdm.auto import tqdm

    return tqdm(total=cfg.rounds, desc=cfg.label(), leave=False)

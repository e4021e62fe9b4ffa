"""A RecFormer-style recommender on MiniLM: users and items are texts, the score is their cosine similarity.

    item i   = "[CLS] title_i [SEP]"                                 (title capped at `title_tokens` tokens)
    user u   = "[CLS] title_1 [SEP] title_2 [SEP] ... title_h [SEP]"  (the last `history` items, oldest first)
    e(text)  = mean of MiniLM's last-layer token states              (sentence-transformers' pooling)
    score    = cos(e(user), e(item)) / temperature
    loss     = cross-entropy of the next item over the whole catalogue (full softmax)

The item table is encoded once per round under the adapters being trained (no gradient flows through it;
`refresh_items`), the users' texts are encoded with gradients: one catalogue pass per round and client
state is the token budget that makes fine-tuning affordable on a CPU.

The model is a `MiniLM` (same parameter names, so `model.layer_of` and the LoRA helpers apply), split for
offloading by `TextDeviceHalf` / `TextServerHalf`: the device keeps the embeddings, layers 1..k, layer 6
and the pooling; the server layers k+1..5. The attention mask crosses with h_k (the server needs it).
"""
from __future__ import annotations

import hashlib
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import minilm
from .data import PAD_ITEM, SeqData
from .memory import param_bytes, saved_activation_bytes

CLS, SEP, PAD = 101, 102, 0  # MiniLM's (bert-base-uncased's) special token ids


def title_table(titles: list[str], title_tokens: int) -> np.ndarray:
    """(n_items, title_tokens) WordPiece ids of each title without [CLS]/[SEP], padded with 0."""
    tok = minilm.load_tokenizer()
    table = np.zeros((len(titles), title_tokens), np.int64)
    for i, enc in enumerate(tok.encode_batch(titles, add_special_tokens=False)):
        ids = enc.ids[:title_tokens] or [100]  # an empty title reads as [UNK]
        table[i, : len(ids)] = ids
    return table


class TextRec(minilm.MiniLM):
    def __init__(self, titles: np.ndarray, rank: int, alpha: float, temperature: float):
        super().__init__(rank, alpha)
        self.register_buffer("titles", torch.as_tensor(titles), persistent=False)
        self.temperature = temperature
        self.items = None  # (n_items, 384) unit item embeddings under the current adapters
        self._item_cache: dict[str, torch.Tensor] = {}

    @property
    def n_items(self) -> int:
        return len(self.titles)

    # --- texts -> token ids ----------------------------------------------------------------------------------
    def item_inputs(self, items: torch.Tensor | None = None):
        t = self.titles if items is None else self.titles[items]
        n = len(t)
        ids = torch.cat([torch.full((n, 1), CLS), t, torch.zeros((n, 1), dtype=torch.long)], 1)
        lengths = (t != PAD).sum(1)
        ids[torch.arange(n), lengths + 1] = SEP
        return ids, (ids != PAD).long()

    def user_inputs(self, x: torch.Tensor):
        """x (B, history) item ids, -1 = padding -> (ids, mask) of "[CLS] title [SEP] title [SEP] ..."."""
        rows = []
        for row in x.tolist():
            ids = [CLS]
            for i in row:
                if i != PAD_ITEM:
                    ids += [t for t in self.titles[i].tolist() if t != PAD] + [SEP]
            rows.append(ids)
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)
        return ids, (ids != PAD).long()

    # --- the item table ------------------------------------------------------------------------------------------
    def adapter_fingerprint(self) -> str:
        h = hashlib.sha256()
        for n, p in self.named_parameters():
            if "lora_" in n:
                h.update(p.detach().numpy().tobytes())
        return h.hexdigest()

    @torch.no_grad()
    def refresh_items(self, chunk: int = 512) -> torch.Tensor:
        """Encode the catalogue under the current adapters (cached by the adapters' values)."""
        key = self.adapter_fingerprint()
        if key not in self._item_cache:
            was = self.training
            self.eval()
            out = []
            for lo in range(0, self.n_items, chunk):
                ids, mask = self.item_inputs(torch.arange(lo, min(lo + chunk, self.n_items)))
                out.append(F.normalize(minilm.MiniLM.forward(self, ids, mask), dim=-1))
            self.train(was)
            if len(self._item_cache) >= 16:
                self._item_cache.pop(next(iter(self._item_cache)))
            self._item_cache[key] = torch.cat(out)
        self.items = self._item_cache[key]
        return self.items

    # --- scoring -----------------------------------------------------------------------------------------------------
    def head(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, n_items) scores: cos(pool(h), items) / temperature."""
        if self.items is None:
            self.refresh_items()
        return F.normalize(self.pool(h, mask), dim=-1) @ self.items.T / self.temperature

    @staticmethod
    def loss(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(scores, y)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None):
        ids, mask = self.user_inputs(x)
        h = self.hidden_states(ids, mask)[-1]
        scores = self.head(h, mask)
        return scores, (None if y is None else self.loss(scores, y))


def make_textrec(cfg, data: SeqData) -> TextRec:
    """The pre-trained MiniLM with fresh adapters (A drawn from cfg.data_seed, B = 0) over the data's titles."""
    weights = minilm.load_weights()
    torch.manual_seed(cfg.data_seed)
    model = TextRec(title_table(data.titles, cfg.title_tokens), cfg.lora_rank, cfg.lora_alpha, cfg.temperature)
    with torch.no_grad():
        for name, p in model.named_parameters():
            src = minilm.bert_name(name)
            if src is not None:
                p.copy_(weights[src])
    return model


# --- training samples ------------------------------------------------------------------------------------------------
def samples(data: SeqData, users: np.ndarray, history: int) -> tuple[np.ndarray, np.ndarray]:
    """Every next-item sample of the users' train sequences: x = the `history` items before (left-aligned,
    -1 = padding), y = the item."""
    xs, ys = [], []
    for u in users:
        s = data.train(u)
        for j in range(1, len(s)):
            h = s[max(0, j - history): j]
            x = np.full(history, PAD_ITEM, np.int64)
            x[: len(h)] = h
            xs.append(x)
            ys.append(s[j])
    if not xs:
        return np.zeros((0, history), np.int64), np.zeros(0, np.int64)
    return np.stack(xs), np.array(ys, np.int64)


def few_shot(data: SeqData, groups: list[np.ndarray], history: int, n: int, seed: int):
    """The few-shot training set (the paper fine-tunes on 1024 samples): n samples drawn once, without
    replacement, from all the clients' samples; each client keeps the ones of its users."""
    per = [samples(data, g, history) for g in groups]
    sizes = np.array([len(y) for _, y in per])
    rng = np.random.default_rng([seed, 13])
    pick = np.sort(rng.permutation(sizes.sum())[: min(n, sizes.sum())])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    out = []
    for c, (x, y) in enumerate(per):
        mine = pick[(pick >= starts[c]) & (pick < starts[c + 1])] - starts[c]
        out.append((torch.as_tensor(x[mine]), torch.as_tensor(y[mine])))
    return out


@torch.no_grad()
def user_scores(model: TextRec, x: np.ndarray, chunk: int = 256) -> torch.Tensor:
    """(n_users, n_items) scores of users given by their history rows x (no gradient)."""
    model.refresh_items()
    was = model.training
    model.eval()
    out = [model(torch.as_tensor(x[lo: lo + chunk]))[0] for lo in range(0, len(x), chunk)]
    model.train(was)
    return torch.cat(out)


# --- offloading ------------------------------------------------------------------------------------------------------
class TextDeviceHalf(nn.Module):
    """The device: embeddings, layers 1..k, layer 6, pooling and scoring."""

    def __init__(self, model: TextRec, k: int):
        super().__init__()
        n = len(model.blocks)
        self.k, self.n = k, n
        self.model_ref = [model]
        self.word, self.position, self.token_type, self.ln_embed = (model.word, model.position, model.token_type,
                                                                    model.ln_embed)
        self.lower = nn.ModuleList(model.blocks[:k])
        self.top = model.blocks[n - 1]

    def layers(self) -> list[int]:
        return list(range(1, self.k + 1)) + [self.n]

    def bottom(self, x):
        model = self.model_ref[0]
        ids, mask = model.user_inputs(x)
        h, bias = model.embed(ids), model.mask_bias(mask)
        for b in self.lower:
            h = b(h, bias)
        return h, mask

    def finish(self, h, mask):
        return self.model_ref[0].head(self.top(h, self.model_ref[0].mask_bias(mask)), mask)


class TextServerHalf(nn.Module):
    """The server: layers k+1..5."""

    def __init__(self, model: TextRec, k: int):
        super().__init__()
        n = len(model.blocks)
        self.k, self.n = k, n
        self.middle = nn.ModuleList(model.blocks[k: n - 1])

    def layers(self) -> list[int]:
        return list(range(self.k + 1, self.n))

    def forward(self, h, mask):
        bias = minilm.MiniLM.mask_bias(mask)
        for b in self.middle:
            h = b(h, bias)
        return h


def text_split(model: TextRec, k: int):
    n = len(model.blocks)
    if not 1 <= k <= n - 2:
        raise ValueError(f"client_layers={k} is invalid: allowed range is 1..{n - 2} for backbone=minilm "
                         f"(the client keeps layers 1..k and {n}, the server k+1..{n - 1})")
    return TextDeviceHalf(model, k), TextServerHalf(model, k)


def text_split_step(device: TextDeviceHalf, server: TextServerHalf, x, y, channel) -> torch.Tensor:
    """One forward and backward pass across the split (the same order as offload.split_step)."""
    tic = time.perf_counter
    t0 = tic()
    model = device.model_ref[0]
    if model.items is None:
        model.refresh_items()
    h_k, mask = device.bottom(x)
    h_k_srv = channel.send("up", "hidden_k", h_k).requires_grad_(True)
    mask_srv = channel.send("up", "mask", mask.float()).long()
    t1 = tic()
    h_n1 = server(h_k_srv, mask_srv)
    t2 = tic()
    h_n1_dev = channel.send("down", "hidden_N-1", h_n1).requires_grad_(True)
    loss = model.loss(device.finish(h_n1_dev, mask), y)
    loss.backward()
    g_n1 = channel.send("up", "grad_N-1", h_n1_dev.grad)
    t3 = tic()
    h_n1.backward(g_n1)
    t4 = tic()
    g_k = channel.send("down", "grad_k", h_k_srv.grad)
    h_k.backward(g_k)
    t5 = tic()
    channel.seconds["device"] += (t1 - t0) + (t3 - t2) + (t5 - t4)
    channel.seconds["server"] += (t2 - t1) + (t4 - t3)
    return loss.detach()


def text_device_memory(model: TextRec, k: int | None, x, y) -> dict:
    """Bytes the device holds for one training batch: its parameters and the tensors autograd saves on it.
    k=None: no offloading (the device runs every layer)."""

    model.zero_grad(set_to_none=True)
    if model.items is None:
        model.refresh_items()
    act = [0]
    if k is None:
        with saved_activation_bytes(act):
            _, loss = model(x, y)
        loss.backward()
        return {"param_bytes": param_bytes(model), "activation_bytes": act[0]}
    device, server = text_split(model, k)
    with saved_activation_bytes(act):
        h_k, mask = device.bottom(x)
    h_srv = h_k.detach().requires_grad_(True)
    h_n1 = server(h_srv, mask)
    h_dev = h_n1.detach().requires_grad_(True)
    with saved_activation_bytes(act):
        loss = model.loss(device.finish(h_dev, mask), y)
    loss.backward()
    h_n1.backward(h_dev.grad)
    h_k.backward(h_srv.grad)
    return {"param_bytes": param_bytes(device), "activation_bytes": act[0]}

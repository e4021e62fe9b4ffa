"""The recommender: a small decoder-only transformer that reads a user's items as text, with LoRA adapters.

One position per item. An item's input embedding is the mean of its title's token embeddings (BPE
tokens learned on the titles, or one id token), so the model "reads titles" as BIGRec and RecFormer do,
at laptop size. Position j's output is scored against every item's embedding (tied, full ranking) to
predict item j + 1. Causal attention, pre-LayerNorm blocks as in nanoGPT.

LoRA (Hu et al. 2021) sits on the attention projections (the fused q/k/v projection and the output
projection) of every block: W x + (alpha / r) B A x with A random, B zero, so a fresh adapter changes
nothing. Fine-tuning trains only the adapters; the pre-trained ("foundation") weights stay frozen.

The layer functions are separate (`embed`, `run_blocks`, `head`) so `offload.py` can run blocks 1..k and
N on the device and k+1..N-1 on the server without touching this file.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class GPTConfig:
    n_items: int
    item_tokens: torch.Tensor  # (n_items, max_tokens) token ids, padded with `pad`
    pad: int  # padding token id; the vocabulary has pad + 1 rows
    history: int = 16  # positions (items read)
    n_layer: int = 8
    n_embd: int = 32
    n_head: int = 2
    lora_rank: int = 4
    lora_alpha: float = 8.0


class LoRALinear(nn.Module):
    """A linear layer with a low-rank adapter: y = W x + b + (alpha / r) B (A x)."""

    def __init__(self, d_in: int, d_out: int, rank: int, alpha: float):
        super().__init__()
        self.base = nn.Linear(d_in, d_out)
        self.lora_A = nn.Parameter(torch.empty(rank, d_in))
        self.lora_B = nn.Parameter(torch.zeros(d_out, rank))  # zero: a fresh adapter is the identity update
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scale


class CausalSelfAttention(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.n_head = c.n_head
        self.c_attn = LoRALinear(c.n_embd, 3 * c.n_embd, c.lora_rank, c.lora_alpha)
        self.c_proj = LoRALinear(c.n_embd, c.n_embd, c.lora_rank, c.lora_alpha)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd)
        self.mlp = nn.Sequential(nn.Linear(c.n_embd, 4 * c.n_embd), nn.GELU(), nn.Linear(4 * c.n_embd, c.n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPTRec(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.config = c
        self.register_buffer("item_tokens", c.item_tokens.clone(), persistent=False)
        self.wte = nn.Embedding(c.pad + 1, c.n_embd, padding_idx=c.pad)  # token embeddings (pad row stays 0)
        self.wpe = nn.Embedding(c.history, c.n_embd)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd)
        self.item_bias = nn.Parameter(torch.zeros(c.n_items))  # popularity, learned in pre-training
        for name, p in self.named_parameters():  # nanoGPT's init, LoRA A keeps its own, B stays zero
            if "lora_" in name:
                continue
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        with torch.no_grad():
            self.wte.weight[c.pad].zero_()

    # --- the pieces (the device runs some, the server the others) ----------------------------------------
    def item_embeddings(self) -> torch.Tensor:
        """(n_items, d): the mean of each item's token embeddings (the item corpus of Algorithm 2)."""
        tok = self.item_tokens
        mask = (tok != self.config.pad).unsqueeze(-1).to(self.wte.weight.dtype)
        return (self.wte(tok) * mask).sum(1) / mask.sum(1).clamp(min=1)

    def embed(self, x: torch.Tensor, items: torch.Tensor | None = None) -> torch.Tensor:
        """Input embeddings h_0 of item ids x (B, T), -1 = padding (a zero vector)."""
        items = self.item_embeddings() if items is None else items
        e = F.pad(items, (0, 0, 0, 1))[x.clamp(min=-1)]  # index -1 is the appended zero row
        return e + self.wpe(torch.arange(x.shape[1], device=x.device))

    def run_blocks(self, h: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
        """Blocks lo+1..hi (1-based layer numbers), i.e. self.blocks[lo:hi]."""
        for block in self.blocks[lo:hi]:
            h = block(h)
        return h

    def head(self, h: torch.Tensor, items: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of every item at every position: ln_f(h) . e(i) + bias(i)."""
        items = self.item_embeddings() if items is None else items
        return self.ln_f(h) @ items.T + self.item_bias

    @staticmethod
    def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean next-item cross-entropy over the positions that have a target (y >= 0)."""
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None):
        items = self.item_embeddings()
        h = self.run_blocks(self.embed(x, items), 0, self.config.n_layer)
        logits = self.head(h, items)
        return logits, (None if y is None else self.loss(logits, y))

    def hidden_states(self, x: torch.Tensor) -> list[torch.Tensor]:
        """[h_0 (input embeddings), h_1, ..., h_N]: what each layer outputs (for the probes)."""
        out = [self.embed(x)]
        for block in self.blocks:
            out.append(block(out[-1]))
        return out


# --- LoRA parameters: the client-specific part R_c ---------------------------------------------------------
def layer_of(name: str) -> int | None:
    """1-based layer number of a parameter name like 'blocks.3.attn.c_attn.lora_A', else None."""
    parts = name.split(".")
    return int(parts[1]) + 1 if parts[0] == "blocks" else None


def lora_names(model: nn.Module, layers=None) -> list[str]:
    keep = None if layers is None else set(layers)
    return [n for n, _ in model.named_parameters() if "lora_" in n and (keep is None or layer_of(n) in keep)]


def get_lora(model: nn.Module, layers=None) -> dict[str, torch.Tensor]:
    return get_state(model, lora_names(model, layers))


def tuned_names(model: nn.Module, tune: str = "lora") -> list[str]:
    """The client-specific parameters R_c: the LoRA adapters, or (tune="full") every base weight."""
    if tune == "lora":
        return lora_names(model)
    if tune == "full":
        return [n for n, _ in model.named_parameters() if "lora_" not in n]
    raise ValueError(f"tune={tune!r} is invalid: allowed values are lora, full")


def get_state(model: nn.Module, names: list[str]) -> dict[str, torch.Tensor]:
    params = dict(model.named_parameters())
    return {n: params[n].detach().clone() for n in names}


def set_lora(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    with torch.no_grad():
        for n, v in state.items():
            params[n].copy_(v)


def freeze_base(model: nn.Module, tune: str = "lora") -> list[nn.Parameter]:
    """Only the client-specific parameters train (the adapters by default); returns them."""
    keep = set(tuned_names(model, tune))
    out = []
    for n, p in model.named_parameters():
        p.requires_grad_(n in keep)
        if n in keep:
            out.append(p)
    return out


def make_model(cfg, data, seed: int = 0) -> GPTRec:
    """The GPTRec of a FellrecConfig over a SeqData, initialised from `seed`."""
    torch.manual_seed(seed)
    c = GPTConfig(n_items=data.n_items, item_tokens=torch.as_tensor(data.item_tokens), pad=data.pad,
                  history=cfg.history, n_layer=cfg.n_layer, n_embd=cfg.n_embd, n_head=cfg.n_head,
                  lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha)
    return GPTRec(c)

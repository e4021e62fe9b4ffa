"""Table 3 and Fig. 4: what the device stores, computes and sends for each k, measured, beside the formulas.

    storage  O(k + 1)          the device's parameters: embeddings, head, layers 1..k and N
    upload   (k + 1) b + 2 c   b = one layer's LoRA message, c = one round's hidden states sent one way
                               (the device uploads h_k and dL/dh_{N-1}, each c bytes)
    FedAvg   N b, O(N)         every layer on the device, every layer's LoRA uploaded

Every number here is measured: parameter bytes from the tensors the device holds, activation bytes from
what autograd saves on the device, bytes from serialized messages, seconds from the clock (loaded machine).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from .config import FellrecConfig
from .data import windows
from .federated import batches, dataset, foundation, lora_bytes
from .model import freeze_base, get_lora
from .offload import Channel, device_memory, full_step, split, split_step
from .recformer import TextRec, samples, text_device_memory


def cost_table(cfg: FellrecConfig, ks=None, max_samples: int = 256) -> pd.DataFrame:
    """One row per k (and one for no offloading, k = N): device memory, bytes per round, seconds."""
    data = dataset(cfg)
    model = foundation(cfg, data)
    params = freeze_base(model)
    n = cfg.depth()
    ks = list(range(1, n - 1)) if ks is None else list(ks)
    text = isinstance(model, TextRec)
    pairs = samples(data, data.client_users, cfg.history) if text else windows(data, data.client_users, cfg.history)
    x, y = (torch.as_tensor(a[:max_samples]) for a in pairs)
    memory = text_device_memory if text else device_memory
    lora = get_lora(model)
    b = lora_bytes(lora, [1])  # one layer's LoRA message (all layers have the same shapes)
    rows = []
    for k in ks + [None]:
        layers = list(range(1, k + 1)) + [n] if k is not None else list(range(1, n + 1))
        mem = memory(model, k, x[: cfg.batch_size], y[: cfg.batch_size])
        ch = Channel()
        gen = torch.Generator().manual_seed(0)
        t0 = time.perf_counter()
        for bt in batches(len(x), cfg.batch_size, gen):  # one local epoch over max_samples windows
            model.zero_grad(set_to_none=True)
            if k is None:
                full_step(model, x[bt], y[bt])
            else:
                split_step(*split(model, k), x[bt], y[bt], ch)
        wall = time.perf_counter() - t0
        up_lora = lora_bytes(lora, layers)
        c = ch.bytes.get(("up", "hidden_k"), 0)
        m = ch.bytes.get(("up", "mask"), 0)  # MiniLM: the attention mask travels with h_k
        rows.append({
            "k": n if k is None else k, "offload": k is not None,
            "device_param_MiB": mem["param_bytes"] / 2**20,
            "device_activation_MiB": mem["activation_bytes"] / 2**20,
            "device_memory_MiB": (mem["param_bytes"] + mem["activation_bytes"]) / 2**20,
            "upload_bytes": up_lora + ch.total("up"), "download_bytes": up_lora + ch.total("down"),
            "lora_up_bytes": up_lora, "embedding_up_bytes": ch.total("up"),
            "table3_upload_bytes": (len(layers)) * b + 2 * c + m if k is not None else n * b,  # (k+1) b + 2c; FedAvg: N b
            "b_bytes": b, "c_bytes": c,
            "device_seconds": ch.seconds["device"] if k is not None else wall,
            "server_seconds": ch.seconds["server"] if k is not None else 0.0,
        })
    del params
    return pd.DataFrame(rows)

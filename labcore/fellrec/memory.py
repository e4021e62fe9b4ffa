"""What a device holds while it trains: parameter bytes and the activations autograd saves (both backbones)."""
from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn as nn


def param_bytes(module: nn.Module) -> int:
    seen, total = set(), 0
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel() * p.element_size()
    return total


@contextmanager
def saved_activation_bytes(counter: list):
    """Adds to counter[0] the bytes of every tensor autograd keeps for the backward pass (activations)."""
    def pack(t):
        counter[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield

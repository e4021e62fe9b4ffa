"""FELLRec's flexible storage (Algorithms 1 and 2): the device keeps layers 1..k and N, the server k+1..N-1.

`split(model, k)` returns two halves that hold disjoint parameters. One training step (`split_step`):

    device: h_k = layers 1..k (embed(x))            -> sends h_k               (up)
    server: h_{N-1} = layers k+1..N-1 (h_k)         -> sends h_{N-1}           (down)
    device: loss = head(layer N (h_{N-1})); backward -> sends dL/dh_{N-1}       (up)
    server: backward through k+1..N-1               -> sends dL/dh_k           (down)
    device: backward through 1..k

Every tensor that crosses is serialized as a `labcore.net.message.Part` and read back from its bytes, so
the byte counts are measured and nothing but those bytes connects the two halves. The math is that of the
unsplit model (tests check loss and gradients agree within 1e-6 for every k).
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn

from ..net.message import array_part, deserialize_parts, serialize_part
from .memory import param_bytes, saved_activation_bytes
from .model import GPTRec
from .recformer import TextDeviceHalf, TextRec, text_split, text_split_step


class DeviceHalf(nn.Module):
    """What the device stores: embeddings, blocks 1..k, block N, the final norm and the scoring head."""

    def __init__(self, model: GPTRec, k: int):
        super().__init__()
        n = model.config.n_layer
        self.k, self.n = k, n
        self.model_ref = [model]  # a list: not registered as a submodule (its server layers are not ours)
        self.wte, self.wpe, self.ln_f = model.wte, model.wpe, model.ln_f
        self.item_bias = model.item_bias
        self.lower = nn.ModuleList(model.blocks[:k])
        self.top = model.blocks[n - 1]

    def layers(self) -> list[int]:
        return list(range(1, self.k + 1)) + [self.n]

    def bottom(self, x, items):
        h = self.model_ref[0].embed(x, items)
        for b in self.lower:
            h = b(h)
        return h

    def finish(self, h, items):
        return self.model_ref[0].head(self.top(h), items)


class ServerHalf(nn.Module):
    """What the server stores: blocks k+1..N-1."""

    def __init__(self, model: GPTRec, k: int):
        super().__init__()
        n = model.config.n_layer
        self.k, self.n = k, n
        self.middle = nn.ModuleList(model.blocks[k: n - 1])

    def layers(self) -> list[int]:
        return list(range(self.k + 1, self.n))

    def forward(self, h):
        for b in self.middle:
            h = b(h)
        return h


def split(model: GPTRec, k: int) -> tuple[DeviceHalf, ServerHalf]:
    if isinstance(model, TextRec):
        return text_split(model, k)
    n = model.config.n_layer
    if not 1 <= k <= n - 2:
        raise ValueError(f"client_layers={k} is invalid: allowed range is 1..{n - 2} (k + 1 < N = {n})")
    return DeviceHalf(model, k), ServerHalf(model, k)


class Channel:
    """The link between device and server: serializes each tensor, counts its bytes, returns a copy."""

    def __init__(self):
        self.bytes = defaultdict(int)  # (direction, part) -> bytes
        self.messages = defaultdict(int)
        self.seconds = defaultdict(float)  # "device" / "server": compute time measured by split_step

    def send(self, direction: str, name: str, t: torch.Tensor) -> torch.Tensor:
        buf = serialize_part(array_part(name, "values", t.detach().numpy().astype(np.float32, copy=False)))
        self.bytes[(direction, name)] += len(buf)
        self.messages[(direction, name)] += 1
        received = deserialize_parts(buf)[0].payload
        return torch.from_numpy(np.array(received, copy=True)).reshape(t.shape)

    def total(self, direction: str | None = None) -> int:
        return int(sum(v for (d, _), v in self.bytes.items() if direction in (None, d)))


def split_step(device: DeviceHalf, server: ServerHalf, x, y, channel: Channel) -> torch.Tensor:
    """One forward and backward pass across the split; gradients land in the parameters' .grad.
    `channel.seconds` collects the device's and the server's compute time."""
    if isinstance(device, TextDeviceHalf):
        return text_split_step(device, server, x, y, channel)
    tic = time.perf_counter
    t0 = tic()
    model = device.model_ref[0]
    items_graph = model.item_embeddings()
    # a leaf for the item table: both device passes use it; its gradient flows back once, at the end
    items = items_graph.detach().requires_grad_(items_graph.requires_grad)
    # device: layers 1..k
    h_k = device.bottom(x, items)
    # server: layers k+1..N-1 on what it received
    h_k_srv = channel.send("up", "hidden_k", h_k).requires_grad_(True)
    t1 = tic()
    h_n1 = server(h_k_srv)
    t2 = tic()
    # device: layer N, head and loss
    h_n1_dev = channel.send("down", "hidden_N-1", h_n1).requires_grad_(True)
    loss = model.loss(device.finish(h_n1_dev, items), y)
    loss.backward()
    # backward across the split
    g_n1 = channel.send("up", "grad_N-1", h_n1_dev.grad)
    t3 = tic()
    h_n1.backward(g_n1)
    t4 = tic()
    g_k = channel.send("down", "grad_k", h_k_srv.grad)
    h_k.backward(g_k)
    if items.grad is not None:
        items_graph.backward(items.grad)
    t5 = tic()
    channel.seconds["device"] += (t1 - t0) + (t3 - t2) + (t5 - t4)
    channel.seconds["server"] += (t2 - t1) + (t4 - t3)
    return loss.detach()


def full_step(model: GPTRec, x, y) -> torch.Tensor:
    """The unsplit pass (what a device holding every layer runs)."""
    _, loss = model(x, y)
    loss.backward()
    return loss.detach()


# --- device memory --------------------------------------------------------------------------------------------
def device_memory(model: GPTRec, k: int | None, x, y) -> dict:
    """Measured bytes the device holds for one training batch: its parameters and its saved activations.

    k=None: no offloading (the device runs every layer)."""
    model.zero_grad(set_to_none=True)
    if k is None:
        act = [0]
        with saved_activation_bytes(act):
            _, loss = model(x, y)
        loss.backward()
        return {"param_bytes": param_bytes(model), "activation_bytes": act[0]}
    device, server = split(model, k)
    act = [0]
    with saved_activation_bytes(act):
        items_graph = model.item_embeddings()
    items = items_graph.detach().requires_grad_(items_graph.requires_grad)
    with saved_activation_bytes(act):  # device part 1
        h_k = device.bottom(x, items)
    h_srv = h_k.detach().requires_grad_(True)
    h_n1 = server(h_srv)
    h_dev = h_n1.detach().requires_grad_(True)
    with saved_activation_bytes(act):  # device part 2
        loss = model.loss(device.finish(h_dev, items), y)
    loss.backward()
    h_n1.backward(h_dev.grad)
    h_k.backward(h_srv.grad)
    if items.grad is not None:
        items_graph.backward(items.grad)
    return {"param_bytes": param_bytes(device), "activation_bytes": act[0]}

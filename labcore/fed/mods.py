"""Transforms applied to a message between a sender and its receiver (Flower's "mods").

Order on the uplink: method encodes -> quantize -> (encrypt) -> ledger -> server.
Each mod returns what is sent (and measured) and what the receiver decodes.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

from ..methods.base import FLOAT_KINDS, RowBlock, Wire
from ..methods.quantize import (KEEP_QUANTIZED_BYTES, QUANTIZED_ROW_BUFFERS, dequantize, pack_codes,
                                packed_bytes, quantize_blocks, quantize_rows)
from ..net.channel import exceeds, transmit_levels, transmit_packed
from .updates import RowUpdate
from .workspace import Workspace


RECEIVED_TABLE = "received_table"  # the workspace buffer of a noisy link's received table (`_received_table`)


def quantize_wires(wires: list[Wire], bits: int, bucket: int, gen: torch.Generator,
                   link_budget: int = 0, workspace: Workspace | None = None) -> tuple[list[Wire], list[Wire]]:
    """QSGD on every float part: send packed codes + per-bucket norms; the receiver gets the dequantized values.

    A payload held by the rows the clients touched (FedMF, CoLR, SCoLR) is drawn for and coded by those rows, and
    received by them too unless the link is noisy (it can move a zero off the rows): `quantize_by_rows`.

    `link_budget` (log2 K, 0 = no limit): the channel of `labcore.net.channel` (Eq. 6 of the wireless topic)
    carries levels beyond K with noise, so the receiver decodes what the channel delivered; what is sent and
    counted is unchanged.

    workspace: a part quantized by rows is made in its buffers (`quantize_rows`), valid until the next call with it.
    """
    if not bits:
        return wires, wires
    sent, received = [], []
    for w in wires:
        if w.kind not in FLOAT_KINDS:
            sent.append(w)
            received.append(w)
            continue
        by_rows = w.rows is not None
        packed, norms, arrived = (quantize_by_rows(w, bits, bucket, gen, workspace, link_budget) if by_rows
                                  else quantize_whole(w, bits, bucket, gen, link_budget))
        if by_rows:
            workspace = None  # its buffers now hold this part's message: a second part makes its own
        received.append(arrived)
        n = w.lengths if w.lengths is not None else np.full(w.shape[0], w.shape[1])
        sent.append(Wire(w.name + ".codes", "codes", packed, packed_bytes(n, bits)))
        sent.append(Wire(w.name + ".scales", "scales", norms, -(-n // bucket) if w.lengths is not None else None))
    return sent, received


def quantize_by_rows(w: Wire, bits: int, bucket: int, gen: torch.Generator, workspace: Workspace | None = None,
                     link_budget: int = 0) -> tuple[torch.Tensor, torch.Tensor, Wire]:
    """A part held by rows: one draw per held value (`quantize_rows`); received by the same rows, or over a noisy link
    as the (M, n) tables the channel delivers from the packed codes (`channel.transmit_packed`). Returns the packed
    codes, the norms and the received part. workspace: `quantize_rows`' buffers and the received table
    (`_received_table`), valid until the next call with it."""
    u = w.rows.update
    packed, norms, values = quantize_rows(u.values, u.indptr, np.ascontiguousarray(u.item.numpy()), u.n_items,
                                          w.rows.layout == "factor", bits, bucket, gen, workspace)
    if exceeds(2**bits - 1, link_budget):
        table = transmit_packed(packed, norms.numpy(), w.shape[1], bits, bucket, link_budget, gen,
                                out=_received_table(workspace, w.shape))
        return torch.from_numpy(packed), norms, w.with_data(table, exact_zeros=False)
    arrived = Wire(w.name, w.kind, None, w.lengths, w.bits_per_value,
                   rows=RowBlock(u.with_values(values), w.rows.layout))
    return torch.from_numpy(packed), norms, arrived


def _received_table(workspace: Workspace | None, shape: tuple[int, int]) -> np.ndarray | None:
    """The buffer a noisy link's received (M, n) table is made in, kept from round to round while it and the
    quantizer's kept buffers come to at most `KEEP_QUANTIZED_BYTES` (FedMF d=64, the paper's 60 clients: 57 MB of
    fresh pages a round otherwise); None (fresh) above it, as keeping it would raise the run's memory peak."""
    if workspace is None:
        return None
    kept = workspace.nbytes(*QUANTIZED_ROW_BUFFERS)  # 0 when quantize_rows made its arrays afresh (too large)
    if not kept or kept + shape[0] * shape[1] * 4 > KEEP_QUANTIZED_BYTES:
        workspace.release(RECEIVED_TABLE)
        return None
    return workspace.array(RECEIVED_TABLE, shape, np.float32)


def quantize_whole(w: Wire, bits: int, bucket: int, gen: torch.Generator,
                   link_budget: int = 0) -> tuple[torch.Tensor, torch.Tensor, Wire]:
    """Any part: one draw per value of the (M, n) payload (one held by rows is read a block of clients at a time, no
    whole (M, n) float32 copy), through the link; received as the (M, n) dequantized table."""
    levels, signs, norms = quantize_blocks(w.fill, w.shape, bits, bucket, gen)
    arrived = transmit_levels(levels, 2 ** bits - 1, link_budget, gen) if link_budget else levels
    received = w.with_data(dequantize(arrived, signs, norms, bits, bucket, w.shape), exact_zeros=arrived is levels)
    return torch.from_numpy(pack_codes(levels.numpy(), signs.numpy(), bits)), norms, received


@njit(cache=True)
def _set_bits(packed, indptr, item):
    """packed[c, i // 8] |= 1 << (i % 8) for every item i of client c's rows indptr[c]:indptr[c + 1] (np.bitwise_or.at,
    in one compiled pass, without making the rows' client column)."""
    for c in range(indptr.shape[0] - 1):
        for j in range(indptr[c], indptr[c + 1]):
            packed[c, item[j] >> 3] |= np.uint8(1 << (item[j] & 7))


def item_mask_wire(touched: torch.Tensor | RowUpdate) -> Wire:
    """Which items a client trained on, as a bitmap: per-item normalisation needs it (the CoLR
    reference sends it too, encrypted). 1 bit per item. `touched`: (M, N) bool, or the touched rows."""
    if isinstance(touched, RowUpdate):  # set the bits straight from the rows, without an (M, N) bool table
        if touched.item_bits is not None:  # the trainer's rows bring their bitmap
            return Wire("item_mask", "meta", torch.from_numpy(np.ascontiguousarray(touched.item_bits)))
        M, N = touched.n_clients, touched.n_items
        packed = np.zeros((M, -(-N // 8)), dtype=np.uint8)
        _set_bits(packed, touched.indptr.astype(np.int64), touched.item.numpy())
        return Wire("item_mask", "meta", torch.from_numpy(packed))
    packed = np.packbits(touched.numpy(), axis=1, bitorder="little")
    return Wire("item_mask", "meta", torch.from_numpy(packed))


def wire_values(wires: list[Wire]) -> int:
    """How many scalars the server aggregates (for the calibrated server-time model)."""
    return int(sum(math.prod(w.shape) for w in wires if w.kind in FLOAT_KINDS))

"""The QSGD quantizer written with whole-array torch and numpy's bit planes: `quantize`, `dequantize` and
`pack_codes` in their plainest form, the oracle of the compiled passes (`methods.quantize_kernels`: same levels,
values and bytes, tested) and the baseline of `benchmarks/quantizer.py`. Each pass makes a full-size
temporary; the packer one uint64 per bit."""
from __future__ import annotations

import numpy as np
import torch


def quantize_torch(x: torch.Tensor, bits: int, bucket: int, gen: torch.Generator):
    s = float(2**bits - 1)
    flat = x.to(torch.float64).reshape(x.shape[0], -1)
    n = flat.shape[1]
    xb = torch.nn.functional.pad(flat, (0, (-n) % bucket)).reshape(x.shape[0], -1, bucket)
    norms = xb.norm(dim=-1, keepdim=True)
    ratio = (xb.abs() / torch.where(norms > 0, norms, torch.ones_like(norms))) * s
    low = ratio.floor()
    up = torch.rand(ratio.shape, generator=gen, dtype=torch.float64) < (ratio - low)
    levels = (low + up.to(torch.float64)).clamp(max=s).to(torch.int64)
    M = x.shape[0]
    return levels.reshape(M, -1)[:, :n], (xb < 0).reshape(M, -1)[:, :n], norms.squeeze(-1).to(torch.float32)


def dequantize_torch(levels: torch.Tensor, signs: torch.Tensor, norms: torch.Tensor, bits: int, bucket: int,
                     shape: tuple[int, ...]) -> torch.Tensor:
    M, n = levels.shape
    vals = levels.to(torch.float64) / float(2**bits - 1) * torch.where(signs, -1.0, 1.0).to(torch.float64)
    vals = torch.nn.functional.pad(vals, (0, (-n) % bucket)).reshape(M, -1, bucket) * norms.to(torch.float64)[..., None]
    return vals.reshape(M, -1)[:, :n].to(torch.float32).reshape(shape)


def pack_planes(codes: np.ndarray, width: int) -> np.ndarray:
    """(M, n) codes < 2^width -> each row's bit planes packed by numpy, least significant bit first."""
    planes = ((codes.astype(np.uint64)[..., None] >> np.arange(width, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    return np.packbits(planes.reshape(codes.shape[0], -1), axis=1, bitorder="little")


def pack_codes_planes(levels: np.ndarray, signs: np.ndarray, bits: int) -> np.ndarray:
    return pack_planes((levels.astype(np.uint64) << np.uint64(1)) | signs.astype(np.uint64), bits + 1)

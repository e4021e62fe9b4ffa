"""Unbiased stochastic quantization (QSGD; the wireless-FL report's Eq. 4 and 5).

Each bucket of `bucket` values x is sent as its L2 norm (one float32 scale), a
sign bit per value and a level l in 0..s per value with s = 2**bits - 1:
Q(x_i) = ||x|| sgn(x_i) xi_i, xi_i = l/s or (l+1)/s with probabilities that
make E[Q(x)] = x. Codes are packed to (bits + 1) bits per value for real, so
the payload ledger measures the packed bytes.

The same operator with k levels per unit norm over a whole vector (the report's
form, used by the wireless topic): `quantize_levels` / `dequantize_levels`, its
variance factor `qsgd_omega(d, k) = d / (4 k^2)` and its size by Eq. (5),
`eq5_bits(d, k) = 32 + 2 d + d log2(k)`. Both forms round r >= 0 to floor(r) + [u < r - floor(r)], u one
torch draw per value: `stochastic_round`, and for the bucketed form its compiled twin `qsgd_levels` (the
bucketed form's passes are compiled in `quantize_kernels`, tested equal to their torch form). A payload that is
zero off the rows a client holds (FedMF's and CoLR's uplinks) is quantized by those rows: `quantize_rows`.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from ..fed.workspace import Workspace, take
from .quantize_kernels import pack_fixed, qsgd_levels, qsgd_rows, qsgd_rows_norms, qsgd_values, unpack_fixed


def stochastic_round(ratio: torch.Tensor, gen: torch.Generator, in_place: bool = False) -> torch.Tensor:
    """floor(r) + Bernoulli(r - floor(r)) for float64 r >= 0: Eq. (5)'s xi times k, unbiased. `in_place`: `ratio`
    may be overwritten (the same draws and values, with fewer float64 temporaries of r's size: a noisy link's 89 M
    values in a full-participation Top-K round are 0.7 GB each)."""
    low = ratio.floor()
    frac = ratio.sub_(low) if in_place else ratio - low
    up = torch.rand(ratio.shape, generator=gen, dtype=torch.float64) < frac
    del frac
    return low.add_(up.to(torch.float64))


# quantize works through the clients in blocks of about this many values, in buffers it reuses: float64 copies of a
# whole payload (89 M values in a full-participation Top-K round on ML-1M) cost more in fresh pages than in work.
# The full-size outputs are torch's allocations, which ask for no huge pages (why that matters: engine.no_huge_pages,
# which the engine's processes set anyway; the quantizer is also called outside them).
BLOCK_VALUES = 2**20

# `quantize_rows` makes its codes, received values and draws in a caller's workspace when they come to at most this
# many bytes: fresh pages cost a quarter of a quantized FedMF round of the paper's 60 clients (37 MB a round); above it
# (full participation: GBs) they are made afresh, as keeping them through the next round's training would raise the
# run's memory peak.
KEEP_QUANTIZED_BYTES = 256 * 2**20
QUANTIZED_ROW_BUFFERS = ("quantized_codes", "quantized_values", "quantized_draws")


def quantize(x: torch.Tensor, bits: int, bucket: int,
             gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (M, ...) -> levels (M, n) int64, signs (M, n) bool, norms (M, n_buckets) float32."""
    flat = x.detach().reshape(x.shape[0], -1)
    return quantize_blocks(lambda a, b, out: out.copy_(flat[a:b]), tuple(flat.shape), bits, bucket, gen)


def quantize_blocks(fill: Callable[[int, int, torch.Tensor], object], shape: tuple[int, int], bits: int,
                    bucket: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`quantize` of an (M, n) payload read a block of clients at a time: `fill(a, b, out)` writes rows a..b-1
    into the float64 (b - a, n) `out`. A payload held by its touched rows is written from them block by block,
    never laid out as a whole (M, n) table; the same draws, levels and norms as `quantize` of that table."""
    if not 1 <= bits <= 32:
        raise ValueError(f"bits={bits} is invalid: allowed range is 1..32")
    M, n = shape
    nb = -(-n // bucket)
    rows = max(1, min(M, BLOCK_VALUES // max(nb * bucket, 1)))
    xb = torch.zeros((rows, nb * bucket), dtype=torch.float64)  # float64 buckets; the last one's padding stays 0
    u = torch.empty((rows, nb, bucket), dtype=torch.float64)
    norms = torch.empty((M, nb), dtype=torch.float64)
    levels, signs = torch.empty((M, n), dtype=torch.int64), torch.empty((M, n), dtype=torch.bool)
    for a in range(0, M, rows):
        c = min(rows, M - a)
        fill(a, a + c, xb[:c, :n])
        block = xb[:c].view(c, nb, bucket)
        norms[a:a + c] = block.norm(dim=-1)
        torch.rand((c, nb, bucket), generator=gen, dtype=torch.float64, out=u[:c])  # the draws of one call
        qsgd_levels(block.numpy(), norms[a:a + c].numpy(), u[:c].numpy(), float(2**bits - 1),
                    levels[a:a + c].numpy(), signs[a:a + c].numpy())
    return levels, signs, norms.to(torch.float32)


def draws_for(gen: torch.Generator) -> np.random.Generator:
    """The numpy generator `quantize_rows` draws from: seeded by one draw of `gen`, so a run's seed fixes it."""
    return np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen)))


def quantize_rows(values: torch.Tensor, indptr: np.ndarray, item: np.ndarray, n_items: int, factor: bool, bits: int,
                  bucket: int, gen: torch.Generator, workspace: Workspace | None = None, runs: bool = True
                  ) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    """QSGD of an (M, n_items k) payload held by its rows: client m's rows indptr[m]:indptr[m + 1] of `values`
    (R, k) at items `item`, flattened item-major (value (i, j) at i k + j) or factor-major (`factor`: j n_items + i),
    every other value zero. Returns the packed codes (M, ceil(n (bits + 1) / 8)) uint8 (`pack_codes`' bytes), the
    bucket norms (M, n_buckets) float32 as sent and the dequantized values (R, k) float32 as received.

    The operator of `quantize` with one draw per held value (clients in order, each one's rows, then columns) instead
    of one per payload value: an unheld value is zero, and a zero gets level 0 whatever its draw. So the draws, the
    rounding, the packing and the dequantization cost the rows, not clients x items. The draws are numpy's (PCG64,
    seeded by one draw from `gen`), at a third of the cost of torch's float64 draws.

    workspace: the codes, the received values and the draws are made in its buffers (`QUANTIZED_ROW_BUFFERS`), valid
    until the next call with it, when they come to at most `KEEP_QUANTIZED_BYTES`. runs=False: every value coded and
    packed on its own (the former pass; the same bytes and values, see `qsgd_rows`)."""
    if not 1 <= bits <= 32:
        raise ValueError(f"bits={bits} is invalid: allowed range is 1..32")
    M, k = indptr.shape[0] - 1, values.shape[1]
    n = n_items * k
    nb = -(-n // bucket)
    norms = np.zeros((M, nb))
    vals = np.ascontiguousarray(values.detach().to(torch.float32).numpy())
    bucket_of = (np.arange(n, dtype=np.int64) // bucket).astype(np.int32)
    qsgd_rows_norms(vals, indptr, item, n_items, factor, bucket, bucket_of, norms)
    norms32 = norms.astype(np.float32)
    per_block = max(1, BLOCK_VALUES // max(k, 1))  # rows a block of draws holds (at least one client's)
    row_bytes = -(-n * (bits + 1) // 8)
    if workspace is not None and (M * row_bytes + vals.size * 4 + min(per_block, vals.shape[0]) * k * 8
                                  > KEEP_QUANTIZED_BYTES):
        workspace.release(*QUANTIZED_ROW_BUFFERS)  # kept past the round, they would add to its memory peak
        workspace = None
    if workspace is None:
        packed = np.zeros((M, row_bytes), dtype=np.uint8)  # pages that no code reaches are never touched
        out = torch.empty(vals.shape, dtype=torch.float32).numpy()  # torch's: no huge pages (see BLOCK_VALUES)
    else:
        packed = workspace.array("quantized_codes", (M, row_bytes), np.uint8)
        packed.fill(0)
        out = workspace.array("quantized_values", vals.shape, np.float32)
    rng = draws_for(gen)
    u = take(workspace, "quantized_draws", (min(per_block, vals.shape[0]), k), np.float64)
    a = 0
    while a < M:
        lo = int(indptr[a])
        b = max(a + 1, int(np.searchsorted(indptr, lo + per_block, side="right")) - 1)
        hi = int(indptr[b])
        if hi - lo > u.shape[0]:  # one client holds more rows than a block
            u = take(workspace, "quantized_draws", (hi - lo, k), np.float64)
        draws = u[: hi - lo]
        rng.random(out=draws)
        qsgd_rows(vals[lo:hi], indptr[a:b + 1] - lo, item[lo:hi], n_items, factor, bucket, bucket_of, draws,
                  float(2**bits - 1), bits + 1, norms[a:b], norms32[a:b], packed[a:b], out[lo:hi], runs)
        a = b
    return packed, torch.from_numpy(norms32), torch.from_numpy(out)


def dequantize(levels: torch.Tensor, signs: torch.Tensor, norms: torch.Tensor, bits: int, bucket: int,
               shape: tuple[int, ...]) -> torch.Tensor:
    out = torch.empty(tuple(levels.shape), dtype=torch.float32)
    qsgd_values(levels.numpy(), signs.numpy(), norms.numpy(), float(2**bits - 1), bucket, out.numpy())
    return out.reshape(shape)


def pack_codes(levels: np.ndarray, signs: np.ndarray, bits: int) -> np.ndarray:
    """(M, n) levels and signs -> (M, ceil(n * (bits + 1) / 8)) uint8, one packed row per client.

    Value i occupies bits [i*(bits+1), (i+1)*(bits+1)) of its row (level << 1 | sign, least significant bit
    first), so a valid prefix of n' values is exactly the first ceil(n' * (bits + 1) / 8) bytes.
    """
    out = torch.zeros((levels.shape[0], -(-levels.shape[1] * (bits + 1) // 8)), dtype=torch.uint8).numpy()
    pack_fixed(levels, signs, 1, bits + 1, out)
    return out


def unpack_codes(packed: np.ndarray, n: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of pack_codes for (M, bytes) rows of n values each."""
    _check_packed(packed, n, bits + 1)
    levels, signs = np.empty((packed.shape[0], n), np.int64), np.empty((packed.shape[0], n), np.bool_)
    unpack_fixed(np.ascontiguousarray(packed), 1, bits + 1, levels, signs)
    return levels, signs


def _check_packed(packed: np.ndarray, n: int, width: int) -> None:
    """The compiled unpacker reads without bounds checks: refuse rows too short for n values of `width` bits."""
    if packed.ndim != 2 or packed.shape[1] * 8 < n * width:
        raise ValueError(f"packed codes of shape {packed.shape} are too short: n={n} values of {width} bits need "
                         f"{-(-n * width // 8)} bytes a row")


def packed_bytes(n_values: np.ndarray | int, bits: int):
    return -(-np.asarray(n_values) * (bits + 1) // 8)


def code_bits(n_values: int, bits: int, bucket: int) -> int:
    """Theoretical size: (bits + 1) per value plus a float32 norm per bucket."""
    return n_values * (bits + 1) + 32 * math.ceil(n_values / bucket)


# --- the report's form: k levels per unit norm, one norm per vector (last axis) ----------------------------
MAX_LEVELS_LOG2 = 24  # k up to 2^24: levels stay exact in float64 and int64


def _check_levels(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 2**MAX_LEVELS_LOG2:
        raise ValueError(f"k={k!r} is invalid: the number of levels is an integer in 1..2^{MAX_LEVELS_LOG2}")


def quantize_levels(x: torch.Tensor, k: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. (4)-(5) along the last axis: x (..., d) -> levels (..., d) int64 in 0..k, signs (..., d) bool
    (True = negative), norms (...) float32 (the 32-bit norm of Eq. (5)'s tuple)."""
    _check_levels(k)
    x = x.to(torch.float64)
    norms = x.norm(dim=-1, keepdim=True)
    ratio = x.abs() / torch.where(norms > 0, norms, torch.ones_like(norms)) * float(k)
    levels = stochastic_round(ratio, gen).clamp(max=float(k)).to(torch.int64)
    return levels, x < 0, norms.squeeze(-1).to(torch.float32)


def dequantize_levels(levels: torch.Tensor, signs: torch.Tensor, norms: torch.Tensor, k: int) -> torch.Tensor:
    """||x|| sgn(x_i) l_i / k in float64."""
    sign = 1.0 - 2.0 * signs.to(torch.float64)
    return norms.to(torch.float64)[..., None] * sign * levels.to(torch.float64) / float(k)


def requantize(y: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
    """xi(y, k) of Eq. (5) for y in [0, 1]: the level (0..k) of an unbiased rounding of y to the grid 1/k."""
    _check_levels(k)
    ratio = y.to(torch.float64).clamp(0.0, 1.0).mul_(float(k))  # a new tensor: the in-place steps leave y as it is
    return stochastic_round(ratio, gen, in_place=True).clamp_(max=float(k)).to(torch.int64)


def qsgd_omega(d: int, k: float) -> float:
    """Variance factor of Eq. (4)-(5) (Property 2): E||Q(x) - x||^2 <= d / (4 k^2) ||x||^2; 0 for k = inf."""
    return 0.0 if math.isinf(k) else d / (4.0 * float(k) ** 2)


def eq5_bits(d: int, k: int) -> dict[str, float]:
    """Eq. (5)'s accounting of one quantized vector: 32-bit norm, 2-bit signs, d log2(k) bits of levels."""
    return {"norm": 32.0, "sign": 2.0 * d, "levels": d * math.log2(k)}


def pack_uint(values: np.ndarray, width: int) -> np.ndarray:
    """(M, n) unsigned integers < 2^width -> (M, ceil(n * width / 8)) uint8, fixed width, little endian bits."""
    v = np.asarray(values, dtype=np.uint64)
    out = np.zeros((v.shape[0], -(-v.shape[1] * width // 8)), np.uint8)
    pack_fixed(v, np.zeros((1, 1), np.bool_), 0, width, out)
    return out


def unpack_uint(packed: np.ndarray, n: int, width: int) -> np.ndarray:
    _check_packed(packed, n, width)
    values = np.empty((packed.shape[0], n), np.int64)
    unpack_fixed(np.ascontiguousarray(packed), 0, width, values, np.zeros((1, 1), np.bool_))
    return values

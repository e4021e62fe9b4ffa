"""Payload sizes of one round without training: what each message part will weigh.

`payload_table(cfg, n_items)` lists, per direction and message part, the
values sent and the serialized bytes of one client's message in the wire
format of `labcore.net.message` (framing included) together with the
theoretical bits, i.e. what the payload ledger will measure when the run
trains. It answers in well under a millisecond, so the Explorer shows it the
moment a setting changes. `tests/core/app/test_app_analytic.py` checks it against the
ledger of a real round for every method, with and without quantization.

SCoLR's local rank r_u is drawn per client and round: its rows are the
expectation over r_u uniform in [scolr_min_rank, rank]. Encrypted uploads are
not covered here (their size is the ciphertexts'; see the Encryption page).
"""
from __future__ import annotations

import math

import pandas as pd

from ..config import RunConfig
from ..methods.compress import topk_count
from ..methods.quantize import packed_bytes
from ..net.message import frame_bytes

COLUMNS = ("direction", "part", "kind", "values", "bytes", "bits")


def _array(name: str, kind: str, n: float, itemsize: int, bits_per_value: int | None = None) -> dict:
    return {"part": name, "kind": kind, "values": n, "bytes": frame_bytes(name, 1) + itemsize * n,
            "bits": n * (bits_per_value or itemsize * 8)}


def _float_part(name: str, kind: str, n: float, bits: int, bucket: int) -> list[dict]:
    """A float32 part of n values, or its quantized codes + per-bucket scales."""
    if not bits:
        return [_array(name, kind, n, 4)]
    codes = float(packed_bytes(int(n), bits)) if float(n).is_integer() else n * (bits + 1) / 8
    scales = math.ceil(n / bucket) if float(n).is_integer() else n / bucket
    return [{"part": name + ".codes", "kind": "codes", "values": n, "bytes": frame_bytes(name + ".codes", 1) + codes,
             "bits": 8 * codes},
            {"part": name + ".scales", "kind": "scales", "values": scales,
             "bytes": frame_bytes(name + ".scales", 1) + 4 * scales, "bits": 32 * scales}]


def _expected(rows_for_r, ranks) -> list[dict]:
    """Average the part rows over the local ranks r (SCoLR)."""
    per_r = [rows_for_r(r) for r in ranks]
    out = []
    for parts in zip(*per_r):
        row = dict(parts[0])
        for k in ("values", "bytes", "bits"):
            row[k] = sum(p[k] for p in parts) / len(parts)
        out.append(row)
    return out


def payload_table(cfg: RunConfig, n_items: int) -> pd.DataFrame:
    """Bytes of one client's uplink and of the downlink broadcast, per part (plaintext runs)."""
    N, d, r, m = n_items, cfg.dim, cfg.rank, cfg.method
    ub, db, bucket = cfg.up_bits, cfg.down_bits, cfg.quant_bucket
    up: list[dict] = []
    down: list[dict] = []
    if m == "fedmf":
        up = _float_part("delta_Q", "values", N * d, ub, bucket)
        down = _float_part("delta_Q", "values", N * d, db, bucket)
    elif m in ("colr", "scolr"):
        lo = cfg.scolr_min_rank if m == "scolr" else r
        if lo < r:
            up = _expected(lambda ru: _float_part("A", "factors", ru * N, ub, bucket) + [_array("S", "indices", ru, 1)],
                           range(lo, r + 1))
        else:
            up = _float_part("A", "factors", r * N, ub, bucket)
        down = _float_part("A", "factors", r * N, db, bucket)
        if cfg.b_as_seed:
            down.append({"part": "B_seed", "kind": "seed", "values": 1, "bytes": frame_bytes("B_seed", 0) + 8,
                         "bits": 64})
        else:
            down += _float_part("B", "factors", d * r, db, bucket)
    elif m == "svd":
        up = _float_part("U", "factors", N * r, ub, bucket) + _float_part("V", "factors", d * r, ub, bucket)
        down = (_float_part("U", "factors", N * r, db, bucket) + _float_part("V", "factors", d * r, db, bucket)
                if cfg.compress_down else _float_part("delta_Q", "values", N * d, db, bucket))
    elif m == "topk":
        k = topk_count(N * d, cfg.topk_ratio)
        up = _float_part("values", "values", k, ub, bucket) + [_array("indices", "indices", k, 4)]
        down = (_float_part("values", "values", k, db, bucket) + [_array("indices", "indices", k, 4)]
                if cfg.compress_down else _float_part("delta_Q", "values", N * d, db, bucket))
    else:  # pragma: no cover - RunConfig validates the method
        raise ValueError(m)
    if cfg.aggregation == "item_mean":  # the item bitmap (per-item normalisation)
        up.append({"part": "item_mask", "kind": "meta", "values": N, "bytes": frame_bytes("item_mask", 1)
                   + math.ceil(N / 8), "bits": 8 * math.ceil(N / 8)})
    rows = [{"direction": "up", **x} for x in up] + [{"direction": "down", **x} for x in down]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def payload_summary(cfg: RunConfig, n_items: int) -> dict:
    """Per-client bytes up and down per round, the round total, and the ratio to FedMF at the same d."""
    t = payload_table(cfg, n_items)
    up, down = float(t.loc[t.direction == "up", "bytes"].sum()), float(t.loc[t.direction == "down", "bytes"].sum())
    base = payload_table(cfg.replace(method="fedmf", up_bits=0, down_bits=0, encryption="none"), n_items)
    base_up = float(base.loc[base.direction == "up", "bytes"].sum())
    M = cfg.clients_per_round
    return {"up_client": up, "down_client": down, "round_total": M * (up + down), "fedmf_up_client": base_up,
            "up_ratio": up / base_up}

"""CKKS over the federation: nodes encrypt, the server sums ciphertexts it cannot read, nodes decrypt.

The same protocol as the engine's CKKS mod (`labcore.fed.secure`, CoLR section 4.3), split between the
processes that really hold each part:

* the **nodes** hold the secret key. Each encrypts, per sampled user, the update in the space the server
  averages (FedMF: Delta Q_u; CoLR: A_u; SCoLR: each trained column of S_u^T A_u, tagged in clear), plus
  the item bitmap under aggregation="item_mean", as TenSEAL CKKS vectors, and sends their bytes;
* the **server** holds the public context only (no secret key): it computes sum_u w_u ct_u per segment
  and broadcasts the encrypted aggregate;
* a node decrypts the aggregate, rebuilds the (N, k) aggregate the method expects and applies the
  method's own downlink to its copy of Q.

Every user of every round is encrypted for real (the engine encrypts `he_real_clients` and scales the
rest): over Flower this is the deployment, not a simulation of it. Bytes are those of the serialized
ciphertexts, packed as the engine's ledger packs them (each preceded by its u32 length).

Keys. `write_keys(cfg, folder)` generates one key pair and writes `secret.ctx` (for the nodes) and
`public.ctx` (for the server). In a real deployment the secret file reaches the devices through a key
service the server does not control; here it is a path every node reads. The server code reads only
`public.ctx`.
"""
from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..config import RunConfig
from ..fed.secure import (AGGREGATE_PARTS, _measured, _pack, _record, assemble, part_members, segments,
                          unpack)
from ..methods.base import FLOAT_KINDS, Wire
from ..net.ledger import Ledger

SECRET, PUBLIC = "secret.ctx", "public.ctx"


def params_of(cfg: RunConfig):
    from ..privacy.ckks import CkksParams

    return CkksParams(cfg.ckks_degree, cfg.ckks_chain(), cfg.ckks_scale_bits)


def write_keys(cfg: RunConfig, folder: str | Path) -> Path:
    """Generate a CKKS key pair for `cfg`'s parameters into `folder` (secret.ctx, public.ctx)."""
    import tenseal as ts

    p = params_of(cfg)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ctx = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=p.poly_modulus_degree,
                     coeff_mod_bit_sizes=list(p.coeff_mod_bit_sizes))
    ctx.global_scale = p.scale
    (folder / SECRET).write_bytes(ctx.serialize(save_secret_key=True, save_relin_keys=False, save_galois_keys=False))
    (folder / PUBLIC).write_bytes(ctx.serialize(save_secret_key=False, save_relin_keys=False, save_galois_keys=False))
    return folder


@lru_cache(maxsize=4)
def _context(folder: str, which: str, params):
    import tenseal as ts

    from ..privacy.ckks import CkksContext

    path = Path(folder) / which
    if not path.is_file():
        raise FileNotFoundError(f"CKKS key file {path} not found: create the keys with "
                                f"labcore.scale.encrypted.write_keys(cfg, {folder!r}) (labcore flower does it)")
    blob = path.read_bytes()
    ctx = ts.context_from(blob)
    if which == SECRET and not ctx.has_secret_key():
        raise ValueError(f"{path} holds no secret key: a node needs {SECRET}, the server {PUBLIC}")
    if which == PUBLIC and ctx.has_secret_key():
        raise ValueError(f"{path} holds a secret key: the server's copy must be public only")
    return CkksContext(params, ctx if which == SECRET else None, ctx, len(blob))


def node_context(cfg: RunConfig, folder: str):
    return _context(str(folder), SECRET, params_of(cfg))


def server_context(cfg: RunConfig, folder: str):
    return _context(str(folder), PUBLIC, params_of(cfg))


# --- node ------------------------------------------------------------------------------------------
def encrypt_users(cfg: RunConfig, keys: str, method, local, up: list[Wire], setup
                  ) -> tuple[list[dict[str, bytes]], int, dict[str, int]]:
    """Per sampled user of this node: {segment name: packed ciphertext bytes}; the aggregate's width k and
    each segment's number of values (what a node needs to decrypt the broadcast)."""
    from ..fed.updates import RowUpdate
    from ..privacy.ckks import encrypt_update

    ctx = node_context(cfg, keys)
    decoded = method.decode_uplink({w.name: w for w in up}, setup)
    if isinstance(decoded, RowUpdate):
        decoded = decoded.dense()
    segs = segments(cfg, "ckks", decoded, local.touched_dense(), setup)
    limit = ctx.params.max_abs_value
    out, sizes = [], {}
    for s in segs:
        peak = max(float(np.max(np.abs(v))) for v in s.values())
        if not np.isfinite(peak) or peak >= limit:
            raise ValueError(f"an update value {peak:.3g} cannot be encrypted: CKKS holds |x| < {limit:g} "
                             "(training diverged, or lower ckks_scale_bits)")
        out.append({name: _pack(encrypt_update(ctx, v)) for name, v in s.items()})
        sizes.update({name: int(v.size) for name, v in s.items()})
    return out, int(decoded.shape[2]), sizes


def clear_parts(up: list[Wire]) -> list[Wire]:
    """Uplink parts that travel in clear next to the ciphertexts (SCoLR's column choice S_u)."""
    return [w for w in up if w.kind not in FLOAT_KINDS and w.name != "item_mask"]


def decrypt_broadcast(cfg: RunConfig, n_items: int, keys: str, blobs: dict[str, bytes], sizes: dict[str, int],
                      cohort_size: int, k: int) -> torch.Tensor:
    """The (N, k) aggregate the method expects, from the broadcast's encrypted segment sums."""
    from ..privacy.ckks import decrypt_aggregate

    ctx = node_context(cfg, keys)
    sums = {n: decrypt_aggregate(ctx, unpack(b), sizes[n]) for n, b in blobs.items()}
    return assemble(cfg, n_items, sums, cohort_size, k)


# --- server ----------------------------------------------------------------------------------------
def aggregate_users(cfg: RunConfig, keys: str, t: int, users_cts: list[dict[str, bytes]], n_pos: np.ndarray,
                    clear: list[Wire], ledger: Ledger) -> tuple[dict[str, bytes], dict]:
    """Server side of round t: the weighted sum of every segment over the users that sent it.

    users_cts: per user of the cohort (cohort order), {segment: packed ciphertexts}. Records the uplink and
    the downlink in the ledger. Returns the encrypted aggregate per segment and the round's byte figures.
    """
    from ..privacy.ckks import aggregate as ckks_aggregate

    ctx = server_context(cfg, keys)
    M = len(users_cts)
    w = n_pos.astype(np.float64) / n_pos.sum() if cfg.aggregation == "weighted" else np.full(M, 1.0 / M)
    agg_name = AGGREGATE_PARTS[cfg.method][0]
    parts = [agg_name] + (["item_mask"] if cfg.aggregation == "item_mean" else [])

    up_bytes = ledger.record(t, "up", clear) if clear else np.zeros(M, np.int64)
    for part in parts:
        sizes = np.array([_measured(part, "ciphertext", b"".join(u[x] for x in part_members(part, sorted(u))))
                          for u in users_cts], dtype=np.int64)
        up_bytes = up_bytes + _record(ledger, t, "up", part, "ciphertext", sizes)
    t0 = time.perf_counter()
    names = sorted({n for u in users_cts for n in u})
    out = {}
    for n in names:
        who = [m for m in range(M) if n in users_cts[m]]
        out[n] = _pack(ckks_aggregate([unpack(users_cts[m][n]) for m in who], w[who], ctx))
    server_s = time.perf_counter() - t0
    down = np.zeros(1, np.int64)
    for part in parts:
        blob = b"".join(out[x] for x in part_members(part, names))
        down = down + _record(ledger, t, "down", part, "ciphertext", np.array([_measured(part, "ciphertext", blob)]),
                              receivers=M)
    return out, {"bytes_up": int(up_bytes.sum()), "bytes_down": int(down.sum()) * M, "bytes_up_client": up_bytes,
                 "bytes_down_client": int(down.sum()), "he_server_s": server_s}

"""CKKS cost explorer and CoLR Table 3 (overheads and ciphertext/plaintext sizes).

`ckks_costs(n_values, params)` answers "what does encrypting n values cost":
ciphertext count, bytes (measured by serializing real ciphertexts), times and
precision. Per-params calibration (key generation, one timed encrypt /
weighted add / decrypt of a full ciphertext, a precision round trip) is done
once and cached; serialized sizes are cached per (params, fill), so repeated
calls return in well under 100 ms.

Times in `ckks_costs` are calibrated, and labelled so: the per-ciphertext
times were measured on real ciphertexts and are multiplied by the ciphertext
count (CKKS cost per ciphertext does not depend on how many slots are filled).

`table3_rows` reproduces the form of CoLR's Table 3 (MovieLens-1M, N=3706
items, d=64) with the paper's numbers alongside. What was run for real and what
was scaled is stated per row (`basis`, `extrapolated`).

On the paper's CKKS sizes (an inference from their numbers, not a statement
of the paper): 3,073 KB per CoLR block and FedMF = 8 blocks (24,587 KB) for
237,184 values fit blocks of ~32,768 values of ~3 MB. 3,072 KB is the
uncompressed size of a degree-32768 ciphertext with 6 primes (2 x 32768 x 6 x
8 B), which holds 16,384 values in TenSEAL, so the paper's blocks either held
twice that or its sizes are per pair of ciphertexts; the paper does not say. The step
structure (size constant while r*N fits one block) is the same; `TABLE3_PARAMS`
(N=32768, the largest degree SEAL allows at 128-bit security) shows it, one rank
earlier than the paper (TABLE3_SETTINGS says so beside the paper's numbers).
"""
from __future__ import annotations

import math
import time
from functools import lru_cache

import numpy as np

from .ckks import SECURITY_BITS, CkksAggregator, CkksParams, aggregate, decrypt_aggregate, encrypt_update, make_context

_VALUE_STD = 1e-2  # calibration values: the size of model updates


@lru_cache(maxsize=16)
def _calibrate(params: CkksParams, reps: int = 3) -> dict:
    ctx = make_context(params)
    rng = np.random.default_rng(0)
    s = params.slots
    x = rng.normal(0.0, _VALUE_STD, (2, s))
    enc_t, agg_t, dec_t = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        c0 = encrypt_update(ctx, x[0])
        enc_t.append(time.perf_counter() - t0)
    c1 = encrypt_update(ctx, x[1])
    for _ in range(reps):
        t0 = time.perf_counter()
        agg = aggregate([c0, c1], [0.5, 0.5], ctx)
        agg_t.append((time.perf_counter() - t0) / 2)  # per (client, ciphertext)
    for _ in range(reps):
        t0 = time.perf_counter()
        y = decrypt_aggregate(ctx, agg, s)
        dec_t.append(time.perf_counter() - t0)
    ref = 0.5 * (x[0] + x[1])
    rt = decrypt_aggregate(ctx, c0, s)
    return {
        "encrypt_s": float(np.median(enc_t)),
        "add_s": float(np.median(agg_t)),
        "decrypt_s": float(np.median(dec_t)),
        "full_bytes": len(c0[0]),
        "aggregate_bytes": len(agg[0]),
        "roundtrip_max_abs_error": float(np.max(np.abs(rt - x[0]))),
        "roundtrip_rel_error": float(np.max(np.abs(rt - x[0])) / np.max(np.abs(x[0]))),
        "aggregate_max_abs_error": float(np.max(np.abs(y - ref))),
        "aggregate_rel_error": float(np.max(np.abs(y - ref)) / np.max(np.abs(ref))),
        "public_context_bytes": ctx.public_bytes,
    }


@lru_cache(maxsize=256)
def _fresh_bytes(params: CkksParams, fill: int) -> int:
    """Measured serialized size of a fresh ciphertext holding `fill` values."""
    ctx = make_context(params)
    x = np.random.default_rng(fill).normal(0.0, _VALUE_STD, fill)
    return len(encrypt_update(ctx, x)[0])


def _formula_bytes(params: CkksParams) -> int:
    """Uncompressed upper bound: 2 polynomials x N coefficients x data primes x 8 bytes."""
    return 2 * params.poly_modulus_degree * (len(params.coeff_mod_bit_sizes) - 1) * 8


def ckks_costs(n_values: int, params: CkksParams = CkksParams(), measure: bool = True) -> dict:
    """Costs of encrypting / aggregating / decrypting n_values under `params` (one client).

    measure=True: bytes from real serialized ciphertexts (full ones and the
    last partial one), times calibrated (measured per ciphertext, x count),
    precision from a real round trip; all cached per params.
    measure=False: no encryption at all; bytes from the uncompressed size
    formula (an upper bound, labelled), times and precision None.
    """
    n_values = int(n_values)
    if n_values < 1:
        raise ValueError("n_values must be >= 1")
    s = params.slots
    n_ct = math.ceil(n_values / s)
    last = n_values - (n_ct - 1) * s
    out = {
        "n_values": n_values,
        "poly_modulus_degree": params.poly_modulus_degree,
        "coeff_mod_bit_sizes": params.coeff_mod_bit_sizes,
        "global_scale_bits": params.global_scale_bits,
        "slots": s,
        "n_ciphertexts": n_ct,
        "plaintext_bytes": 4 * n_values,
        "security_bits": SECURITY_BITS,
    }
    if measure:
        cal = _calibrate(params)
        full = cal["full_bytes"]
        ct_bytes = (n_ct - 1) * full + _fresh_bytes(params, last)
        out.update(
            ciphertext_bytes=ct_bytes,
            ciphertext_bytes_each=full,
            aggregate_ciphertext_bytes=n_ct * cal["aggregate_bytes"],
            bytes_source="measured",
            encrypt_s=n_ct * cal["encrypt_s"],
            add_s=n_ct * cal["add_s"],
            decrypt_s=n_ct * cal["decrypt_s"],
            times_source="calibrated: measured per ciphertext, x n_ciphertexts",
            max_abs_error=cal["roundtrip_max_abs_error"],
            rel_error=cal["roundtrip_rel_error"],
            aggregate_max_abs_error=cal["aggregate_max_abs_error"],
            aggregate_rel_error=cal["aggregate_rel_error"],
            precision_values_std=_VALUE_STD,
            public_context_bytes=cal["public_context_bytes"],
        )
    else:
        fb = _formula_bytes(params)
        out.update(
            ciphertext_bytes=n_ct * fb,
            ciphertext_bytes_each=fb,
            aggregate_ciphertext_bytes=None,
            bytes_source="formula (uncompressed upper bound)",
            encrypt_s=None,
            add_s=None,
            decrypt_s=None,
            times_source="not measured",
            max_abs_error=None,
            rel_error=None,
        )
    out["ratio"] = out["ciphertext_bytes"] / out["plaintext_bytes"]
    return out


# CoLR Table 3 (MovieLens-1M): client s, server s, ciphertext KB, plaintext KB, comm ratio.
PAPER_TABLE3 = {
    "FedMF": (0.93, 2.39, 24587, 927, 26.52),
    "TopK@1/64": (88.20, 88.06, 3028, 29, 103.09),
    "TopK@2/64": (182.02, 185.59, 6056, 58, 103.83),
    "TopK@4/64": (353.25, 364.67, 12112, 116, 104.20),
    "TopK@8/64": (723.45, 750.98, 24225, 232, 104.40),
    "TopK@16/64": (1449.90, 1483.91, 48448, 464, 104.49),
    "CoLR@1": (0.07, 0.24, 3073, 15, 206.31),
    "CoLR@2": (0.07, 0.25, 3073, 29, 104.63),
    "CoLR@4": (0.07, 0.25, 3073, 58, 52.69),
    "CoLR@8": (0.08, 0.25, 3073, 116, 26.44),
    "CoLR@16": (0.15, 0.51, 6147, 232, 26.49),
    "CoLR@32": (0.30, 1.03, 12293, 464, 26.51),
}
_PAPER_KEYS = ("client_s", "server_s", "ciphertext_kb", "plaintext_kb", "ratio")


def _frac_label(f: float) -> str:
    num = f * 64
    return f"{int(round(num))}/64" if abs(num - round(num)) < 1e-9 else f"{f:.4g}"


def _ckks_row(method: str, n_values: int, params: CkksParams, n_clients: int, real_max_ct: int,
              real_clients: int) -> dict:
    c = ckks_costs(n_values, params)
    n_ct = c["n_ciphertexts"]
    if n_ct <= real_max_ct:
        rng = np.random.default_rng(n_values)
        X = rng.normal(0.0, _VALUE_STD, (n_clients, n_values))
        _, rep = CkksAggregator(params, max_real_clients=real_clients).aggregate(X, np.full(n_clients, 1.0 / n_clients))
        client_s, server_s = rep.client_overhead_s, rep.server_aggregate_s
        ct_bytes = rep.ciphertext_bytes_per_client
        m = rep.n_real_clients
        basis = (f"measured: real CKKS round, {m} clients x {n_ct} ciphertexts"
                 + (f"; server time scaled to {n_clients} clients from the measured per-(client, ciphertext) cost"
                    if m < n_clients else ""))
        extrap = m < n_clients
    else:
        client_s = c["encrypt_s"] + c["decrypt_s"]
        server_s = n_clients * c["add_s"]
        ct_bytes = c["ciphertext_bytes"]
        basis = (
            f"extrapolated: bytes measured on real ciphertexts; times = calibrated per-ciphertext cost x {n_ct} "
            f"ciphertexts (x {n_clients} clients at the server)"
        )
        extrap = True
    return _row(method, "ckks", n_values, client_s, server_s, ct_bytes, 4 * n_values, n_ct, basis, extrap)


def _row(method, scheme, n_values, client_s, server_s, ct_bytes, pt_bytes, n_ct, basis, extrap) -> dict:
    paper = PAPER_TABLE3.get(method)
    return {
        "method": method,
        "scheme": scheme,
        "n_values": n_values,
        "n_ciphertexts": n_ct,
        "client_s": client_s,
        "server_s": server_s,
        "ciphertext_kb": ct_bytes / 1024,
        "plaintext_kb": pt_bytes / 1024,
        "ratio": ct_bytes / pt_bytes,
        "extrapolated": extrap,
        "basis": basis,
        "paper": dict(zip(_PAPER_KEYS, paper)) if paper else None,
    }


# Our Table 3 CKKS setting: SEAL's largest degree at 128-bit security (16,384 values per ciphertext) with the
# short precise chain, so that CoLR's ciphertext size shows the paper's steps (see TABLE3_SETTINGS).
TABLE3_PARAMS = CkksParams.precise(32768)
TABLE3_CLIENTS = 60  # ML-1M clients per round in CoLR's setting (1% of 6,040 users)
ML1M_ITEMS, ML1M_DIM = 3706, 64

TABLE3_SETTINGS = (
    "Paper (CoLR Table 3, ML-1M, d=64): CKKS for FedMF and CoLR, Paillier per value for Top-K; HE parameters and "
    "clients per round are not stated. Its sizes imply blocks of ~32,768 values of 3,073 KB each (FedMF = 8 "
    "blocks, CoLR@1..8 one block, CoLR@16 two, CoLR@32 four). Ours: CKKS N=32768 (16,384 values per ciphertext), "
    "q=(60, 50, 60) bits, scale 2^50, 128-bit security, TenSEAL serialization (compressed); Paillier 2048-bit "
    "keys; 60 clients per round (1% of ML-1M users); float32 plaintext (+ int32 indices for Top-K). SEAL's "
    "largest degree at 128-bit security holds 16,384 values, so our steps come one rank earlier: CoLR@1..4 one "
    "ciphertext, @8 two, @16 four, @32 eight."
)


def table3_rows(
    n_items: int = ML1M_ITEMS,
    d: int = ML1M_DIM,
    ranks=(1, 2, 4, 8, 16, 32),
    topk_fracs=(1 / 64, 2 / 64, 4 / 64, 8 / 64, 16 / 64),
    params: CkksParams = TABLE3_PARAMS,
    paillier_key_length: int | None = None,
    n_clients: int = TABLE3_CLIENTS,
    smoke: bool = False,
    paillier_sample: int | None = None,
    real_max_ciphertexts: int | None = None,
    real_max_paillier_values: int | None = None,
    real_clients: int | None = None,
) -> list[dict]:
    """CoLR Table 3 rows: FedMF (CKKS over N*d), TopK@f (Paillier over k = f*N*d values
    + clear int32 indices), CoLR@r (CKKS over r*N values). Defaults: ML-1M sizes, our
    parameters of TABLE3_SETTINGS.

    Columns: client overhead (encrypt + decrypt, one client, s), server
    overhead (aggregate n_clients uploads, s), ciphertext KB (one client's
    upload: ciphertexts + clear indices), plaintext KB (float32 values
    [+ int32 indices]), ratio; the paper's numbers under "paper". The paper does
    not state its clients per round; n_clients is ours.

    CKKS rows with <= real_max_ciphertexts ciphertexts per client run a real
    round (CkksAggregator) with `real_clients` clients encrypted for real and
    the server time scaled to n_clients; larger ones are extrapolated from the
    calibrated per-ciphertext cost (bytes still measured). Paillier rows run a
    real round when k <= real_max_paillier_values; otherwise per-value costs are
    measured on paillier_sample values and scaled linearly by k (labelled).

    smoke=True: 1024-bit Paillier key (unless given), 4-value sample, real CKKS
    rounds only up to 2 ciphertexts with 2 real clients, no real Paillier
    rounds: a few seconds. Defaults otherwise: 2048-bit key, 32-value sample,
    real CKKS up to 64 ciphertexts per client with 4 real clients, real
    Paillier rounds up to 64 values.
    """
    from .paillier import DEFAULT_KEY_LENGTH, PaillierAggregator, per_value_costs

    key_length = paillier_key_length or (1024 if smoke else DEFAULT_KEY_LENGTH)
    sample = paillier_sample or (4 if smoke else 32)
    real_ct = real_max_ciphertexts if real_max_ciphertexts is not None else (2 if smoke else 64)
    real_pv = real_max_paillier_values if real_max_paillier_values is not None else (0 if smoke else 64)
    real_m = real_clients if real_clients is not None else (2 if smoke else 4)
    rows = [_ckks_row("FedMF", n_items * d, params, n_clients, real_ct, real_m)]

    pv = per_value_costs(key_length, sample)
    for f in topk_fracs:
        k = max(1, int(round(f * n_items * d)))
        method = f"TopK@{_frac_label(f)}"
        if k <= real_pv:
            rng = np.random.default_rng(k)
            vals = rng.normal(0.0, _VALUE_STD, (n_clients, k))
            idx = np.stack([rng.choice(n_items * d, k, replace=False) for _ in range(n_clients)])
            _, rep = PaillierAggregator(key_length, max_real_clients=real_m).aggregate(
                vals, idx, np.full(n_clients, 1.0 / n_clients), n_items * d)
            client_s, server_s = rep.client_overhead_s, rep.server_aggregate_s
            ct_bytes = rep.upload_bytes_per_client
            basis = (f"measured: real Paillier round, {rep.n_real_clients} clients x {k} values, {key_length}-bit key"
                     + (f"; server time scaled to {n_clients} clients" if rep.extrapolated else ""))
            extrap = rep.extrapolated
        else:
            client_s = k * (pv["encrypt_s"] + pv["decrypt_s"])
            server_s = n_clients * k * pv["server_s"]
            ct_bytes = k * (pv["ciphertext_bytes"] + 4)
            basis = (
                f"extrapolated: per-value costs measured on {sample} values ({key_length}-bit key: "
                f"{pv['ciphertext_bytes']} B, enc {pv['encrypt_s'] * 1e3:.2f} ms, dec {pv['decrypt_s'] * 1e3:.2f} ms, "
                f"server {pv['server_s'] * 1e3:.3f} ms) x k={k}"
            )
            extrap = True
        rows.append(_row(method, "paillier", k, client_s, server_s, ct_bytes, 8 * k, k, basis, extrap))

    for r in ranks:
        rows.append(_ckks_row(f"CoLR@{r}", r * n_items, params, n_clients, real_ct, real_m))
    return rows


def format_table3(rows: list[dict]) -> str:
    """Plain-text rendering: ours | paper."""
    head = f"{'method':<12}{'client s':>10}{'server s':>10}{'ct KB':>10}{'pt KB':>8}{'ratio':>8}  |{'paper: client':>14}{'server':>9}{'ct KB':>9}{'pt KB':>7}{'ratio':>8}  basis"
    lines = [head]
    for r in rows:
        p = r["paper"] or {}
        lines.append(
            f"{r['method']:<12}{r['client_s']:>10.3f}{r['server_s']:>10.3f}{r['ciphertext_kb']:>10.0f}"
            f"{r['plaintext_kb']:>8.0f}{r['ratio']:>8.2f}  |{p.get('client_s', float('nan')):>14.2f}"
            f"{p.get('server_s', float('nan')):>9.2f}{p.get('ciphertext_kb', float('nan')):>9.0f}"
            f"{p.get('plaintext_kb', float('nan')):>7.0f}{p.get('ratio', float('nan')):>8.2f}  "
            + ("[extrapolated] " if r["extrapolated"] else "[measured] ")
        )
    return "\n".join(lines)


def table3_frame(rows: list[dict] | None = None, **kwargs):
    """Table 3 as a DataFrame, ours beside the paper's; `rows` from table3_rows (else table3_rows(**kwargs)).

    df.attrs["settings"] states our parameters and the paper's (TABLE3_SETTINGS,
    or the parameters given).
    """
    import pandas as pd

    rows = table3_rows(**kwargs) if rows is None else rows
    out = []
    for r in rows:
        p = r["paper"] or {}
        out.append({"method": r["method"], "scheme": r["scheme"], "values": r["n_values"],
                    "ciphertexts": r["n_ciphertexts"], "client_s": r["client_s"], "server_s": r["server_s"],
                    "ciphertext_kb": r["ciphertext_kb"], "plaintext_kb": r["plaintext_kb"], "ratio": r["ratio"],
                    **{f"paper_{k}": p.get(k, float("nan")) for k in _PAPER_KEYS},
                    "extrapolated": r["extrapolated"], "basis": r["basis"]})
    df = pd.DataFrame(out)
    params = kwargs.get("params", TABLE3_PARAMS)
    df.attrs["settings"] = TABLE3_SETTINGS if params == TABLE3_PARAMS else (
        f"{params.describe()}; {kwargs.get('n_clients', TABLE3_CLIENTS)} clients per round. " + TABLE3_SETTINGS.split(" Ours:")[0])
    return df


def main(argv=None) -> None:
    """Print Table 3: python -m labcore.privacy.costs [--smoke] [--degree 32768] [--clients 60]."""
    import argparse

    ap = argparse.ArgumentParser(description="CoLR Table 3 with measured CKKS / Paillier costs")
    ap.add_argument("--smoke", action="store_true", help="a few seconds: 1024-bit Paillier, small samples")
    ap.add_argument("--degree", type=int, default=TABLE3_PARAMS.poly_modulus_degree, choices=(8192, 16384, 32768))
    ap.add_argument("--clients", type=int, default=TABLE3_CLIENTS)
    ap.add_argument("--key-length", type=int, default=None)
    a = ap.parse_args(argv)
    params = CkksParams.precise(a.degree)
    rows = table3_rows(params=params, n_clients=a.clients, smoke=a.smoke, paillier_key_length=a.key_length)
    print(TABLE3_SETTINGS if params == TABLE3_PARAMS else params.describe())
    print(format_table3(rows))
    for r in rows:
        print(f"{r['method']}: {r['basis']}")


if __name__ == "__main__":
    main()

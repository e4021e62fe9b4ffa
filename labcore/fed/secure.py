"""Encryption and secure aggregation of the uplink: the engine's privacy mod.

Order on the uplink: method encodes -> (quantize: not with encryption) -> protect -> ledger -> server.
`make_secure_mod(cfg, ...)` returns None for encryption="none", otherwise a
`SecureMod` whose `aggregate()` replaces the server's plaintext aggregation:

* "ckks" (FedMF, CoLR, SCoLR). Each client encrypts its update, in the space
  the server averages (FedMF: Delta Q_u; CoLR: A_u; SCoLR: each trained column
  of S_u^T A_u as its own ciphertexts, tagged in clear with its column index,
  so the server adds "pairs of rows" as in CoLR section 4.4), packed N/2 values
  per CKKS ciphertext. With aggregation="item_mean" its item bitmap is
  encrypted alongside. The server, holding only the public context, computes
  sum_u w_u ct_u per ciphertext position (w_u = N_u / N for "weighted"; 1/M for
  "item_mean", which keeps the bitmap sum below the CKKS headroom); clients
  download the encrypted aggregate, decrypt it and (item_mean) divide each
  item's row by its count, rounded to the integer it is.
* "secagg" (same methods). Pairwise-masked fixed-point sum (Bonawitz et al.;
  labcore.privacy.secagg), exact in the ring Z_2^64 with 32 fractional bits.
  Masks only cancel on a common layout, so every client sends its dense
  S_u^T A_u (SCoLR) and its bitmap concatenated. The server learns the sum
  (that is what secure aggregation reveals) and broadcasts the aggregate
  as in a plain run. With dropout (`fed/dropout.py`) the dropped clients'
  masks are removed from the seeds the survivors reveal (`_secagg_dropout`).
* "paillier" (Top-K). Every one of the k values is a Paillier ciphertext, the
  indices travel in clear (as in CoLR's Table 3); the server adds ciphertexts
  that fall on the same index; clients download the encrypted union.

Real ciphertexts, and what is scaled. Encrypting every client of every round
would make a run far from interactive, so `he_real_clients` clients of each
round (drawn at random from the cohort) are protected for real: real TenSEAL /
masked / Paillier objects, really aggregated and decrypted. The others'
contribution is added in plaintext. Each round the real decrypted partial sum
is compared with the same partial sum computed in plaintext (column
`he_check_err`, relative max error). Bytes and times for the other clients
come from the real ones: a ciphertext's serialized size does not depend on
the values it holds, so each client's bytes = its ciphertext count x the
measured mean bytes per ciphertext; times = measured cost per ciphertext
(per value for Paillier, per mask / key agreement for secagg) x that client's
count. Rounds where anything was scaled have `he_extrapolated` = True.
Paillier also encrypts only `he_real_values` of each real client's k values
(its cost is exactly linear in k).

Wall-clock model: a client's HE compute (encrypt + decrypt, or key agreement
+ masking) is added to its simulated compute time T_sim (so R_comp scales it,
as for training), the server's (aggregation on ciphertexts, unmasking) to
T_server. CKKS noise is fresh randomness: an encrypted run matches the plain
one to ~1e-9 per round, not bit for bit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..config import RunConfig
from ..methods.base import FLOAT_KINDS, Wire
from ..net.ledger import Ledger
from ..net.message import bytes_part, frame_bytes, serialize_part

SECURE_SCHEMES = ("ckks", "secagg", "paillier")
# The downlink parts that carry the aggregate (replaced by ciphertexts under ckks / paillier).
AGGREGATE_PARTS = {"fedmf": ("delta_Q",), "colr": ("A",), "scolr": ("A",), "topk": ("delta_Q",)}
STREAM_REAL = 101  # per-round stream that picks the clients protected for real
SECAGG_FRAC_BITS, SECAGG_RING_BITS = 32, 64
LEN_PREFIX = 4  # each ciphertext in a part is preceded by its u32 length


@dataclass
class SecureRound:
    """What protecting one round cost and produced."""

    aggregate: torch.Tensor  # (N, k): what the clients hold after decrypting (secagg: what the server unmasked)
    up_bytes: np.ndarray  # (M,) uplink bytes per client, as recorded in the ledger
    client_s: np.ndarray  # (M,) HE compute per client (encrypt + decrypt, or key agreement + masking)
    server_s: float  # HE compute at the server (aggregation on ciphertexts / unmasking)
    extrapolated: bool
    check_err: float  # real decrypted partial sum vs the same partial sum in plaintext (relative max error)
    n_real: int
    wall_s: float = 0.0  # time this machine spent in the mod (the engine keeps it out of its server timing)
    down: list = field(default_factory=list)  # [(part, kind, payload bytes, bits)] replacing the aggregate parts
    view: dict | None = None  # what the server saw (kept only when asked: attacks)
    dropped_up_bytes: int = 0  # uploads of sampled clients that dropped out before their update (secagg: key)
    down_only_bytes: int = 0  # downlink messages sent to some receivers only (secagg: the survivors' reveal request)

    def columns(self) -> dict:
        return {"he_client_s": float(np.mean(self.client_s)), "he_server_s": float(self.server_s),
                "he_extrapolated": bool(self.extrapolated), "he_check_err": float(self.check_err)}


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    return float(np.max(np.abs(got - ref)) / scale) if scale > 0 else float(np.max(np.abs(got), initial=0.0))


def _pack(cts: list[bytes]) -> bytes:
    """Ciphertexts of one part as they travel: each preceded by its u32 length."""
    return b"".join(len(c).to_bytes(LEN_PREFIX, "little") + c for c in cts)


def unpack(blob: bytes) -> list[bytes]:
    """The ciphertexts of a packed part (the inverse of `_pack`)."""
    out, i = [], 0
    while i < len(blob):
        n = int.from_bytes(blob[i: i + LEN_PREFIX], "little")
        out.append(blob[i + LEN_PREFIX: i + LEN_PREFIX + n])
        i += LEN_PREFIX + n
    return out


def part_members(part: str, names) -> list[str]:
    """The segments that travel in `part` (SCoLR's columns "A:j" travel in part "A")."""
    return [x for x in names if x == part or x.startswith(part + ":")]


def segments(cfg: RunConfig, scheme: str, decoded: torch.Tensor, touched: torch.Tensor, setup
             ) -> list[dict[str, np.ndarray]]:
    """Per client: {segment name: float64 vector} it protects. Segments with the same name are summed together."""
    X = decoded.detach()
    agg_name = AGGREGATE_PARTS[cfg.method][0]
    per_column = scheme == "ckks" and cfg.method == "scolr"
    out = []
    for m in range(X.shape[0]):
        if per_column:  # S_u^T A_u column by column: only the trained columns travel
            order, r_u = setup.extra["order"][m], int(setup.extra["ranks"][m])
            seg = {f"A:{int(j)}": X[m, :, int(j)].double().numpy() for j in sorted(order[:r_u].tolist())}
        else:
            seg = {agg_name: X[m].reshape(-1).double().numpy()}
        if cfg.aggregation == "item_mean":
            seg["item_mask"] = touched[m].numpy().astype(np.float64)
        out.append(seg)
    return out


def assemble(cfg: RunConfig, n_items: int, sums: dict[str, np.ndarray], M: int, k: int) -> torch.Tensor:
    """Turn the decrypted per-segment sums into the (N, k) aggregate the method expects."""
    agg_name = AGGREGATE_PARTS[cfg.method][0]
    if agg_name in sums:
        S = sums[agg_name].reshape(n_items, k)
    else:  # SCoLR columns
        S = np.zeros((n_items, k))
        for name, v in sums.items():
            if name.startswith("A:"):
                S[:, int(name[2:])] = v
    if cfg.aggregation == "item_mean":  # weights were 1/M: S = sum / M, bitmap sum / M
        counts = np.rint(sums["item_mask"] * M)
        S = S * M / np.maximum(counts, 1.0)[:, None]
    return torch.from_numpy(S.astype(np.float32))


def _record(ledger: Ledger, t: int, direction: str, name: str, kind: str, payload: np.ndarray,
            receivers: int = 1) -> np.ndarray:
    """Ledger rows for a bytes part whose payload sizes are known per message (real or scaled).

    Same row format as Ledger.record; size of a message = framing of a bytes
    part + payload (what serialize_part measures for real blobs).
    """
    payload = np.asarray(payload, dtype=np.int64)
    sizes = payload + frame_bytes(name, 0)
    ledger.rows.append({"round": t, "direction": direction, "part": name, "kind": kind,
                        "messages": int(sizes.size) * receivers, "bytes": int(sizes.sum()) * receivers,
                        "bits": int(8 * payload.sum()) * receivers})
    return sizes


def _measured(name: str, kind: str, blob: bytes) -> int:
    """Payload bytes of a real blob, measured through the message serializer."""
    return len(serialize_part(bytes_part(name, kind, blob))) - frame_bytes(name, 0)


class SecureMod:
    """Protects the uplink of one run; `aggregate()` is called once per round by the engine."""

    def __init__(self, cfg: RunConfig, n_items: int):
        self.cfg, self.n_items, self.scheme = cfg, n_items, cfg.encryption
        self.keep_view = False
        self.agg_name = AGGREGATE_PARTS[cfg.method][0]
        self._ckks_rates: dict | None = None  # the last CKKS round encrypted for real: its per-ciphertext figures
        if self.scheme == "ckks":
            from ..privacy.ckks import CkksParams, make_context

            self.params = CkksParams(cfg.ckks_degree, cfg.ckks_chain(), cfg.ckks_scale_bits)
            self.ctx = make_context(self.params)
        elif self.scheme == "paillier":
            from ..privacy.paillier import keypair

            self.public_key, self.private_key = keypair(cfg.paillier_key_bits)
        elif self.scheme == "secagg":
            from ..privacy.secagg import FixedPoint

            self.codec = FixedPoint(SECAGG_FRAC_BITS, SECAGG_RING_BITS)
        else:
            raise ValueError(f"encryption={self.scheme!r}: expected one of {SECURE_SCHEMES}")

    # --- the round ----------------------------------------------------------
    def real_clients(self, t: int, M: int, n_dropped: int = 0) -> np.ndarray:
        """Which of the round's M uploaders are protected for real (the others are summed in plaintext). With
        dropouts under secure aggregation, `_secagg_dropout`'s survivors among them."""
        rng = np.random.default_rng(np.random.SeedSequence([self.cfg.seed, t, STREAM_REAL]))
        size = min(M, self.cfg.he_real_clients)
        if n_dropped and self.scheme == "secagg":
            size = self._real_split(M, n_dropped)[0]
        return np.sort(rng.choice(M, size=size, replace=False))

    def _real_split(self, M: int, n_dropped: int) -> tuple[int, int]:
        """(survivors, dropped clients) run for real in a secure-aggregation round with dropouts."""
        n_all = M + n_dropped
        R = min(self.cfg.he_real_clients, n_all)
        R_d = min(n_dropped, R - 1, max(1, R * n_dropped // n_all))
        return min(R - R_d, M), R_d

    def aggregate(self, t: int, up_sent: list[Wire], up_recv: list[Wire], decoded: torch.Tensor,
                  n_pos: np.ndarray, touched: torch.Tensor, setup, ledger: Ledger, n_dropped: int = 0
                  ) -> SecureRound:
        """One round's protected uplink from the M clients that upload (`decoded`'s rows); n_dropped more had been
        sampled and left before uploading (secagg: after the key agreement, so their masks must be removed)."""
        t0 = time.perf_counter()
        M = decoded.shape[0]
        real = self.real_clients(t, M)
        if self.scheme == "paillier":
            rnd = self._paillier(t, up_sent, up_recv, n_pos, real, ledger)
        else:
            if self.cfg.aggregation == "weighted":
                w = n_pos.astype(np.float64) / n_pos.sum()
            else:  # item_mean: sum / count; weights 1/M keep the sums (and the bitmap count) in [-max|x|, max|x|]
                w = np.full(M, 1.0 / M)
            segs = self._segments(decoded, touched, setup)
            if self.scheme == "ckks":
                scaled = self._ckks_rates is not None and t % self.cfg.he_real_every
                rnd = self._ckks(t, up_sent, segs, w, real[:0] if scaled else real, decoded.shape[2], ledger)
            elif n_dropped:
                rnd = self._secagg_dropout(t, segs, w, n_dropped, decoded.shape[2], ledger)
            else:
                rnd = self._secagg(t, segs, w, real, decoded.shape[2], ledger)
        rnd.wall_s = time.perf_counter() - t0
        return rnd

    def record_down(self, ledger: Ledger, t: int, down_sent: list[Wire], rnd: SecureRound, receivers: int) -> np.ndarray:
        """Downlink: the encrypted aggregate replaces the plaintext aggregate parts; the rest is recorded as is."""
        if self.scheme == "secagg":  # the server unmasked the sum and broadcasts like a plain run
            sizes = ledger.record(t, "down", down_sent, receivers=receivers)
        else:
            keep = [w for w in down_sent if w.name not in AGGREGATE_PARTS[self.cfg.method]]
            sizes = ledger.record(t, "down", keep, receivers=receivers) if keep else np.zeros(1, np.int64)
        for name, kind, payload, *to in rnd.down:  # a 4th item: sent to fewer receivers (counted in down_only_bytes)
            one = _record(ledger, t, "down", name, kind, np.array([payload]), to[0] if to else receivers)
            if not to:
                sizes = sizes + one
        return sizes

    # --- what each client protects -----------------------------------------
    def _segments(self, decoded: torch.Tensor, touched: torch.Tensor, setup) -> list[dict[str, np.ndarray]]:
        return segments(self.cfg, self.scheme, decoded, touched, setup)

    def _assemble(self, sums: dict[str, np.ndarray], M: int, k: int) -> torch.Tensor:
        return assemble(self.cfg, self.n_items, sums, M, k)

    @staticmethod
    def _plain_sums(segs, w, members) -> dict[str, np.ndarray]:
        acc: dict[str, np.ndarray] = {}
        for m in members:
            for name, v in segs[m].items():
                acc[name] = acc[name] + w[m] * v if name in acc else w[m] * v
        return acc

    # --- CKKS ---------------------------------------------------------------
    def _ckks(self, t, up_sent, segs, w, real, k, ledger) -> SecureRound:
        """A CKKS round: the `real` clients encrypt for real, the server sums their ciphertexts and they decrypt the
        sum; the other clients' bytes and times are scaled from the real ones' per-ciphertext figures. With `real`
        empty (a round between two of every `he_real_every`), every client's are scaled from the last real round's
        figures and the sum is taken in plaintext."""
        from ..privacy.ckks import aggregate as ckks_aggregate
        from ..privacy.ckks import decrypt_aggregate, encrypt_update

        M, p = len(segs), self.params
        rates = {} if len(real) else self._ckks_rates  # per ciphertext: bytes, encryption, server term, decryption
        peak = float(np.max([np.max(np.abs(v)) for s in segs for v in s.values()]))  # NaN propagates
        if not np.isfinite(peak):
            raise ValueError(f"round {t}: the updates contain NaN or inf (training diverged); CKKS cannot encrypt them")
        if peak >= p.max_abs_value:
            raise ValueError(f"round {t}: update values up to {peak:.3g} exceed the CKKS headroom |x| < "
                             f"{p.max_abs_value:g} (first prime {p.coeff_mod_bit_sizes[0]} bits, scale "
                             f"2^{p.global_scale_bits}); lower ckks_scale_bits or raise the first prime")
        n_ct = np.array([sum(p.n_ciphertexts(v.size) for v in s.values()) for s in segs])
        # clients: encrypt for real
        cts: dict[int, dict[str, list[bytes]]] = {}
        enc_s = np.zeros(M)
        for m in real:
            t0 = time.perf_counter()
            cts[m] = {name: encrypt_update(self.ctx, v) for name, v in segs[m].items()}
            enc_s[m] = time.perf_counter() - t0
        if len(real):
            ct_bytes = [len(c) for m in real for cl in cts[m].values() for c in cl]
            rates["ct_bytes"] = float(np.mean(ct_bytes))
            rates["enc_s"] = enc_s[real].sum() / n_ct[real].sum()
        per_ct_bytes, per_ct_enc = rates["ct_bytes"], rates["enc_s"]
        # server: weighted sum per segment over the real clients that sent it (public context only)
        names = sorted({n for s in segs for n in s})
        real_names = [n for n in names if any(n in cts[m] for m in real)]
        t0 = time.perf_counter()
        agg_cts = {}
        for n in real_names:
            who = [m for m in real if n in cts[m]]
            agg_cts[n] = ckks_aggregate([cts[m][n] for m in who], w[who], self.ctx)
        t_srv = time.perf_counter() - t0
        # clients: decrypt the aggregate
        t0 = time.perf_counter()
        dec = {n: decrypt_aggregate(self.ctx, agg_cts[n], next(s[n].size for s in segs if n in s)) for n in real_names}
        t_dec = time.perf_counter() - t0
        ref = self._plain_sums(segs, w, real)
        check = max((_rel_err(dec[n], ref[n]) for n in real_names), default=float("nan"))
        rest = self._plain_sums(segs, w, [m for m in range(M) if m not in set(real.tolist())])
        sums = {n: dec.get(n, 0.0) + rest.get(n, 0.0) for n in names}
        extrap = len(real) < M
        # bytes: real ones measured, the others = their ciphertext count x the measured mean
        parts = [self.agg_name] + (["item_mask"] if "item_mask" in names else [])

        up_parts = {}
        for n in parts:
            sizes = np.zeros(M, np.int64)
            for m in range(M):
                mine = part_members(n, segs[m])
                if m in cts:
                    sizes[m] = _measured(n, "ciphertext", _pack([c for x in mine for c in cts[m][x]]))
                else:
                    c = sum(p.n_ciphertexts(segs[m][x].size) for x in mine)
                    sizes[m] = int(round(c * (per_ct_bytes + LEN_PREFIX)))
            up_parts[n] = sizes
        up_bytes = np.zeros(M, np.int64)
        clear = [wi for wi in up_sent if wi.kind not in FLOAT_KINDS and wi.name != "item_mask"]  # SCoLR's S_u
        if clear:
            up_bytes += ledger.record(t, "up", clear)
        for n, sizes in up_parts.items():
            up_bytes += _record(ledger, t, "up", n, "ciphertext", sizes)
        # downlink: the aggregate ciphertexts (segments no real client sent: scaled like the uplink)
        if agg_cts:
            rates["agg_bytes"] = float(np.mean([len(c) for cl in agg_cts.values() for c in cl]))
        per_agg_bytes = rates["agg_bytes"]
        down = []
        for n in up_parts:
            mine = part_members(n, names)
            real_blob = _pack([c for x in mine if x in agg_cts for c in agg_cts[x]])
            missing = sum(p.n_ciphertexts(next(s[x].size for s in segs if x in s)) for x in mine if x not in agg_cts)
            down.append((n, "ciphertext", _measured(n, "ciphertext", real_blob)
                         + int(round(missing * (per_agg_bytes + LEN_PREFIX)))))
        # times
        terms_real = sum(len(agg_cts[n]) * sum(1 for m in real if n in cts[m]) for n in real_names)
        terms_all = int(n_ct.sum())
        n_agg_real = sum(len(v) for v in agg_cts.values())
        n_agg_all = sum(p.n_ciphertexts(next(s[x].size for s in segs if x in s)) for x in names)
        if len(real):
            rates.update(term_s=t_srv / terms_real, dec_s=t_dec / n_agg_real)
        server_s = t_srv if not extrap else rates["term_s"] * terms_all
        dec_s = rates["dec_s"] * n_agg_all
        self._ckks_rates = rates
        client_enc = np.where(np.isin(np.arange(M), real), enc_s, n_ct * per_ct_enc)
        view = None
        if self.keep_view:
            view = {"scheme": "ckks", "real": real.tolist(),
                    "upload": {int(m): [c for cl in cts[m].values() for c in cl] for m in real},
                    "aggregate_ciphertexts": [c for cl in agg_cts.values() for c in cl]}
        return SecureRound(self._assemble(sums, M, k), up_bytes, client_enc + dec_s, server_s,
                           extrap or n_agg_all != n_agg_real, check, len(real), down=down, view=view)

    # --- secure aggregation by pairwise masks ---------------------------------
    def _unmasked(self, t, total, masked, flat, w, real, n_parties, names, sizes_n, ledger):
        """Check the real unmasked sum (bit for bit against the sum of the encodings), add the other clients' part in
        plaintext, split the sum by segment, and record the survivors' masked vectors. Returns (sums, check error,
        uplink bytes per client)."""
        from ..privacy.secagg import SecureAggregationError

        codec, M = self.codec, len(flat)
        ring = np.zeros(total.size, np.uint64)
        for m in real:
            ring = codec.add(ring, codec.encode(w[m] * flat[m], n_parties))
        if not np.array_equal(codec.decode(ring), total):
            raise SecureAggregationError(f"round {t}: unmasked sum differs from the sum of the encodings")
        check = _rel_err(total, sum(w[m] * flat[m] for m in real))
        others = [m for m in range(M) if m not in set(np.asarray(real).tolist())]
        S = total + sum((w[m] * flat[m] for m in others), np.zeros_like(total))
        sums, off = {}, 0
        for n, size in zip(names, sizes_n):
            sums[n] = S[off: off + size]
            off += size
        # bytes: a masked vector is n uint64 words for every client (measured on a real one)
        part = "+".join(names)
        one = codec.wire_bytes(next(iter(masked.values())))
        wire = np.full(M, _measured(part, "ciphertext", one), np.int64)
        return sums, check, _record(ledger, t, "up", part, "ciphertext", wire)

    def _secagg(self, t, segs, w, real, k, ledger) -> SecureRound:
        from ..privacy.secagg import DH_PUBLIC_BYTES, secure_aggregate

        M, codec = len(segs), self.codec
        names = list(segs[0])  # same layout for every client
        flat = [np.concatenate([s[n] for n in names]) for s in segs]
        sizes_n = [segs[0][n].size for n in names]
        X = np.stack([flat[m] for m in real])
        total, rep = secure_aggregate(X, w[real], codec=codec, round_id=t, threshold=len(real))
        sums, check, up_bytes = self._unmasked(t, total, rep.masked, flat, w, real, len(real), names, sizes_n, ledger)
        up_bytes = up_bytes + _record(ledger, t, "up", "secagg.public_key", "meta", np.full(M, DH_PUBLIC_BYTES))
        down = [("secagg.public_keys", "meta", (M - 1) * DH_PUBLIC_BYTES)]  # the server relays the others' keys
        # times: key agreement is one key generation + (M - 1) agreements per client, masking (M - 1) masks
        R = len(real)
        per_ka = rep.key_agreement_s / (R * R)
        per_mask = rep.mask_s_per_client / max(R - 1, 1)
        client = np.full(M, per_ka * M + per_mask * (M - 1))
        server_s = rep.server_s * M / R
        view = None
        if self.keep_view:
            view = {"scheme": "secagg", "real": real.tolist(),
                    "upload": {int(m): rep.masked[i] for i, m in enumerate(real)}, "layout": list(zip(names, sizes_n))}
        return SecureRound(self._assemble(sums, M, k), up_bytes, client, server_s, R < M, check, R, down=down,
                           view=view)

    def _secagg_dropout(self, t, segs, w, n_dropped, k, ledger) -> SecureRound:
        """Secure aggregation of a round where n_dropped sampled clients left after the key agreement.

        For real: `he_real_clients` of the sampled clients run the protocol, survivors and dropped ones in about
        the cohort's proportion (at least one of each), so the server really removes a dropped client's masks
        from the seeds the survivors reveal. The threshold was checked on the whole cohort before the round
        (`dropout.check_survivors`); the real subset uses the same share, lowered to its survivors if rounding
        would leave it short."""
        from ..privacy.secagg import DH_PUBLIC_BYTES, secure_aggregate
        from .dropout import threshold

        M, D, codec = len(segs), n_dropped, self.codec
        n_all = M + D
        R_s, R_d = self._real_split(M, D)
        real = self.real_clients(t, M, D)
        names = list(segs[0])
        flat = [np.concatenate([s_[n] for n in names]) for s_ in segs]
        sizes_n = [segs[0][n].size for n in names]
        n_real = R_s + R_d
        X = np.zeros((n_real, flat[0].size))  # the dropped ones' rows never leave them (never masked or sent)
        X[:R_s] = np.stack([flat[m] for m in real])
        w_real = np.concatenate([w[real], np.zeros(R_d)])
        total, rep = secure_aggregate(X, w_real, dropped=range(R_s, n_real), codec=codec, round_id=t,
                                      threshold=min(threshold(n_real, self.cfg.secagg_threshold), R_s))
        # the survivors' masked vectors; public keys from every sampled client, and each survivor's revealed seeds
        # (one per dropped client; size measured on the real reveals)
        sums, check, up_bytes = self._unmasked(t, total, rep.masked, flat, w, real, n_real, names, sizes_n, ledger)
        keys = _record(ledger, t, "up", "secagg.public_key", "meta", np.full(n_all, DH_PUBLIC_BYTES))
        up_bytes = up_bytes + keys[:M]
        seed_bytes = rep.revealed_seed_bytes // (R_s * R_d)
        up_bytes = up_bytes + _record(ledger, t, "up", "secagg.revealed_seeds", "meta", np.full(M, D * seed_bytes))
        reveal_request = 4 * D  # the dropped clients' indices, sent to the survivors
        down = [("secagg.public_keys", "meta", (n_all - 1) * DH_PUBLIC_BYTES),
                ("secagg.dropped", "meta", reveal_request, M)]
        # times: as without dropout, over the sampled cohort; the server adds M vectors and regenerates M x D masks
        per_ka = rep.key_agreement_s / (n_real * n_real)
        per_mask = rep.mask_s_per_client / max(n_real - 1, 1)
        client = np.full(M, per_ka * n_all + per_mask * (n_all - 1))
        server_s = rep.server_s * (M + M * D) / (R_s + R_s * R_d)
        view = None
        if self.keep_view:
            view = {"scheme": "secagg", "real": real.tolist(), "dropped_real": R_d,
                    "upload": {int(m): rep.masked[i] for i, m in enumerate(real)}, "layout": list(zip(names, sizes_n))}
        return SecureRound(self._assemble(sums, M, k), up_bytes, client, server_s, n_real < n_all, check, n_real,
                           down=down, view=view, dropped_up_bytes=int(keys[M:].sum()),
                           down_only_bytes=M * (frame_bytes("secagg.dropped", 0) + reveal_request))

    # --- Paillier, Top-K ------------------------------------------------------
    def _paillier(self, t, up_sent, up_recv, n_pos, real, ledger) -> SecureRound:
        from ..privacy.paillier import EncryptedTopK, aggregate_topk, ciphertext_width, decrypt_sparse, encrypt_topk

        wires = {wi.name: wi for wi in up_recv}
        V = wires["values"].data.double().numpy()
        I = wires["indices"].data.numpy().astype(np.int64)
        M, k = V.shape
        n_total = self.n_items * self.cfg.dim
        w = n_pos.astype(np.float64) / n_pos.sum()
        kr = min(k, self.cfg.he_real_values)
        msgs, blobs, enc_s = [], {}, []
        for m in real:
            t0 = time.perf_counter()
            msg = encrypt_topk(self.public_key, V[m, :kr], I[m, :kr])
            enc_s.append(time.perf_counter() - t0)
            blobs[int(m)] = msg.to_bytes()
            msgs.append(msg)
        t0 = time.perf_counter()
        rebuilt = [EncryptedTopK.from_bytes(self.public_key, blobs[int(m)], msg.indices, msg.exponent)
                   for m, msg in zip(real, msgs)]
        agg = aggregate_topk(rebuilt, w[real])
        t_srv = time.perf_counter() - t0
        t0 = time.perf_counter()
        dec = decrypt_sparse(self.private_key, agg, n_total)
        t_dec = time.perf_counter() - t0
        ref = np.zeros(n_total)
        rest = np.zeros(n_total)
        is_real = set(real.tolist())
        for m in range(M):
            lo = kr if m in is_real else 0
            if lo:
                np.add.at(ref, I[m, :lo], w[m] * V[m, :lo])
            np.add.at(rest, I[m, lo:], w[m] * V[m, lo:])
        check = _rel_err(dec, ref)
        total = dec + rest
        width = ciphertext_width(self.public_key)
        per_value_bytes = len(blobs[int(real[0])]) / kr  # fixed width: exact for every value
        union = int(np.unique(I).size)
        extrap = kr < k or len(real) < M
        # bytes: k ciphertexts per client + one shared exponent; indices in clear
        vals = np.full(M, int(round(per_value_bytes * k)), np.int64)
        clear = [wi for wi in up_sent if wi.kind not in FLOAT_KINDS]
        up_bytes = ledger.record(t, "up", clear)
        up_bytes = up_bytes + _record(ledger, t, "up", "values", "ciphertext", vals)
        up_bytes = up_bytes + _record(ledger, t, "up", "values.exponent", "meta", np.full(M, 4))
        down = [("values", "ciphertext", union * width), ("indices", "indices", union * 4),
                ("values.exponent", "meta", 4)]
        per_value_enc = float(np.sum(enc_s)) / (len(real) * kr)
        server_s = t_srv / (len(real) * kr) * M * k
        dec_s = t_dec / max(len(agg), 1) * union
        client = np.full(M, per_value_enc * k + dec_s)
        view = None
        if self.keep_view:
            view = {"scheme": "paillier", "real": real.tolist(), "upload": {int(m): blobs[int(m)] for m in real},
                    "indices": I}
        agg_t = torch.from_numpy(total.reshape(self.n_items, self.cfg.dim).astype(np.float32))
        return SecureRound(agg_t, up_bytes, client, server_s, extrap, check, len(real), down=down, view=view)


def make_secure_mod(cfg: RunConfig, n_items: int) -> SecureMod | None:
    return None if cfg.encryption == "none" else SecureMod(cfg, n_items)

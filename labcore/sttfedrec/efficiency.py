"""Per-device cost of one training round and of online inference: FL-DSSM / FL-CLSM vs STTFedRec (Table 3 form).

Everything is measured on this machine, one device at a time (the paper
serializes the clients on an M1 laptop to emulate phones):

Training, one round of one device.
* FL (naive, Fig. 2(b)): hash the raw records of its requested items into
  trigram bags, run both towers forward and backward on its request.
* STTFedRec: run the user tower forward and backward against the item
  embeddings it received; then its part of the chain: encode the gradient
  in fixed point, draw the share for its successor, and add the share it got
  from its predecessor to what it keeps.

Inference, one device ranking items.
* FL: hash the raw catalogue, run the item tower on every item, the user
  tower once, score and take the top 10.
* STTFedRec: score the received item embeddings with the cached user
  embedding and take the top 10 (the user embedding is computed once after
  training and cached, section 3.3 "Online inferring").

Times are medians over `reps` devices (different users and requests) in ms,
multiplied by `device_factor` to emulate a slower device (1.0 = this CPU, one
thread). Bytes are `len()` of the serialized parts of that device's real
messages (`frameworks.training_parts`), per link: device<->server,
device->device (the chain's share), device->aggregation server.

Inference payload. FL downloads the raw catalogue once (the movie records;
the paper's 0.14 MB for ML-1M). STTFedRec downloads item embeddings: for a
candidate slate of `candidates` items (100 x 128 float32 = 0.05 MB, the
paper's figure) or for the whole catalogue (3,706 x 128 float32 = 1.9 MB on
ML-1M: more than the raw text, because a movie record is ~40 bytes).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from ..fed.sampling import round_rng, sample_clients
from ..net.message import array_part, bytes_part, serialize_part
from ..privacy.chain import chain_aggregate
from ..privacy.secagg import FixedPoint
from .config import STTConfig
from .features import TowerInput, bucket, letter_trigrams, words
from .frameworks import (LINKS, Bundle, Requests, build_requests, flat, load_bundle, n_params, obfuscated_request,
                         ring_part, training_parts, use_one_thread)
from .towers import TwoTower, cosine, request_loss

TABLE3_PAPER = pd.DataFrame([  # Table 3, MovieLens columns (ms and MB)
    {"model": "FL-DSSM", "train_ms": 1170, "infer_ms": 4090, "total_ms": 5260, "train_mb": 5.42, "infer_mb": 0.14,
     "total_mb": 5.56},
    {"model": "STTFedRec-DSSM", "train_ms": 228, "infer_ms": 55, "total_ms": 283, "train_mb": 2.71, "infer_mb": 0.05,
     "total_mb": 2.76},
    {"model": "FL-CLSM", "train_ms": 4800, "infer_ms": 23860, "total_ms": 28660, "train_mb": 4.70, "infer_mb": 0.14,
     "total_mb": 4.84},
    {"model": "STTFedRec-CLSM", "train_ms": 889, "infer_ms": 55, "total_ms": 944, "train_mb": 2.35, "infer_mb": 0.05,
     "total_mb": 2.40},
])
TABLE3_PAPER_IMPROVEMENT = {"dssm": {"time": 18, "comm": 2}, "clsm": {"time": 28, "comm": 2}}
MB = 2**20


def featurize(records: list[str], n_features: int) -> TowerInput:
    """What a naive FL device does with raw item records: words -> letter trigrams -> hashed bags and sequences."""
    from .features import Side

    vocab: dict[str, int] = {}
    bags: list[dict[int, int]] = []
    seqs = []
    for rec in records:
        title, _, genres = rec.partition("::")
        s = []
        for w in words(title + " " + genres.replace("|", " ")):
            if w not in vocab:
                vocab[w] = len(bags)
                b: dict[int, int] = {}
                for t in letter_trigrams(w):
                    f = bucket(t, n_features)
                    b[f] = b.get(f, 0) + 1
                bags.append(b)
            s.append(vocab[w])
        seqs.append(s)
    side = Side(seqs, bags)
    return side.batch(np.arange(len(records)))


def _ms(f, reps: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return 1000 * (time.perf_counter() - t0) / reps


def device_round(model: TwoTower, bundle: Bundle, req: Requests, m: int, framework: str, gamma: float,
                 codec: FixedPoint, rng: np.random.Generator) -> dict:
    """Measured ms of device m's training work in one round (and the gradients, for its messages)."""
    fs, cat = bundle.features, bundle.catalog
    rows = req.client_rows(m)
    sub = Requests(req.clients[m : m + 1], req.items[rows], req.labels[rows], np.zeros(len(rows), np.int64))
    R, T = sub.items.shape
    out: dict = {}
    if framework == "fl":
        request = obfuscated_request(sub.items)
        t0 = time.perf_counter()
        x_items = featurize([cat.item_raw[i] for i in request], fs.n_features)
        t1 = time.perf_counter()
        I = model.item(x_items)[torch.from_numpy(np.searchsorted(request, sub.items.reshape(-1)))].view(R, T, -1)
        u = model.user(fs.users.batch(sub.clients))
        loss = request_loss(u.expand(R, -1), I, torch.from_numpy(sub.labels), gamma).mean()
        pu, pv = list(model.user.parameters()), list(model.item.parameters())
        g = torch.autograd.grad(loss, pu + pv)
        t2 = time.perf_counter()
        out.update(featurize_ms=1000 * (t1 - t0), towers_ms=1000 * (t2 - t1), chain_ms=0.0,
                   grads={"user": list(g[: len(pu)]), "item": list(g[len(pu) :]), "loss": float(loss.detach())})
    else:
        union = obfuscated_request(req.items)  # the round's union, announced by the server
        with torch.no_grad():
            E = model.item(fs.items.batch(union))  # server side, not timed
        request = obfuscated_request(sub.items)
        received = E[torch.from_numpy(np.searchsorted(union, request))].clone().requires_grad_(True)
        t1 = time.perf_counter()
        I = received[torch.from_numpy(np.searchsorted(request, sub.items.reshape(-1)))].view(R, T, -1)
        u = model.user(fs.users.batch(sub.clients))
        loss = request_loss(u.expand(R, -1), I, torch.from_numpy(sub.labels), gamma).mean()
        pu = list(model.user.parameters())
        g = torch.autograd.grad(loss, pu + [received])
        t2 = time.perf_counter()
        emb = torch.zeros(len(union), E.shape[1])
        emb[torch.from_numpy(np.searchsorted(union, request))] = g[-1]
        vec = np.concatenate([flat(list(g[:-1])).double().numpy(), emb.double().numpy().reshape(-1), [loss.item()]])
        predecessor_share = codec.random(rng, vec.size)
        t3 = time.perf_counter()
        enc = codec.encode(vec, len(req.clients))
        share2 = codec.random(rng, vec.size)
        mixed = codec.add(codec.sub(enc, share2), predecessor_share)
        t4 = time.perf_counter()
        del mixed
        out.update(featurize_ms=0.0, towers_ms=1000 * (t2 - t1), chain_ms=1000 * (t4 - t3),
                   grads={"user": list(g[:-1]), "emb": emb, "loss": float(loss.detach()),
                          "item_emb": E.numpy()}, union=union)
    out["train_ms"] = out["featurize_ms"] + out["towers_ms"] + out["chain_ms"]
    return out


def device_inference(model: TwoTower, bundle: Bundle, user: int, framework: str, candidates: int | None,
                     rng: np.random.Generator, k: int = 10) -> dict:
    """Measured ms of ranking items on the device."""
    fs, cat = bundle.features, bundle.catalog
    model.eval()
    with torch.no_grad():
        if framework == "fl":
            t0 = time.perf_counter()
            x = featurize(list(cat.item_raw), fs.n_features)
            t1 = time.perf_counter()
            V = torch.cat([model.item(_slice(x, lo, lo + 1024)) for lo in range(0, x.size, 1024)])
            u = model.user(fs.users.batch(np.array([user])))
            s = cosine(u, V)
            top = torch.topk(s, k).indices
            t2 = time.perf_counter()
            res = {"featurize_ms": 1000 * (t1 - t0), "infer_ms": 1000 * (t2 - t0)}
        else:
            ids = np.arange(cat.n_items) if candidates is None else rng.choice(cat.n_items, candidates, replace=False)
            V = model.item(fs.items.batch(ids))  # server side, not timed
            u = model.user(fs.users.batch(np.array([user])))  # cached after training
            t0 = time.perf_counter()
            s = cosine(u, V)
            top = torch.topk(s, min(k, len(ids))).indices
            t1 = time.perf_counter()
            res = {"featurize_ms": 0.0, "infer_ms": 1000 * (t1 - t0)}
    model.train()
    del top
    return res


def _slice(x: TowerInput, lo: int, hi: int) -> TowerInput:
    """Rows lo..hi-1 of a batched TowerInput (bags and sequences)."""
    hi = min(hi, x.size)
    off = x.offsets
    a = int(off[lo])
    b = int(off[hi]) if hi < x.size else x.ids.shape[0]
    seq = x.seq[lo:hi]
    return TowerInput(x.ids[a:b], x.weights[a:b], off[lo:hi] - a, seq, x.word_ids, x.word_weights, x.word_offsets)


def inference_parts(framework: str, bundle: Bundle, candidates: int | None, d: int = 128) -> list:
    cat = bundle.catalog
    if framework == "fl":
        return [bytes_part("raw_catalog", "values", cat.raw_item_bytes())]
    n = cat.n_items if candidates is None else candidates
    name = "catalog_embeddings" if candidates is None else "candidate_embeddings"
    ids = array_part("candidate_ids", "indices", np.arange(n, dtype=np.int32))
    return [array_part(name, "values", np.zeros((n, d), np.float32)), ids]


def table3(cfg: STTConfig | None = None, towers=("dssm", "clsm"), reps: int = 20, device_factor: float = 1.0,
           candidates: int = 100, rings: tuple[tuple[int, int], ...] = ((64, 24), (32, 20)), seed: int = 0,
           bundle: Bundle | None = None, model_state: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3: per-device training / inference time and bytes, FL vs STTFedRec, for each tower.

    The measurements of FL and STTFedRec alternate device by device, so both see the same machine
    load. `rings`: (ring bits, fractional bits) of the chain's fixed point; the first is the one the
    training runs use, the others change only the chain's message sizes (rows "STTFedRec-X/ring32").
    Returns (summary, parts): one row per model; one row per (model, phase, part) with measured bytes.
    """
    use_one_thread()
    cfg = cfg or STTConfig(dataset="ml-1m")
    bundle = bundle or load_bundle(cfg)
    candidates = min(candidates, bundle.catalog.n_items)
    rows, part_rows = [], []
    for tower in towers:
        torch.manual_seed(seed)
        model = TwoTower(tower, cfg.n_features, cfg.dropout, cfg.init_std)
        if model_state and tower in model_state:
            model.load_state_dict(model_state[tower])
        clients = sample_clients(bundle.catalog.n_users, cfg.clients_per_round, round_rng(seed, 0, 101))
        req = build_requests(bundle, clients, cfg.n_click, cfg.n_neg, cfg.batches_per_round, round_rng(seed, 0, 102))
        codec = FixedPoint(*reversed(rings[0]))
        rng = np.random.default_rng([seed, 3])
        meas: dict[str, list] = {"fl": [], "sttfedrec": []}
        inf: dict[str, list] = {"fl": [], "sttfedrec": [], "catalogue": []}
        for fw in ("fl", "sttfedrec"):  # warm-up
            device_round(model, bundle, req, 0, fw, cfg.gamma, codec, rng)
        for rep in range(reps):
            m = rep % len(clients)
            for fw in ("fl", "sttfedrec"):
                meas[fw].append(device_round(model, bundle, req, m, fw, cfg.gamma, codec, rng))
            if rep < max(3, reps // 4):
                for fw in ("fl", "sttfedrec"):
                    inf[fw].append(device_inference(model, bundle, int(clients[m]), fw, candidates, rng))
                inf["catalogue"].append(device_inference(model, bundle, int(clients[m]), "sttfedrec", None, rng))
        med = lambda xs, k: float(np.median([x[k] for x in xs])) * device_factor  # noqa: E731
        variants = [("fl", rings[0])] + [("sttfedrec", r) for r in rings]
        for framework, (ring_bits, frac_bits) in variants:
            label = ("FL-" if framework == "fl" else "STTFedRec-") + tower.upper()
            if framework == "sttfedrec" and (ring_bits, frac_bits) != rings[0]:
                label += f"/ring{ring_bits}"
            vcodec = FixedPoint(frac_bits, ring_bits)
            m0 = meas[framework][0]
            peak = float(max(float(g.abs().max()) for g in m0["grads"]["user"]))
            parts = training_parts(framework, 0, req, model, m0["grads"], bundle.catalog, vcodec, ring_bits, rng,
                                   m0.get("union"))
            by_link: dict[str, int] = {}
            for p in parts:
                n = len(serialize_part(p))
                by_link[LINKS[p.name]] = by_link.get(LINKS[p.name], 0) + n
                part_rows.append({"model": label, "phase": "training", "part": p.name, "link": LINKS[p.name],
                                  "kind": p.kind, "bytes": n, "bits": p.bits})
            inf_bytes = {}
            for cand in (candidates, None):
                for p in inference_parts(framework, bundle, cand):
                    n = len(serialize_part(p))
                    inf_bytes[cand] = inf_bytes.get(cand, 0) + n
                    if framework == "sttfedrec" or cand == candidates:
                        phase = "inference" if framework == "fl" else f"inference ({'catalogue' if cand is None else cand})"
                        part_rows.append({"model": label, "phase": phase, "part": p.name,
                                          "link": LINKS.get(p.name, "server->device"), "kind": p.kind, "bytes": n,
                                          "bits": p.bits})
            train_bytes = sum(by_link.values())
            server_link = sum(v for k, v in by_link.items() if k != "device->device")
            train_ms = med(meas[framework], "featurize_ms") + med(meas[framework], "towers_ms")
            infer_ms = med(inf[framework], "infer_ms")
            row = {
                "model": label, "tower": tower, "framework": framework, "ring_bits": ring_bits if framework != "fl" else 0,
                "frac_bits": frac_bits if framework != "fl" else 0, "device_factor": device_factor,
                "train_ms": train_ms, "featurize_ms": med(meas[framework], "featurize_ms"),
                "towers_ms": med(meas[framework], "towers_ms"), "chain_ms": med(meas[framework], "chain_ms"),
                "train_with_chain_ms": train_ms + med(meas[framework], "chain_ms"),
                "infer_ms": infer_ms,
                "infer_catalogue_ms": med(inf["catalogue"] if framework == "sttfedrec" else inf["fl"], "infer_ms"),
                "total_ms": train_ms + infer_ms,
                "train_mb": train_bytes / MB, "train_mb_server_links": server_link / MB,
                "train_mb_device_to_device": by_link.get("device->device", 0) / MB,
                "infer_mb": (inf_bytes[candidates] if framework == "sttfedrec" else inf_bytes[None]) / MB,
                "infer_catalogue_mb": inf_bytes[None] / MB,
                "user_params": n_params(model.user), "item_params": n_params(model.item),
                "peak_abs_user_grad": peak,
                "ring_limit_per_value": vcodec.max_abs / len(clients) if framework != "fl" else float("nan"),
                "request_items": int(len(obfuscated_request(req.items[req.client_rows(0)]))),
                "union_items": int(len(obfuscated_request(req.items))), "candidates": candidates, "reps": reps,
            }
            row["total_mb"] = row["train_mb"] + row["infer_mb"]
            rows.append(row)
    out = pd.DataFrame(rows)
    for tower in towers:
        fl = out[(out.tower == tower) & (out.framework == "fl")].iloc[0]
        sel = (out.tower == tower) & (out.framework == "sttfedrec")
        for col in ("train_ms", "train_with_chain_ms", "infer_ms", "total_ms", "train_mb", "train_mb_server_links",
                    "infer_mb", "total_mb"):
            out.loc[sel, f"x_{col}"] = fl[col if col != "train_mb_server_links" else "train_mb"] / out.loc[sel, col]
    return out, pd.DataFrame(part_rows)


# --- the chain as K grows (Fig. 5 / 6) ------------------------------------------------------------------
def _device_chain_s(g: np.ndarray, codec: FixedPoint, mode: str, rng: np.random.Generator) -> float:
    """Seconds of one device's own chain work on its vector g.

    shares: encode, draw the share for its successor, subtract it, add the predecessor's share.
    relay: encode and add to the running sum it received. (The chain simulation itself handles
    all K devices' arrays at once, so its per-client average also measures the simulator's memory.)
    """
    incoming = codec.random(rng, g.size)
    t0 = time.perf_counter()
    enc = codec.encode(g, 1)
    if mode == "shares":
        share = codec.random(rng, g.size)
        out = codec.add(codec.sub(enc, share), incoming)
    else:
        out = codec.add(incoming, enc)
    t = time.perf_counter() - t0
    del out
    return t


def _sas_sum_s(n: int, K: int, codec: FixedPoint, rng: np.random.Generator) -> float:
    """Seconds the aggregation server spends adding K uploads of n ring values (only the additions are timed)."""
    acc = np.zeros(n, np.uint64)
    total = 0.0
    for _ in range(K):
        up = codec.random(rng, n)  # what a device uploads is uniform in the ring
        t0 = time.perf_counter()
        acc = codec.add(acc, up)
        total += time.perf_counter() - t0
    return total


def device_chain_ms(n_values: dict[int, int], modes=("shares", "relay"), codec: FixedPoint = FixedPoint(),
                    repeats: int = 15, seed: int = 0) -> dict[tuple[int, str], float]:
    """Milliseconds of one device's own chain work (`_device_chain_s`) on its full vector, for each K (n_values[K]
    values) and mode: the least disturbed of `repeats` runs. The Ks take turns, run by run, so that a spell of load
    on a shared machine slows them all alike instead of the one K measured during it."""
    rng = np.random.default_rng([seed, 44])
    g = {K: rng.normal(0, 1e-3, size=n) for K, n in n_values.items()}
    _device_chain_s(g[max(n_values, key=n_values.get)], codec, "shares", rng)  # warm-up: the first page faults
    best: dict[tuple[int, str], float] = {}
    for _ in range(repeats):
        for K in n_values:
            for mode in modes:
                t = _device_chain_s(g[K], codec, mode, rng)
                best[K, mode] = min(best.get((K, mode), float("inf")), t)
    return {k: 1000 * t for k, t in best.items()}


def chain_cost_sweep(n_values: int, Ks=(25, 50, 100, 200), codec: FixedPoint = FixedPoint(), modes=("shares", "relay"),
                     measured_values: int = 1 << 16, seed: int = 0, ring_bits: int = 64,
                     repeats: int = 3) -> pd.DataFrame:
    """Measured chain cost per round for K clients, each holding an n_values vector (one client's gradient).

    * exact / sequential_hops / rerouting: the real chain (`chain_aggregate`, uniform ring shares)
      on a `measured_values`-column slice of K random gradients (the sum must equal the ring sum).
    * device_ms: one device's own operations on its full-length vector (`_device_chain_s`), the
      least disturbed of `repeats` runs (none: NaN, for a caller that times the devices itself).
    * sas_ms: the aggregation server adding K full-length uploads (shares mode; in relay mode it
      receives the finished sum).
    * bytes: serialized parts of the full length (`ring_part`).
    """
    rows = []
    m = min(n_values, measured_values)
    rng = np.random.default_rng([seed, 43])
    part_bytes = len(serialize_part(ring_part("mixed", np.zeros(n_values, np.uint64), ring_bits)))
    g_full = rng.normal(0, 1e-3, size=n_values)
    if repeats:
        _device_chain_s(g_full, codec, "shares", rng)  # warm-up: the first large allocations cost page faults
    for K in Ks:
        G = rng.normal(0, 1e-3, size=(K, m))
        for mode in modes:
            total, rep = chain_aggregate(G, mode=mode, codec=codec, seed=seed)
            ring = np.zeros(m, np.uint64)
            for row in G:
                ring = codec.add(ring, codec.encode(row, K))
            exact = bool(np.array_equal(codec.decode(ring), total))
            dev = min((_device_chain_s(g_full, codec, mode, rng) for _ in range(repeats)), default=float("nan"))
            sas = _sas_sum_s(n_values, K, codec, rng) if mode == "shares" else 0.0
            rows.append({"K": K, "mode": mode, "n_values": n_values, "device_ms": 1000 * dev, "sas_ms": 1000 * sas,
                         "device_bytes_sent": (2 if mode == "shares" else 1) * part_bytes,
                         "sas_bytes_received": len(rep.upload_bytes) * part_bytes,
                         "sequential_hops": rep.sequential_hops, "checked_values": m, "exact": exact})
    return pd.DataFrame(rows)


# --- what a device uploads to the aggregation server ------------------------------------------------------------
def sas_upload_parts(n_user: int, union: int, d: int, ring_bits: int) -> list:
    """The three ring parts a device uploads to the aggregation server (mixed gradient, embeddings, loss)."""
    z = np.zeros
    return [ring_part("mixed_user_grad", z(n_user, np.uint64), ring_bits),
            ring_part("mixed_emb_grad", z(union * d, np.uint64), ring_bits), ring_part("mixed_loss", z(1, np.uint64), ring_bits)]

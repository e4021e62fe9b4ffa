"""A curious server on real engine runs: which items did each client interact with?

`curious_server(cfg, rounds)` runs a few rounds of a configuration and, every
round, applies `recover_interacted_items` (privacy/attacks.py) to what the server
actually receives from each client under `cfg.encryption`:

  none      the client's update in the space the server averages: Delta Q_u
            (FedMF), A_u (CoLR: its rows move along +-B^T p_u just as FedMF's
            move along +-p_u, so the low-rank factor leaks the same way), the
            dense reconstruction of a Top-K message; with aggregation="item_mean"
            also the item bitmap, in clear;
  ckks      the serialized ciphertexts (the server holds no secret key);
  secagg    the masked ring vector;
  paillier  the Paillier ciphertext bytes, and the Top-K indices, in clear.

Scores are precision and recall of the recovered set against the client's
true positives (its training items: every one is in its local samples each
round), averaged over the attacked clients, with the base rate (chance
precision = positives / items), the lift = precision / base rate, and the
chance recall (the recall of a random guess of as many items).

Besides each client's upload, the round's aggregate is attacked against each
participant: it is what the server learns under secagg (and in plain runs),
and what every decrypting client learns under ckks / paillier. With tens of
clients per round it is close to chance for any one of them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..privacy.attacks import attack_scores, recover_interacted_items, server_view_rows, topk_index_leak

SCORE_KEYS = ("precision", "recall", "base_rate", "lift", "chance_recall")


def _positives(plan, m: int, n_items: int) -> np.ndarray:
    mask = np.zeros(n_items, bool)
    sel = (plan.sample_client == m) & (plan.sample_label == 1)
    mask[plan.sample_item[sel]] = True
    return mask


def _mean(rows: list[dict]) -> dict:
    if not rows:
        return {k: float("nan") for k in SCORE_KEYS} | {"clients": 0}
    return {k: float(np.mean([r[k] for r in rows])) for k in SCORE_KEYS} | {"clients": len(rows)}


def played_config(cfg, rounds: int, real_clients: int | None = None):
    """The configuration the attack runs for `cfg`: `rounds` rounds, no evaluation, under encryption
    `real_clients` clients a round protected for real (all of them if None), in every round (the server reads what
    each round really sent)."""
    changes = {"rounds": rounds, "eval_every": 10**6, "rank_every": 0}
    if cfg.encryption != "none":
        changes["he_real_clients"] = real_clients or cfg.clients_per_round
    if cfg.encryption == "ckks":
        changes["he_real_every"] = 1
    return cfg.replace(**changes)


def curious_server(cfg, rounds: int = 3, data=None, real_clients: int | None = None,
                   should_stop=None) -> dict | None:
    """Run `rounds` rounds of `cfg` and attack every client's upload as the server sees it.

    real_clients: under encryption, how many clients per round are protected
    for real (only those have real ciphertexts / masked vectors to attack);
    None = every client of the round. Returns a dict with the mean scores per
    view ("upload", "aggregate", and when they apply "bitmap" and
    "topk_indices" / "topk_indices_touched") and the per-client rows.
    should_stop: checked before each round; when it returns True the attack ends and returns None (the app
    stops an attack nobody watches any more).
    """
    from ..fed.engine import Simulation, load_data

    run_cfg = played_config(cfg, rounds, real_clients)
    sim = Simulation(run_cfg, data if data is not None else load_data(run_cfg))
    sim.keep_view = True
    if sim.secure is not None:
        sim.secure.keep_view = True  # the protected uploads themselves (ciphertexts, masked vectors)
    N = sim.data.n_items
    rows = []
    for _ in range(rounds):
        if should_stop is not None and should_stop():
            return None
        sim.step()
        v = sim.view
        plan, decoded, sec = v["plan"], v["decoded"], v["secure"]
        k = decoded.shape[2]
        agg_guess = recover_interacted_items(v["aggregate"].double().numpy())
        bitmap = next((w for w in v["up_sent"] if w.name == "item_mask"), None) if sec is None else None
        attacked = range(plan.n_clients) if sec is None else sec["real"]
        for m in attacked:
            truth = _positives(plan, m, N)
            if sec is None:
                seen = decoded[m].double().numpy()
            else:
                seen = server_view_rows(sec["upload"][m], N, k)
            row = {"round": sim.round - 1, "client": int(plan.clients[m])}
            row |= {f"upload_{key}": val for key, val in attack_scores(recover_interacted_items(seen), truth).items()}
            row |= {f"aggregate_{key}": val for key, val in attack_scores(agg_guess, truth).items()}
            if bitmap is not None:  # the clear item bitmap: every item the client trained on
                touched = np.unpackbits(bitmap.data[m].numpy(), bitorder="little")[:N].astype(bool)
                row |= {f"bitmap_{key}": val for key, val in attack_scores(touched, truth).items()}
            if cfg.method == "topk":  # indices travel in clear, with or without encryption
                idx = next(w for w in v["up_sent"] if w.name == "indices").data[m].numpy()
                leaked = topk_index_leak(idx, N, cfg.dim)
                touched_true = np.zeros(N, bool)
                touched_true[plan.sample_item[plan.sample_client == m]] = True
                row |= {f"topk_indices_{key}": val for key, val in attack_scores(leaked, truth).items()}
                row |= {f"topk_indices_touched_{key}": val for key, val in attack_scores(leaked, touched_true).items()}
            rows.append(row)
    table = pd.DataFrame(rows)
    out = {"encryption": cfg.encryption, "method": cfg.method, "dataset": cfg.dataset, "rounds": rounds,
           "per_client": table}
    for view in ("upload", "aggregate", "bitmap", "topk_indices", "topk_indices_touched"):
        cols = [f"{view}_{key}" for key in SCORE_KEYS]
        if cols[0] in table:
            out[view] = _mean([dict(zip(SCORE_KEYS, r)) for r in table[cols].itertuples(index=False)])
    return out


def attack_summary(results: list[dict]) -> pd.DataFrame:
    """One row per (run, view): precision, recall, base rate, lift, clients."""
    rows = []
    for r in results:
        for view in ("upload", "aggregate", "bitmap", "topk_indices", "topk_indices_touched"):
            if view in r:
                rows.append({"method": r["method"], "encryption": r["encryption"], "view": view, **r[view]})
    return pd.DataFrame(rows)

"""What a curious server learns from one client's update, and what protection leaves it.

Plain FedMF. A client trains its user vector p_u and the item table Q on its
positives and sampled negatives, and uploads Delta Q_u (N x d). Rows of items
it did not touch are exactly zero (or only weight-decayed), so the non-zero
rows give away the set {positives + sampled negatives}. With a logistic or
squared loss the gradient of row i is (prediction_i - r_i) * p_u, so every
touched row moves along +p_u (positives, r=1) or -p_u (negatives, r=0): the
top singular direction of the touched rows is +-p_u and the sign of each row's
projection on it separates positives from negatives. Chai et al. (2020) go
further (two consecutive gradients reveal the ratings themselves); the
attack here only needs one update.

`recover_interacted_items` implements that attack; `attack_scores` scores it.
`topk_index_leak` shows what the clear indices of a Top-K message reveal by
themselves. `server_view_rows` + `attack_protected_view` run the same attack on
what the server sees under protection: CKKS ciphertext bytes or masked ring
vectors (uniform noise mod 2**k), or, at best, the aggregate of many clients
(what decryptors see). There it scores at the base rate: chance.
"""
from __future__ import annotations

import numpy as np

ORIENTATIONS = ("auto", "minority", "magnitude")


def synthetic_fedmf_update(
    n_items: int = 500,
    d: int = 16,
    n_pos: int = 20,
    neg_ratio: int = 4,
    lr: float = 0.5,
    local_steps: int = 1,
    weight_decay: float = 0.0,
    init_std: float = 0.1,
    seed: int = 0,
    q: np.ndarray | None = None,
) -> dict:
    """A tiny FedMF client step (numpy), with known positives and sampled negatives.

    Logistic loss on sigmoid(p_u . q_i) over the positives (r=1) and
    neg_ratio x n_pos negatives drawn from the other items (r=0); full-batch
    SGD on p_u and on the touched rows of Q for `local_steps` steps. If
    weight_decay > 0 it is applied to the whole table (as a dense optimizer
    would), so untouched rows move by -lr * weight_decay * q_i instead of 0.
    Returns dict(delta, q, pos_mask, neg_mask) with q the table before the step.
    """
    rng = np.random.default_rng(seed)
    Q0 = rng.normal(0.0, init_std, (n_items, d)) if q is None else np.array(q, dtype=np.float64)
    p = rng.normal(0.0, init_std, d)
    perm = rng.permutation(n_items)
    pos = perm[:n_pos]
    neg = perm[n_pos : n_pos + neg_ratio * n_pos]
    items = np.concatenate([pos, neg])
    r = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    Q = Q0.copy()
    for _ in range(local_steps):
        s = Q[items] @ p
        err = 1.0 / (1.0 + np.exp(-s)) - r  # dL/ds for the logistic loss
        grad_q = err[:, None] * p[None, :]
        grad_p = err @ Q[items]
        if weight_decay:
            Q -= lr * weight_decay * Q
        Q[items] -= lr * grad_q
        p -= lr * grad_p / len(items)
    pos_mask = np.zeros(n_items, bool)
    pos_mask[pos] = True
    neg_mask = np.zeros(n_items, bool)
    neg_mask[neg] = True
    return {"delta": Q - Q0, "q": Q0, "pos_mask": pos_mask, "neg_mask": neg_mask}


def _otsu_threshold(x: np.ndarray) -> float:
    """Threshold maximising the between-class variance of a 1-D sample."""
    xs = np.sort(x)
    n = xs.size
    if n < 2 or xs[0] == xs[-1]:
        return float(xs[0]) if n else 0.0
    csum = np.cumsum(xs)
    k = np.arange(1, n)
    w0, w1 = k / n, (n - k) / n
    m0 = csum[:-1] / k
    m1 = (csum[-1] - csum[:-1]) / (n - k)
    between = w0 * w1 * (m0 - m1) ** 2
    i = int(np.argmax(between))
    return float((xs[i] + xs[i + 1]) / 2)


def touched_rows(delta: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
    """Rows the client touched.

    Exact zeros are the giveaway: if some rows are exactly zero, every non-zero
    row is touched. Otherwise (weight decay moves every row) the decay part is
    removed first when the server knows the table it sent (q: delta_i ~ -c q_i
    for untouched rows, c fitted robustly), then rows are split by an Otsu
    threshold on log row norms.
    """
    D = np.asarray(delta, dtype=np.float64)
    norms = np.linalg.norm(D, axis=1)
    if np.any(norms == 0.0):
        return norms > 0.0
    if q is not None:
        Qm = np.asarray(q, dtype=np.float64)
        qq = np.einsum("ij,ij->i", Qm, Qm)
        ratio = np.einsum("ij,ij->i", D, Qm) / np.where(qq > 0, qq, 1.0)
        c = float(np.median(ratio))  # most rows are untouched: the median is the decay factor
        D = D - c * Qm
        norms = np.linalg.norm(D, axis=1)
    logn = np.log10(norms + 1e-300)
    return logn > _otsu_threshold(logn)


def recover_interacted_items(delta: np.ndarray, q: np.ndarray | None = None, orientation: str = "auto") -> np.ndarray:
    """Guess the items a client interacted with (its positives) from its Delta Q (N x d).

    1. touched rows (see `touched_rows`);
    2. top right-singular vector v of the touched rows (~ +-p_u);
    3. split touched rows by the sign of their projection on v;
    4. decide which side are positives. A singular vector's sign is arbitrary,
       so the attacker uses protocol knowledge: "minority" - negatives are
       sampled at a ratio > 1 per positive, so the smaller side is the
       positives; "magnitude" - the side with the larger mean |projection|
       (right with a squared loss near initialisation, where the negatives'
       predictions are ~0 and they barely move); "auto" uses minority when
       the side sizes differ by more than 20 %, magnitude otherwise.
    Honest limit: for logistic MF without bias terms the update is exactly
    symmetric under (p_u, positives, negatives) -> (-p_u, negatives,
    positives), for any number of local steps: the update itself cannot say
    which side is which, only a prior can. With one negative per positive the
    attack still finds the touched set and its exact two-way split, but the
    labelling is a coin flip.
    Returns a boolean mask over the N items.
    """
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation {orientation!r}: expected one of {ORIENTATIONS}")
    D = np.asarray(delta, dtype=np.float64)
    if D.ndim != 2:
        raise ValueError(f"delta must be (n_items, d), got shape {D.shape}")
    touched = touched_rows(D, q)
    idx = np.flatnonzero(touched)
    out = np.zeros(D.shape[0], bool)
    if idx.size <= 1:
        out[idx] = True
        return out
    rows = D[idx]
    _, _, vt = np.linalg.svd(rows, full_matrices=False)
    proj = rows @ vt[0]
    plus, minus = idx[proj > 0], idx[proj <= 0]
    if plus.size == 0 or minus.size == 0:
        out[idx] = True
        return out
    mag_plus, mag_minus = np.abs(proj[proj > 0]).mean(), np.abs(proj[proj <= 0]).mean()
    sizes_differ = abs(plus.size - minus.size) > 0.2 * max(plus.size, minus.size)
    if orientation == "minority" or (orientation == "auto" and sizes_differ):
        pos = plus if plus.size < minus.size else minus
    else:
        pos = plus if mag_plus >= mag_minus else minus
    out[pos] = True
    return out


def attack_scores(recovered: np.ndarray, true_positive_mask: np.ndarray) -> dict:
    """Precision and recall of a recovered item set, each beside what chance gives: base_rate is the precision of
    any guess, chance_recall the recall of a random guess as large as this one (n_recovered / items). An attack on
    noise can name a third of the catalogue and so "recall" a third of anyone's items: only recall above
    chance_recall is a leak."""
    rec = np.asarray(recovered, bool).ravel()
    truth = np.asarray(true_positive_mask, bool).ravel()
    if rec.shape != truth.shape:
        raise ValueError(f"recovered {rec.shape} and truth {truth.shape} differ in shape")
    tp = int(np.sum(rec & truth))
    n_rec, n_true = int(rec.sum()), int(truth.sum())
    precision = tp / n_rec if n_rec else 0.0
    recall = tp / n_true if n_true else 0.0
    base = n_true / truth.size if truth.size else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "base_rate": base,
        "lift": precision / base if base else 0.0,
        "chance_recall": n_rec / truth.size if truth.size else 0.0,
        "n_recovered": n_rec,
        "true_positives": tp,
    }


def topk_index_leak(indices: np.ndarray, n_items: int, d: int) -> np.ndarray:
    """Items revealed by the clear indices of a Top-K message over a flattened (n_items x d) table.

    Index j of the row-major flattening lies in row j // d: every index names
    an item the client touched. Returns a boolean mask over the items.
    """
    idx = np.asarray(indices, dtype=np.int64).ravel()
    if idx.size and (idx.min() < 0 or idx.max() >= n_items * d):
        raise ValueError(f"indices must lie in [0, {n_items * d})")
    out = np.zeros(n_items, bool)
    out[idx // d] = True
    return out


def server_view_rows(view, n_items: int, d: int) -> np.ndarray:
    """Turn what the server holds into an (n_items, d) float table the attack can be run on.

    * ndarray of shape (n_items, d) (a plain update or an aggregate): as is;
    * uint64 ring vector (masked secret-sharing upload): read as signed ints;
    * bytes or list of bytes (CKKS / Paillier ciphertexts): the raw bytes as
      int8 values. The layout has nothing to do with items; the byte stream is
      cycled if it is shorter than n_items * d.
    """
    if isinstance(view, np.ndarray) and view.dtype != np.uint64 and view.shape == (n_items, d):
        return view.astype(np.float64)
    if isinstance(view, np.ndarray) and view.dtype == np.uint64:
        flat = view.view(np.int64).astype(np.float64).ravel()
    else:
        blob = b"".join(view) if isinstance(view, (list, tuple)) else bytes(view)
        flat = np.frombuffer(blob, dtype=np.int8).astype(np.float64)
    if flat.size == 0:
        raise ValueError("empty server view")
    need = n_items * d
    if flat.size < need:
        flat = np.resize(flat, need)
    return flat[:need].reshape(n_items, d)


def attack_protected_view(view, n_items: int, d: int, true_positive_mask: np.ndarray) -> dict:
    """Run `recover_interacted_items` on whatever the server sees and score it."""
    rows = server_view_rows(view, n_items, d)
    return attack_scores(recover_interacted_items(rows), true_positive_mask)

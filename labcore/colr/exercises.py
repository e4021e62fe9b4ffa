"""CoLR's lesson (notebooks 00 to 05): the lab's base run and the exercise checks.

    from labcore.colr import exercises as ex
    base = ex.lab_config(method="colr", rank=4)     # smoke size, or CoLR's ML-1M setting with LABCORE_PAPER_SIZE=1
    ex.check_random_hr(0.1)

Every check computes its expected answer with labcore itself (a loader, the metrics, the payload table,
the round-time model, a short run) and compares it with the student's; nothing is hard-coded. A check
called with `...` (the placeholder in the notebooks) only says what to fill in.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import RunConfig, from_dict, paper_ml1m
from ..labs_support import Feedback, close, missing, paper_size, todo

# The lab's smoke size: the small synthetic dataset (600 users, 400 items), 5% of users a round, d = 32.
# lr = 1.0 (instead of the paper-size 0.5) so that a run converges in 150 rounds, a few seconds on one core.
LAB_BASE = dict(dataset="synthetic", synthetic_size="small", dim=32, rounds=150, clients_per_round=30,
                local_epochs=2, batch_size=256, lr=1.0, eval_every=25, rank_every=10)


def lab_config(paper: bool | None = None, **overrides) -> RunConfig:
    """The lab's base run with `overrides`.

    Smoke size: LAB_BASE on synthetic data (no download). Paper size: `paper_ml1m` (d = 64, 60 clients a
    round, E = 2, B = 256, 1000 rounds) with the learning rate of the figure cards, so a notebook run
    and a card's run of the same method share the run cache.
    """
    if paper if paper is not None else paper_size():
        from .runs import LR

        return paper_ml1m(**{"lr": LR, **overrides})
    return from_dict({**LAB_BASE, **overrides})


# Lab 04's smoke size: the medium synthetic catalogue (1,500 items) at d = 64, where a FedMF upload is 375 KB and
# communication about 16 % of the round; on LAB_BASE's (400 items, d = 32) it is 2.5 %, and the wall-clock is the
# round count times 10 s
WALLCLOCK_SMOKE = dict(synthetic_size="medium", dim=64)


def wallclock_config(paper: bool | None = None, **overrides) -> RunConfig:
    """Lab 04's base run: `lab_config`, on WALLCLOCK_SMOKE's catalogue at smoke size."""
    paper = paper if paper is not None else paper_size()
    return lab_config(paper, **({} if paper else WALLCLOCK_SMOKE), **overrides)


def _data(cfg: RunConfig):
    from ..fed.engine import load_data

    return load_data(cfg)


def _upload(cfg: RunConfig, n_items: int) -> pd.DataFrame:
    from ..app.analytic import payload_table

    t = payload_table(cfg, n_items)
    return t[t["direction"] == "up"]


def check_dataset_size(n_users, n_items, dataset: str = "synthetic", size: str = "small") -> Feedback:
    """Lab 00: how many users and items does the dataset have?"""
    if missing(n_users) or missing(n_items):
        return todo("the numbers of users and items (data.summary() tells them)")
    from ..data import load_dataset

    d = load_dataset(dataset, size=size)
    ok = int(n_users) == d.n_users and int(n_items) == d.n_items
    return Feedback(ok, f"{d.name} has {d.n_users} users and {d.n_items} items" if ok else
                    f"{n_users} users x {n_items} items is not what the loader returns; look at data.summary()")


def check_upload_bytes(answer, cfg: RunConfig) -> Feedback:
    """Lab 00: bytes one client uploads per round under `cfg` (measured wire format, within 1%)."""
    if missing(answer):
        return todo("the bytes one client uploads in a round (sim.ledger or the round's row)")
    expected = float(_upload(cfg, _data(cfg).n_items)["bytes"].sum())
    ok = close(answer, expected, rel=0.01)
    return Feedback(ok, f"{cfg.describe()} uploads {expected:,.0f} bytes per client and round (framing and the "
                        f"item bitmap included)" if ok else
                    f"{answer} is off by more than 1%; the ledger's 'up' rows of one round, divided by the "
                    "number of clients, give it")


def check_random_hr(answer, k: int = 10, cfg: RunConfig | None = None) -> Feedback:
    """Lab 01: HR@k of a model that ranks the test item at random among its sampled negatives."""
    if missing(answer):
        return todo("the HR@10 a random ranking scores (a number between 0 and 1)")
    import torch

    from ..metrics import hit_ratio_ndcg

    data = _data(cfg or lab_config(paper=False))
    users = data.test_items >= 0
    n_cand = data.test_negatives[users].shape[1] + 1
    expected = min(k, n_cand) / n_cand
    g = torch.Generator().manual_seed(0)
    P = torch.randn(data.n_users, 8, generator=g)
    Q = torch.randn(data.n_items, 8, generator=g)
    empirical, _ = hit_ratio_ndcg(P, Q, data.test_items, data.test_negatives, k)
    ok = close(answer, expected, abs_=0.005)
    return Feedback(ok, f"the test item is one of {n_cand} candidates, so a random ranking puts it in the top {k} "
                        f"with probability {k}/{n_cand} = {expected:.3f} (random embeddings score {empirical:.3f})"
                    if ok else f"{answer} is not it: how many candidates is the test item ranked among, and how "
                               f"many of the positions count as a hit?")


def check_metrics_at_rank(n_above: int, hr, ndcg, k: int = 10) -> Feedback:
    """Lab 01: HR@k and NDCG@k of one user whose test item is beaten by `n_above` of its negatives."""
    if missing(hr) or missing(ndcg):
        return todo("HR@10 and NDCG@10 for that user")
    import torch

    from ..metrics import hit_ratio_ndcg

    n_neg = 99
    # one user, p = 1 (d = 1): an item's score is its embedding; the test item scores 0
    scores = np.concatenate([[0.0], np.arange(1, n_above + 1), -np.arange(1, n_neg - n_above + 1)])
    P, Q = torch.ones(1, 1, dtype=torch.float64), torch.tensor(scores, dtype=torch.float64)[:, None]
    e_hr, e_ndcg = hit_ratio_ndcg(P, Q, np.array([0]), np.arange(1, n_neg + 1)[None, :], k)
    ok = close(hr, e_hr, abs_=1e-3) and close(ndcg, e_ndcg, abs_=1e-3)
    return Feedback(ok, f"rank {n_above} (0-based): HR@{k} = {e_hr:g}, NDCG@{k} = {e_ndcg:.4f}" if ok else
                    f"not quite: the test item sits at 0-based rank {n_above}; HR counts a hit if rank < {k}, "
                    "NDCG gives a hit 1 / log2(rank + 2)")


def check_best_local_epochs(answer, base: RunConfig, choices=(1, 2, 4)) -> Feedback:
    """Lab 01: which number of local epochs gives the highest final HR@10 (same rounds, same clients)?"""
    if missing(answer):
        return todo(f"one of {list(choices)}")
    from ..fed.engine import run

    hr = {e: run(base.replace(local_epochs=e), progress=False).final["hr"] for e in choices}
    top = max(hr.values())
    best = [e for e, v in hr.items() if v >= top - 0.005]  # within half an HR point: a tie
    ok = answer in best
    table = ", ".join(f"E={e}: {v:.3f}" for e, v in hr.items())
    return Feedback(ok, f"E={answer} ends highest, ties within 0.5 HR points count ({table})" if ok else
                    f"E={answer} is not the best ({table})")


def check_round_traffic_factor(answer, base: RunConfig, factor: int = 2) -> Feedback:
    """Lab 01: by what factor does one round's total traffic grow when clients per round grow by `factor`?"""
    if missing(answer):
        return todo("a number (total bytes of a round with 2M clients / with M clients)")
    from ..app.analytic import payload_summary

    n = _data(base).n_items
    a = payload_summary(base, n)["round_total"]
    b = payload_summary(base.replace(clients_per_round=base.clients_per_round * factor), n)["round_total"]
    ok = close(answer, b / a, rel=0.01)
    return Feedback(ok, f"{b / a:g}x: every client uploads and downloads the same message, so a round's traffic "
                        "is linear in M (each client's stays the same)" if ok else
                    f"{answer} is not it: does one client's message depend on how many others take part?")


def check_one_step_rank(answer) -> Feedback:
    """Lab 02: the rank of one client's item-table update after ONE local SGD step without weight decay."""
    if missing(answer):
        return todo("an integer")
    from ..privacy.attacks import synthetic_fedmf_update

    u = synthetic_fedmf_update(n_items=300, d=16, local_steps=1, weight_decay=0.0, seed=1)
    expected = int(np.linalg.matrix_rank(u["delta"], tol=1e-10))
    ok = close(answer, expected, abs_=0)
    return Feedback(ok, f"rank {expected}: every touched row moves along the same vector p_u (Eq. 5)" if ok else
                    "not quite: in Eq. 5 without the λQ term, which vector do all rows of ΔQ point along?")


def first_round_updates(cfg: RunConfig):
    """Every sampled client's update in round 0 of `cfg`, as the server decodes it: a (M, N, k) tensor.

    FedMF: ΔQ_u (k = d); CoLR: A_u (k = r). One round of a fresh Simulation, nothing cached.
    """
    from ..fed.engine import Simulation

    sim = Simulation(cfg.replace(rounds=1, rank_every=0, eval_every=10**6), _data(cfg))
    sim.keep_view = True
    sim.step()
    return sim.view["decoded"]


def check_more_local_steps(answer, cfg_a: RunConfig, cfg_b: RunConfig) -> Feedback:
    """Lab 02: which of two configs gives round-0 client updates of higher entropy effective rank?"""
    if missing(answer):
        return todo('"a" or "b"')
    from ..metrics import effective_rank_stats

    a, b = (effective_rank_stats(first_round_updates(c)) for c in (cfg_a, cfg_b))
    best = "a" if a["erank_mean"] > b["erank_mean"] else "b"
    ok = str(answer).strip().lower() == best
    table = (f"entropy rank a {a['erank_mean']:.2f}, b {b['erank_mean']:.2f} (N99 a {a['n99_mean']:.2f}, "
             f"b {b['n99_mean']:.2f})")
    return Feedback(ok, f"{best}: {table}; more local steps let p_u turn, so ΔQ_u picks up more directions" if ok
                    else f"not {answer}: {table}")


def check_colr_saving(answer, n_items: int, dim: int, rank: int, b_as_seed: bool = True) -> Feedback:
    """Lab 02: FedMF's uplink values divided by CoLR@rank's (the compression factor, payload table)."""
    if missing(answer):
        return todo("a number (values FedMF sends / values CoLR sends)")
    cfg = RunConfig(method="colr", dim=dim, rank=rank, b_as_seed=b_as_seed, aggregation="weighted")
    up_c = _upload(cfg, n_items)
    up_f = _upload(cfg.replace(method="fedmf"), n_items)
    # the uplink of CoLR is A only; B comes from the server (as a seed or a d x r matrix in the downlink)
    expected = float(up_f["values"].sum()) / float(up_c["values"].sum())
    ok = close(answer, expected, rel=0.01)
    return Feedback(ok, f"{expected:g}x: N·d values against N·r (B is the server's, shared by all clients)" if ok
                    else f"{answer} is not it: count the values in one client's upload for each method")


def check_topk_vs_colr(answer, n_items: int, dim: int, rank: int) -> Feedback:
    """Lab 03: uplink bytes of Top-K with ratio rank/dim divided by CoLR@rank's (same number of values kept)."""
    if missing(answer):
        return todo("a number (Top-K uplink bytes / CoLR uplink bytes)")
    cfg = RunConfig(method="colr", dim=dim, rank=rank, aggregation="weighted")
    c = float(_upload(cfg, n_items)["bytes"].sum())
    t = float(_upload(cfg.replace(method="topk", topk_ratio=rank / dim), n_items)["bytes"].sum())
    ok = close(answer, t / c, rel=0.05)
    return Feedback(ok, f"{t / c:.2f}x: Top-K sends each kept value (float32) and its index (int32)" if ok else
                    f"{answer} is not it: what does Top-K send besides the values it keeps?")


def check_scolr_uplink(answer, n_items: int, dim: int, global_rank: int, min_rank: int = 1) -> Feedback:
    """Lab 03: SCoLR's mean uplink (r_u uniform in min_rank..global_rank) as a fraction of CoLR@global_rank's."""
    if missing(answer):
        return todo("a fraction between 0 and 1")
    cfg = RunConfig(method="scolr", dim=dim, rank=global_rank, scolr_min_rank=min_rank, aggregation="weighted")
    s = _upload(cfg, n_items)
    c = _upload(cfg.replace(method="colr"), n_items)
    expected = float(s.loc[s.part == "A", "values"].sum()) / float(c.loc[c.part == "A", "values"].sum())
    ok = close(answer, expected, rel=0.02)
    return Feedback(ok, f"{expected:.4g}: E[r_u] / r_g = ({min_rank} + {global_rank}) / 2 / {global_rank}; the "
                        "downlink stays rank r_g" if ok else
                    f"{answer} is not it: what is the mean of r_u drawn uniformly from {min_rank}..{global_rank}?")


def check_best_method(answer, results, budget_bytes: float | None = None) -> Feedback:
    """Lab 03: which run of `results` ends with the highest HR@10 (optionally among runs within a byte budget)?"""
    if missing(answer):
        return todo('a method name, e.g. "colr"')
    rows = []
    for r in results:
        t = r.table
        per_client = float((t["bytes_up_client"] + t["bytes_down_client"]).mean())
        if budget_bytes is None or per_client <= budget_bytes:
            rows.append((r.final["hr"], r.config.method, r.config.describe()))
    if not rows:
        return Feedback(False, "no run fits that budget")
    hr, method, label = max(rows)
    ok = str(answer).strip().lower() == method
    return Feedback(ok, f"{label} ends highest, HR@10 {hr:.3f}" if ok else
                    f"{answer} is not the best here; compare the final HR@10 of the runs in the budget")


def check_comm_seconds(answer, n_items: int = 3706, dim: int = 64, bw_down: float = 0.75,
                       bw_up: float = 0.25) -> Feedback:
    """Lab 04: T_comm of one FedMF round (N x d float32 each way) under the round-time model, in seconds."""
    if missing(answer):
        return todo("seconds per round")
    from ..net.wallclock import RoundTimeModel

    size = np.array([4.0 * n_items * dim])
    t = RoundTimeModel(bw_down, bw_up).round_time(size, size, np.zeros(1), np.zeros(1, np.int64), 0.0)["t_comm"]
    ok = close(answer, t, rel=0.01)
    return Feedback(ok, f"{t:.3f} s per round, {t * 1000 / 60:.2f} min over 1000 rounds (Table 2's MF-{dim} row; "
                        f"MB = 2^20 bytes)" if ok else
                    f"{answer} is not it: S = 4·N·d bytes each way, T_comm = S/B_down + S/B_up, MB = 2^20 bytes")


def check_uplink_share(answer, result) -> Feedback:
    """Lab 04: the share of a run's communication time spent on the uplink (no bandwidth tiers)."""
    if missing(answer):
        return todo("a fraction between 0 and 1")
    from ..net.wallclock import MB

    cfg, t = result.config, result.table
    if cfg.bandwidth_tiers:
        return Feedback(False, "pick a run without bandwidth tiers")
    up = float((t["bytes_up_client"] / MB / cfg.bw_up).sum())
    total = float(t["t_comm"].sum())
    ok = close(answer, up / total, abs_=0.02)
    return Feedback(ok, f"{up / total:.3f} of {cfg.describe()}'s communication time is uplink" if ok else
                    f"{answer} is not it: time = bytes / bandwidth on each link, and B_up = {cfg.bw_up} MB/s "
                    f"against B_down = {cfg.bw_down} MB/s")


def check_straggler_share(answer, result) -> Feedback:
    """Lab 04: the share of rounds whose communication time is set by a slow-tier client (bandwidth tiers)."""
    if missing(answer):
        return todo("a fraction between 0 and 1")
    cfg, t = result.config, result.table
    if not cfg.bandwidth_tiers:
        return Feedback(False, "pick a run with bandwidth tiers")
    tc = t["t_comm"].to_numpy()
    measured = float(np.mean(tc > tc.min() * 1.5))
    slow = sum(s for s, fd, fu in cfg.bandwidth_tiers if min(fd, fu) < 1)
    model = 1 - (1 - slow) ** cfg.clients_per_round
    ok = close(answer, measured, abs_=0.05) or close(answer, model, abs_=0.02)
    return Feedback(ok, f"measured {measured:.3f} of the rounds; with a share s = {slow:g} of slow devices and "
                        f"M = {cfg.clients_per_round}, 1 - (1 - s)^M = {model:.3f}" if ok else
                    f"{answer} is not it: a round is slow as soon as ONE of its M clients is slow")


def check_ciphertexts(answer, n_values: int, degree: int = 8192) -> Feedback:
    """Lab 05: how many CKKS ciphertexts carry n_values values at this polynomial degree?"""
    if missing(answer):
        return todo("an integer")
    from ..privacy.params import CkksParams

    expected = CkksParams(degree, (60, 50, 60), 50).n_ciphertexts(n_values)
    ok = close(answer, expected, abs_=0)
    return Feedback(ok, f"{expected}: a ciphertext packs N/2 = {degree // 2} values" if ok else
                    f"{answer} is not it: how many values does one ciphertext of degree N = {degree} hold?")


def check_leakiest_view(answer, summary: pd.DataFrame) -> Feedback:
    """Lab 05: in the attack summary, which view of a plain run gives the attacker the highest precision?"""
    if missing(answer):
        return todo('one of "upload", "aggregate", "bitmap"')
    plain = summary[summary["encryption"] == "none"]
    best = str(plain.loc[plain["precision"].idxmax(), "view"])
    ok = str(answer).strip().lower() == best
    return Feedback(ok, f"{best}: precision {plain['precision'].max():.2f} against chance "
                        f"{plain['base_rate'].mean():.3f}" if ok else
                    f"{answer} is not the leakiest; compare the precision column of the plain rows")


def check_protected_lift(answer, summary: pd.DataFrame, encryption: str = "ckks") -> Feedback:
    """Lab 05: the attack's lift (precision / chance) on the protected uploads under `encryption`."""
    if missing(answer):
        return todo("a number (precision / base rate)")
    row = summary[(summary["encryption"] == encryption) & (summary["view"] == "upload")]
    if not len(row):
        return Feedback(False, f"the summary has no '{encryption}' upload row")
    lift = float(row["lift"].iloc[0])
    ok = close(answer, lift, abs_=0.1)
    return Feedback(ok, f"lift {lift:.2f} under {encryption}: about 1 is chance, the ciphertexts carry nothing the "
                        "attack can use" if ok else f"{answer} is not it: read the lift of the {encryption} upload row")


def check_data_gini(answer, skew: float = 2.0, size: str = "small") -> Feedback:
    """Lab 01: the Gini coefficient of the clients' data sizes (training interactions per user) at `skew`."""
    if missing(answer):
        return todo("a number between 0 and 1 (the Gini coefficient of counts = data.train_counts())")
    from ..data import load_dataset
    from ..metrics import gini

    expected = gini(load_dataset("synthetic", size=size, skew=skew).train_counts())
    ok = close(answer, expected, rel=0.01, abs_=0.005)
    return Feedback(ok, f"{expected:.3f}: half the mean absolute difference between two clients' data sizes, "
                        "relative to the mean size" if ok else
                    f"{answer} is not it: sort the counts, then G = sum_i (2i - n - 1) x_i / (n sum_i x_i) "
                    "with i = 1..n")

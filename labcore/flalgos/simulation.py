"""One federated run: sample a cohort, train it as one batched tensor, measure the messages, aggregate.

    sim = Simulation(FLConfig(algorithm="scaffold", task="digits"))
    res = sim.run()                  # res.history (one row per evaluation), res.clients, res.ledger
    run(cfg)                         # the same, cached on disk by cfg.key()

All randomness of round t comes from a generator seeded by (seed, t): the same config gives the same numbers.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..runtime import one_thread
from ..diverged import check_finite
from ..methods.base import Wire
from ..net.ledger import Ledger
from . import defenses
from .config import FLConfig
from .problems import Classifier, Quadratic
from .strategies import RoundContext, make
from .tasks import quadratics


@functools.lru_cache(maxsize=16)
def load_task(task: str, n_clients: int, split: str, alpha: float, data_seed: int, synthetic_alpha: float,
              synthetic_beta: float, quad_dim: int, quad_hetero: float):
    from . import files, tasks

    if task == "synthetic":
        return tasks.synthetic(synthetic_alpha, synthetic_beta, n_clients, data_seed)
    if task == "digits":
        return tasks.digits(n_clients, split, alpha, data_seed)
    if task == "mnist":
        return files.load_mnist(n_clients, split, alpha, data_seed)
    if task == "femnist":
        return files.load_femnist(n_clients)
    return quadratics(n_clients, quad_dim, quad_hetero, data_seed)


def build_problem(cfg: FLConfig):
    if cfg.task == "mf":
        from .recommend import MFProblem, load_mf_data

        prob = MFProblem(load_mf_data(cfg.mf_dataset, cfg.data_seed), cfg.mf_dim, cfg.mf_negatives, cfg.seed)
        prob.lr = cfg.lr
        return prob
    data = load_task(cfg.task, cfg.n_clients, cfg.split, cfg.dirichlet_alpha, cfg.data_seed, cfg.synthetic_alpha,
                     cfg.synthetic_beta, cfg.quad_dim, cfg.quad_hetero)
    if cfg.task == "quadratic":
        return Quadratic(data)
    return Classifier(data, cfg.model, cfg.hidden, cfg.target_label)


def round_generator(seed: int, t: int, stream: int = 0) -> torch.Generator:
    s = int(np.random.SeedSequence([seed, t, stream]).generate_state(1, np.uint64)[0] >> 1)
    return torch.Generator().manual_seed(s)


class Aggregation:
    """How the server sums the uploads: in the clear (with the defense on 'delta') or under secure aggregation.
    Rows are the uploading clients; `dropped` (secure aggregation only) are cohort members that never sent."""

    def __init__(self, cfg: FLConfig, n_cohort: int, upload_rows: torch.Tensor, round_idx: int):
        self.cfg, self.M, self.rows, self.round = cfg, n_cohort, upload_rows, round_idx
        self.secagg_reports: list = []

    def _sum(self, x: torch.Tensor) -> torch.Tensor:
        if not self.cfg.secagg:
            return x.sum(0)
        from ..privacy.secagg import secure_aggregate

        full = np.zeros((self.M, x[0].numel()), np.float64)
        full[self.rows.numpy()] = x.reshape(len(x), -1).double().numpy()
        dropped = sorted(set(range(self.M)) - set(self.rows.tolist()))
        t = self.cfg.secagg_threshold or None
        total, rep = secure_aggregate(full, dropped=dropped, threshold=t, round_id=self.round,
                                      seed=self.cfg.seed * 1_000_003 + self.round)
        self.secagg_reports.append(rep)
        return torch.from_numpy(total).to(x.dtype).reshape(x.shape[1:])

    def total(self, parts: dict, coef: torch.Tensor | None = None) -> dict:
        return {k: self._sum(v if coef is None else coef.to(v.dtype)[:, None] * v) for k, v in parts.items()}

    def mean(self, parts: dict, coef: torch.Tensor) -> dict:
        out = {}
        for k, v in parts.items():
            if k == "delta" and self.cfg.defense in ("median", "trimmed", "krum"):
                out[k] = defenses.robust(self.cfg.defense, v, self.cfg)
                continue
            if k == "delta" and self.cfg.defense == "clip":
                v = defenses.clip_rows(v, self.cfg.clip_norm)  # on the clients, before any masking
            w = coef.to(v.dtype)
            out[k] = self._sum(w[:, None] * v) / w.sum()
            if k == "delta" and self.cfg.defense == "clip" and self.cfg.dp_noise > 0:
                g = round_generator(self.cfg.seed, self.round, 3)
                std = self.cfg.dp_noise * self.cfg.clip_norm / len(v)
                out[k] = out[k] + std * torch.randn(out[k].shape, generator=g, dtype=v.dtype)
        return out


@dataclass(eq=False)
class FLResult:
    cfg: FLConfig
    history: pd.DataFrame  # one row per evaluation
    clients: pd.DataFrame  # per-client numbers at the end
    ledger: pd.DataFrame  # measured bytes per round, direction and part


RESULT_TABLES = ("history", "clients", "ledger")  # FLResult's tables, stored in this order


class Simulation:
    def __init__(self, cfg: FLConfig):
        self.cfg = cfg
        self.problem = build_problem(cfg)
        if cfg.task == "quadratic":
            self.N, self.sizes = self.problem.q.n_clients, torch.ones(self.problem.q.n_clients, dtype=torch.int64)
        elif cfg.task == "mf":
            self.N, self.sizes = self.problem.n_clients, self.problem.counts
        else:
            self.N, self.sizes = self.problem.data.n_clients, self.problem.data.train_sizes
        if cfg.clients_per_round > self.N:
            raise ValueError(f"clients_per_round={cfg.clients_per_round} is invalid: the task has {self.N} clients")
        self.strategy = make(cfg, self.problem, self.N)
        self.ledger = Ledger()
        self.round = 0
        self.rows: list[dict] = []
        self.bytes = {"up": 0, "down": 0}
        self.last_drift = float("nan")

    # --- one round -----------------------------------------------------------------------------------------------
    def plan(self, gen: torch.Generator):
        """The cohort, each member's local steps, and who uploads (not dropped, not a dropped straggler)."""
        cfg, M, K = self.cfg, self.cfg.clients_per_round, self.cfg.local_steps
        cohort = torch.randperm(self.N, generator=gen)[:M].sort().values
        if cfg.algorithm == "dpfedavg":  # Poisson sampling with q = M / N, as DP's accountant assumes
            from ..privacy.dp import poisson_sample
            cohort = torch.from_numpy(poisson_sample(self.N, M / self.N, np.random.default_rng([cfg.seed, self.round])))
            M = len(cohort)
        steps = torch.full((M,), K, dtype=torch.int64)
        n_slow = int(round(cfg.stragglers * M))
        slow = torch.zeros(M, dtype=torch.bool)
        if n_slow and K > 1:  # FedProx: stragglers do a uniform 1..K-1 steps instead of K
            slow[torch.randperm(M, generator=gen)[:n_slow]] = True
            steps[slow] = torch.randint(1, K, (n_slow,), generator=gen)
        dropped = torch.rand(M, generator=gen) < cfg.dropout
        uploads = ~dropped & ~(slow & cfg.drops_stragglers())
        return cohort, steps, uploads

    def _wires(self, parts: dict, kind: str = "values") -> list[Wire]:
        return [Wire(k, kind, v.reshape(v.shape[0], -1).contiguous()) for k, v in parts.items()]  # sent in its dtype

    def step(self) -> None:
        cfg, t = self.cfg, self.round
        gen = round_generator(cfg.seed, t)
        cohort, steps, uploads = self.plan(gen)
        down = {k: v[None] for k, v in self.strategy.downlink().items()}
        self.bytes["down"] += int(self.ledger.record(t, "down", self._wires(down), receivers=len(cohort)).sum()) \
            * len(cohort)
        rows = torch.nonzero(uploads).flatten()
        train = cohort[rows]
        if len(train):
            attackers = None
            if cfg.attack != "none" and t >= cfg.attack_from:
                attackers = train < cfg.attackers
            batches = self.problem.draw(train, cfg.local_steps * self.strategy.batches_per_step, cfg.batch_size,
                                        gen, attackers, cfg.poison_frac, cfg.attack == "dba")
            batches = dataclasses.replace(batches, steps=steps[rows])
            ctx = RoundContext(t, train, steps[rows], batches, gen)
            theta = self.strategy.local_train(ctx)
            if hasattr(self.problem, "commit"):  # MF: the devices keep their new private user vectors
                self.problem.commit(batches)
            self.strategy.personalize(ctx, theta)
            parts = self.strategy.uplink(theta, ctx)
            if attackers is not None and bool(attackers.any()):  # both attacks scale their update (DBA as well)
                gamma = cfg.boost or len(cohort) / (cfg.server_lr * int(attackers.sum()))
                parts["delta"] = torch.where(attackers[:, None], gamma * parts["delta"], parts["delta"])
            parts = self._send_up(t, parts, len(cohort), rows)
            d = parts["delta"]
            self.last_drift = float(torch.linalg.vector_norm(d - d.mean(0), dim=1).mean())
            coef = (self.sizes[train].double() if cfg.weighting == "samples"
                    else torch.ones(len(train), dtype=torch.float64))
            ops = Aggregation(cfg, len(cohort), rows, t)
            agg = self.strategy.aggregate(parts, coef, ops)
            self._count_secagg(t, ops)
            self.strategy.server_update(agg, ctx)
        self.round += 1

    def _send_up(self, t: int, parts: dict, n_cohort: int, rows: torch.Tensor) -> dict:
        """Quantization mod (if on), then the ledger measures what travels; returns what the server decodes."""
        wires = self._wires(parts)
        sent, received = wires, wires
        if self.cfg.quantize_bits:
            from ..fed.mods import quantize_wires

            sent, received = quantize_wires(wires, self.cfg.quantize_bits, self.cfg.quantize_bucket,
                                            round_generator(self.cfg.seed, t, 2))
        if not self.cfg.secagg:  # under secure aggregation the masked vectors are what travels (counted there)
            self.bytes["up"] += int(self.ledger.record(t, "up", sent).sum())
        dtype = parts["delta"].dtype
        return {w.name: w.data.to(dtype).reshape(parts[w.name].shape) for w in received}

    def _count_secagg(self, t: int, ops: Aggregation) -> None:
        # sizes measured by secure_aggregate on the masked vectors' wire format (secagg.masked_part)
        for i, rep in enumerate(ops.secagg_reports):
            n_up = rep.n_survivors
            row = {"round": t, "direction": "up", "part": f"secagg.masked.{i}", "kind": "ciphertext",
                   "messages": n_up, "bytes": n_up * rep.masked_bytes_per_client,
                   "bits": n_up * rep.masked_bits_per_client}
            keys = {"round": t, "direction": "up", "part": f"secagg.public_key.{i}", "kind": "meta",
                    "messages": rep.n_clients, "bytes": rep.n_clients * rep.public_key_bytes_per_client,
                    "bits": 8 * rep.n_clients * rep.public_key_bytes_per_client}
            self.ledger.rows += [row, keys]
            self.bytes["up"] += row["bytes"] + keys["bytes"] + rep.revealed_seed_bytes

    # --- evaluation --------------------------------------------------------------------------------------------------
    def evaluate(self) -> dict:
        cfg, w = self.cfg, self.strategy.w
        row = {"round": self.round, "up_bytes": self.bytes["up"], "down_bytes": self.bytes["down"],
               "drift": self.last_drift}
        losses = self.problem.client_train_loss(w).double()
        sizes = self.sizes.double()
        row["train_loss"] = float((losses * sizes).sum() / sizes.sum())
        check_finite(f"round {self.round}", row["train_loss"], [w], lower=f"lr (now {cfg.lr:g}) or server_lr")
        if cfg.task == "quadratic":
            row["distance"] = self.problem.distance(w)
            return row
        acc = self.problem.client_test_acc(w)
        n_test = self.problem.test_weights()
        has = n_test > 0
        acc, n_test = acc[has], n_test[has]
        row.update(test_acc=float((acc * n_test).sum() / n_test.sum()), acc_mean=float(acc.mean()),
                   acc_var=float(acc.var(unbiased=False)), acc_worst10=_worst(acc, 0.1))
        if hasattr(self.problem, "client_train_acc"):
            tr = self.problem.client_train_acc(w)
            row.update(train_acc_mean=float(tr.mean()), train_acc_var=float(tr.var(unbiased=False)),
                       train_acc_worst10=_worst(tr, 0.1))
        pm = self.strategy.personal_models()
        if pm is not None:
            pacc = self.problem.client_test_acc(pm)
            row.update(personal_acc_mean=float(pacc.mean()), personal_acc_var=float(pacc.var(unbiased=False)))
        if cfg.attack != "none":
            row["backdoor"] = self.problem.backdoor_success(w)
        if cfg.algorithm == "dpfedavg":
            row["epsilon"] = self.strategy.epsilon(self.round)
        return row

    def client_table(self) -> pd.DataFrame:
        w = self.strategy.w
        out = pd.DataFrame({"client": np.arange(self.N), "train_samples": self.sizes.numpy(),
                            "train_loss": self.problem.client_train_loss(w).double().numpy()})
        if self.cfg.task != "quadratic":
            out["test_acc"] = self.problem.client_test_acc(w).numpy()
            pm = self.strategy.personal_models()
            if pm is not None:
                out["personal_acc"] = self.problem.client_test_acc(pm).numpy()
        return out

    def run(self, progress=None) -> FLResult:
        """Play every round; `progress(done, total)` is called after each."""
        cfg = self.cfg
        if self.round == 0:
            self.rows.append(self.evaluate())
        while self.round < cfg.rounds:
            self.step()
            if self.round % cfg.eval_every == 0 or self.round == cfg.rounds:
                self.rows.append(self.evaluate())
            if progress:
                progress(self.round, cfg.rounds)
        return FLResult(cfg, pd.DataFrame(self.rows), self.client_table(), self.ledger.frame())


def _worst(acc: torch.Tensor, share: float) -> float:
    k = max(1, int(math.ceil(share * len(acc))))
    return float(acc.sort().values[:k].mean())


# --- cached runs ------------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    from ..runtime import default_cache_dir

    return default_cache_dir() / "flalgos"


def run(cfg: FLConfig, progress=None, cache: bool = True) -> FLResult:
    """A run, read from `cache_dir()/<cfg.key()>/` when it was played before (`labcore.runner.store`)."""
    from ..runner.store import load_run, read_stored, save_run, timing

    folder = cache_dir() / cfg.key()
    hit = read_stored(folder, lambda f: FLResult(cfg, *load_run(f, RESULT_TABLES)[0].values())) if cache else None
    if hit is not None:
        return hit
    one_thread()
    t0, c0 = time.perf_counter(), time.process_time()
    res = Simulation(cfg).run(progress)
    if cache:
        save_run(folder, {n: getattr(res, n) for n in RESULT_TABLES}, {"config": cfg.to_dict()},
                 timing(time.perf_counter() - t0, time.process_time() - c0, rounds=cfg.rounds))
    return res


def run_times(configs: list[FLConfig]) -> dict:
    """What a stored card keeps of its runs' times (`timing_meta`: by run key, as each was trained)."""
    from ..figures.registry import timing_meta
    from ..runner.store import load_timing

    return timing_meta({c.key(): load_timing(cache_dir() / c.key()) for c in dict.fromkeys(configs)})

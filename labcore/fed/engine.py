"""The federated round loop: sample, train locally (batched), send, aggregate, measure.

`run(cfg)` is the one entry point the CLI, the notebooks and the app use. It
returns a `Result` whose per-round table is a pandas DataFrame. Results are
cached on disk under the config's key; a run interrupted (Ctrl-C, a closed
browser tab, a crash) resumes from its last checkpoint, and because every
round draws its randomness from (seed, round), the resumed run produces the
same numbers as an uninterrupted one.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..config import ConfigError, RunConfig, check_algorithm, check_personal, check_prox_pull, check_robust
from ..data.base import InteractionData
from ..methods import make_method
from ..methods.base import Wire
from ..methods.compress import topk_count
from ..methods.quantize import BLOCK_VALUES, packed_bytes
from ..metrics import effective_rank_stats, hit_ratio_ndcg
from ..net.ledger import Ledger
from ..net.wallclock import RoundTimeModel
from ..privacy.dp import STREAM_DP, RoundDP
from ..results import ROUND_COLUMNS, Result
from ..runner.cached import run_cached
from ..runtime import default_cache_dir, use_threads
from . import sampling as S
from . import dropout, stragglers
from .aggregate import aggregate, fedavg_weights
from .algorithms import algorithm_class, attacks, defenses, personalization_class, server_opt
from .local_train import LocalResult, RowUpdate, SummedRows, train_cohort
from .mods import item_mask_wire, quantize_wires, wire_values
from .secure import make_secure_mod
from .workspace import SAMPLE_ARRAYS, Workspace

LAYOUTS = ("rows", "dense")



@functools.cache
def release_large_arrays() -> None:
    """Give arrays of 1 MiB and more their own memory mappings, returned to the system when freed (glibc), and
    no huge pages (`no_huge_pages`).

    glibc raises its mmap threshold each time a large block is freed (up to 32 MiB); after that a round's
    plan arrays (tens of MB at full participation) come from the heap, which fragments. A full-participation
    Pinterest run's resident memory then crept up by about 20 MB a round and its peak from 1.93 to 2.06 GiB
    over 30 rounds; with a fixed threshold it stays at 1.63 GiB after every round, peak 1.93. Once per process.
    """
    no_huge_pages()
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, Windows): their allocators return large blocks anyway
        return
    libc.mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD = -3; setting it also turns off the dynamic raise


def no_huge_pages() -> None:
    """Stop numpy asking Linux for transparent huge pages on its large arrays (madvise, 4 MB and more), unless
    NUMPY_MADVISE_HUGEPAGE says otherwise. The first touch of such an array may compact memory: on this 2-core
    machine a full-participation ML-1M Top-K round took 9.6 s with them and 3.5 s without (the first round; 3.4 to
    3.8 s against 2.8 to 2.9 s after), and no measured round was faster with them (CoLR@4 and FedMF, ML-1M and
    Pinterest, every user a client)."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy without the switch
        return
    _set_madvise_hugepage(False)


def load_data(cfg: RunConfig) -> InteractionData:
    from ..data import load_dataset  # imported late: the data layer is only needed for real runs

    return load_dataset(cfg.dataset, seed=cfg.data_seed, size=cfg.synthetic_size, skew=cfg.data_skew)


def _gen(seed: int, round_idx: int, stream: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(np.random.SeedSequence([seed, round_idx, stream]).generate_state(1)[0]))


MEMORY_ENV = "LABCORE_MEMORY_GB"  # the memory a run may use, in GiB; default: what the machine has available


def memory_limit() -> int:
    """Bytes a run may use: $LABCORE_MEMORY_GB, else the machine's available memory (Linux), else 8 GiB."""
    if os.environ.get(MEMORY_ENV):
        return int(float(os.environ[MEMORY_ENV]) * 2**30)
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f if ":" in line}
        return info.get("MemAvailable", info.get("MemTotal", 8 * 2**30))
    except OSError:
        return 8 * 2**30


def estimate_memory(cfg: RunConfig, data: InteractionData, layout: str = "rows") -> dict[str, int]:
    """Peak bytes of one round for the heaviest possible cohort (the M most active users), by what holds them.

    An upper estimate from the shapes the round builds: the schedule and per-slot tensors of local training,
    the touched rows (update, row index, the client sum's run tables), and clients x items x width tables
    where a layout or codec still needs them (the dense layout; encryption and the quantization of a payload not
    held by rows work on each client's whole payload; a noisy link delivers whole tables).
    """
    M, N, d = cfg.clients_per_round, data.n_items, cfg.dim
    width = cfg.rank if cfg.method in ("colr", "scolr") else d
    n = np.sort(data.train_counts())[::-1][:M].astype(np.int64)
    per = n * (1 + cfg.num_negatives)
    samples = int(per.sum())
    slots = int((-(-per // cfg.batch_size)).sum()) * cfg.local_epochs * cfg.batch_size
    rows = int(np.minimum(per, N).sum())
    if layout == "dense":  # Q rows gathered once, about six (clients, batch, d) temporaries of a step
        per_slot = slots * 64 + slots * d * 4 * (2 if width != d else 1) + 6 * M * cfg.batch_size * d * 4
    else:  # the fused trainer reads the plan in place: the schedule's sample indices only
        per_slot = slots * 8
    # no update table where every round is summed on arrival (rank statistics read it in their rounds)
    table = 0 if layout == "rows" and sums_on_arrival(cfg) and not cfg.rank_every else rows * width * 4
    est = {"schedule and per-slot tensors": per_slot + samples * 48,
           "touched rows (update, row index) and the client sum's run tables":
               table + rows * 32 + (min(16, -(-M // 16)) + 4) * N * width * 4}
    dense_table = M * N * width * 4
    if layout == "dense":
        T = int((-(-per.max(initial=0) // cfg.batch_size)) * cfg.local_epochs)
        est["dense update tables and schedule"] = 4 * dense_table + T * M * cfg.batch_size * 8
    elif cfg.method == "svd":  # from the touched rows: Gram matrices, U in float64, the decoded rows
        est["SVD factors (Gram matrices, U, decoded rows)"] = 3 * M * d * d * 8 + rows * (cfg.rank * 24 + d * 4)
    elif cfg.method == "topk":  # encoded from the rows and decoded onto them
        k = topk_count(N * d, cfg.topk_ratio)
        # the message (values, indices) as sent and as received, then the decoded rows; when a noisy link may move
        # zeros of a short client's padding off its rows (QSGD keeps a zero at zero), the rows they land on inserted
        # (a second copy of the rows): only the padding in the quantizer's bucket of the client's last values moves
        off_rows = cfg.noisy_link("up")
        received = M * min(N, -(-min(k, cfg.quant_bucket) // d) + 1) * d * 4 if off_rows else 0
        est["Top-K message and its decode"] = M * k * 16 + rows * d * 4 * (2 if off_rows else 1) + received
    est.update(algorithm_class(cfg).memory(cfg, data, rows))
    if cfg.quantized_by_rows():  # drawn for and dequantized by the held rows; the packed codes span whole tables
        est["packed codes of the quantized uplink"] = (M * int(packed_bytes(N * width, cfg.up_bits)) + rows * width * 4
                                                       + min(BLOCK_VALUES, rows * width) * 8
                                                       + M * -(-N * width // cfg.quant_bucket) * 12)
        if cfg.noisy_link("up"):  # a zero can arrive nonzero: the server receives and decodes whole tables
            est["whole tables received over the noisy uplink"] = 2 * dense_table + 2 * min(BLOCK_VALUES,
                                                                                          M * N * width) * 8
    elif cfg.up_bits:  # QSGD rounds every value of each client's payload: Top-K's k values, else its whole table
        # (by rows or not; for SVD that bound also holds its dense decode)
        payload = topk_count(N * d, cfg.topk_ratio) if cfg.method == "topk" else N * width
        est["quantizer of the uplink (float64 copies of the payload)"] = 4 * M * payload * 8
    if cfg.down_bits:  # one broadcast, at most the item table
        est["quantizer of the downlink (float64 copies of the broadcast)"] = 4 * N * d * 8
    if cfg.encryption != "none":
        est["encryption (each client's dense vector)"] = 3 * M * N * width * 8
    return est


def sums_on_arrival(cfg: RunConfig) -> bool:
    """Plain FedMF: nothing but the server's sum reads a client's update (no quantized uplink, encryption, attack,
    defense, personal model, or algorithm that reads each update: `FedAvg.sums_on_arrival`), so the server can add
    each client's rows as the client ends (`Simulation._sums_on_arrival`; at ML-1M's full participation the update
    table it spares is 1.07 GB). DP's clipping reads one client's rows only: it is done on arrival too, and where
    nothing reads a client's update the clients' noise shares (distributed, local DP) are drawn on the sum."""
    return (cfg.method == "fedmf" and algorithm_class(cfg).sums_on_arrival and personalization_class(cfg) is None
            and not cfg.up_bits and cfg.encryption == "none" and cfg.attack == "none" and cfg.defense == "none")


def check_memory(cfg: RunConfig, data: InteractionData, layout: str = "rows") -> None:
    est = estimate_memory(cfg, data, layout)
    need, limit = sum(est.values()), memory_limit()
    if need <= limit:
        return
    width_field = "rank" if cfg.method in ("colr", "scolr") else "dim"
    biggest = max(est, key=est.get)
    dense = biggest.startswith(("dense", "quant", "encr", "whole"))
    raise ConfigError(
        f"clients_per_round={cfg.clients_per_round} is invalid with {width_field}={getattr(cfg, width_field)}, "
        f"method={cfg.method!r} on {data.name}: one round needs about {need / 2**30:.1f} GiB of memory (largest: "
        f"{biggest}, {est[biggest] / 2**30:.1f} GiB) and {limit / 2**30:.1f} GiB are available; lower "
        f"clients_per_round or {width_field}"
        + (", or use a method that sends rows (fedmf, colr, scolr) without encryption or a noisy link" if dense else "")
        + f" (${MEMORY_ENV} sets the limit)")


def check_fits(cfg: RunConfig, data: InteractionData, layout: str = "rows") -> None:
    """Refuse, before training, a config this data set cannot hold or this machine's memory cannot run."""
    if cfg.clients_per_round > data.n_users:
        raise ConfigError(f"clients_per_round={cfg.clients_per_round} is invalid: {data.name} has only "
                          f"{data.n_users} users (allowed range 1..{data.n_users})")
    check_prox_pull(cfg)
    check_algorithm(cfg)
    check_robust(cfg, data.n_items)
    check_personal(cfg, data.n_users, data.n_items)
    check_memory(cfg, data, layout)


from ..diverged import DivergedError  # noqa: E402  (the lab's one divergence error; importers find it here too)


class Simulation:
    """State of one run; `step()` plays one round. Kept small so tests can drive it round by round."""

    def __init__(self, cfg: RunConfig, data: InteractionData, trainer=None, layout: str = "rows", algorithm=None):
        """trainer: the local-training function (default: the batched one of the layout);
        `train_cohort_readable` is the per-client readable path.
        algorithm: a subclass of `fed.algorithms.FedAvg` to run instead of the one the config names (an algorithm
        of one's own: see `fed/algorithms/__init__.py`).
        layout: "rows" (default) keeps each client's update by the rows it touched; "dense" keeps clients x items
        tables (dense update tables, every message serialized), the same numbers, for
        benchmarks/engine_full_participation.py and the equality tests."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout={layout!r}: allowed values are {', '.join(LAYOUTS)}")
        check_fits(cfg, data, layout)
        release_large_arrays()
        use_threads()
        if trainer is None:
            if layout == "dense":
                from .batched import train_cohort_dense as trainer
            else:
                trainer = train_cohort
        # the compiled trainer takes a workspace, a summing target and an algorithm's inputs; others only the plan
        self.uses_engine_trainer = trainer is train_cohort
        algorithm = algorithm or algorithm_class(cfg)
        algorithm.check_trainer(cfg, trainer, layout, self.uses_engine_trainer)
        self.trainer, self.layout = trainer, layout
        self._workspace = Workspace()
        self.cfg, self.data = cfg, data
        self.method = make_method(cfg, data.n_items)
        self.server = server_opt.make(cfg.server_optimizer, lr=cfg.server_lr, momentum=cfg.server_momentum,
                                      beta1=cfg.server_beta1, beta2=cfg.server_beta2, tau=cfg.server_tau)
        self.sampler = S.NegativeSampler(data)
        g = _gen(cfg.seed, S.SETUP, 0)
        std = 1.0 / np.sqrt(cfg.dim)  # N(0, 1/d) as in the reference MF
        self.Q = torch.randn(data.n_items, cfg.dim, generator=g) * std
        self.P = torch.randn(data.n_users, cfg.dim, generator=g) * std
        self.time_model = RoundTimeModel(cfg.bw_down, cfg.bw_up, cfg.r_comp, cfg.c_comp, cfg.bandwidth_tiers)
        self.tier = self.time_model.assign_tiers(data.n_users, S.round_rng(cfg.seed, S.SETUP, 1))
        self.ledger = Ledger(every_message=layout == "dense")
        self.rows: list[dict] = []
        self.round = 0
        self.secure = make_secure_mod(cfg, data.n_items)  # None unless cfg.encryption is set
        self.dp = RoundDP.from_config(cfg, data.n_users)  # None unless cfg.dp_mode is set (labcore.privacy.dp)
        self.algorithm = algorithm(cfg, data, self.Q, self.P)  # fed/algorithms: the round's hooks
        personal = personalization_class(cfg)
        self.personal = personal(cfg, self.Q, self.P) if personal is not None else None
        self.attack = attacks.make(cfg, data)  # None without attackers
        self.defense = defenses.make(cfg)  # None: the algorithm's weighted average
        self.keep_view = False  # keep what the server saw in the last round (self.view): for the attacks
        self.view: dict | None = None

    # --- one round --------------------------------------------------------
    def step(self) -> dict:
        cfg, t, data = self.cfg, self.round, self.data
        clients = S.round_clients(cfg.client_schedule, data.n_users, cfg.clients_per_round, cfg.seed, t)
        n_sampled, n_dropped = len(clients), 0
        if cfg.dropout:  # some leave after the downlink: the round goes on with the survivors (see fed/dropout.py)
            gone = dropout.draw(n_sampled, cfg.dropout, cfg.seed, t)
            dropout.check_survivors(cfg, t, n_sampled, n_sampled - int(gone.sum()))
            clients, n_dropped = clients[~gone], int(gone.sum())
        steps = None
        if cfg.stragglers:  # a share of the cohort takes fewer steps: dropped, or kept with its partial work
            full = stragglers.full_steps(data.train_counts()[clients], cfg.num_negatives, cfg.local_epochs,
                                         cfg.batch_size)
            slow, steps = stragglers.draw(full, cfg.stragglers, cfg.seed, t, keep_one=cfg.drops_stragglers())
            if cfg.drops_stragglers():
                clients, steps = clients[~slow], None
        plan = S.plan_round(data, self.sampler, clients, cfg.num_negatives, cfg.local_epochs, cfg.batch_size,
                            cfg.seed, t, None if self.keep_view else self._workspace)
        if steps is not None:
            plan = stragglers.truncate(plan, steps)
        setup = self.method.setup_round(t, len(clients), _gen(cfg.seed, t, S.STREAM_METHOD))
        self.algorithm.before_training(self, clients, plan)
        t0 = time.perf_counter()
        local = self.algorithm.local_train(self, clients, plan, setup)
        if self.personal is not None:  # the personal models' steps on the same batches
            self.personal.train(self, clients, plan)
        sec_local = time.perf_counter() - t0
        n_pos, n_steps = plan.n_pos, plan.n_steps
        if not self.keep_view:  # the schedule and the per-sample arrays are done with
            del plan
            if (local.rows is not None and local.rows.values is not None
                    and local.rows.values.nbytes > self._workspace.nbytes(*SAMPLE_ARRAYS)):
                # the update table is the larger (FedMF, SVD, Top-K): kept, the sample arrays would add to the
                # run's memory peak (Pinterest FedMF at full participation: 1.80 -> 1.87 GiB), so they are freed
                self._workspace.release(*SAMPLE_ARRAYS)
        if self.layout == "rows" and local.rows is None:  # a dense trainer (the loop oracle): keep its rows
            local = LocalResult(local.p, None, None, local.loss_sum, local.n_samples, local.row_update())
        elif local.rows is None and cfg.quantized_by_rows():
            # QSGD draws one number per value a client holds (`quantize_rows`): the dense layout hands its quantizer
            # the same rows, so that both layouts still give the same numbers
            local = LocalResult(local.p, local.update, local.touched, local.loss_sum, local.n_samples,
                                local.row_update())

        if self.attack is not None and self.attack.in_cohort(clients):  # the attackers overwrite their update
            rows = self.attack.plant(local.row_update(), clients, n_pos, self.Q, self.P)
            local = dataclasses.replace(local, rows=rows, update=None, touched=None)
        up, up_sent, up_bytes, decoded, agg, he, t1 = self.algorithm.uplink(self, t, local, clients, setup, n_pos,
                                                                            n_steps, n_dropped)
        down = self.method.downlink(agg, setup)
        if self.server.stateful:  # FedAvgM / FedAdam / FedYogi: the broadcast is the server's step (clients
            # keep no optimizer state), made from the change the method's broadcast stands for
            step = self.server.step(self.method.downlink_delta({w.name: w for w in down}, setup))
            down = [Wire("server_step", "values", step.reshape(1, -1))]
        down = down + self.algorithm.extra_downlink()
        down_sent, down_recv = quantize_wires(down, cfg.down_bits, cfg.quant_bucket,
                                              _gen(cfg.seed, t, S.STREAM_QUANT + 1), cfg.down_link_budget)
        self.Q = self._apply_downlink({w.name: w for w in down_recv}, setup)
        self._check_finite(t, local.loss_sum / max(local.n_samples, 1))
        sec_server = time.perf_counter() - t1 - (he.wall_s if he else 0.0)
        receivers = len(clients) + n_dropped  # the dropped clients had downloaded the round's model
        down_bytes = (self.ledger.record(t, "down", down_sent, receivers=receivers) if he is None
                      else self.secure.record_down(self.ledger, t, down_sent, he, receivers))
        self.P[clients] = local.p
        if self.keep_view:
            if isinstance(decoded, RowUpdate):
                decoded = decoded.dense()
            self.view = {"plan": plan, "decoded": decoded, "up_sent": up_sent, "aggregate": agg,
                         "secure": he.view if he else None}

        row = {"round": t, "loss": local.loss_sum / max(local.n_samples, 1), "sec_local": sec_local,
               "bytes_up": int(up_bytes.sum()) + (he.dropped_up_bytes if he else 0),
               "bytes_down": int(down_bytes.sum()) * receivers + (he.down_only_bytes if he else 0),
               "bytes_up_client": float(up_bytes.mean()), "bytes_down_client": float(down_bytes.sum())}
        row.update(self._times(clients, n_pos, up_bytes, int(down_bytes.sum()), sec_local, sec_server, up, he))
        row.update(he.columns() if he else {})
        if cfg.dropout:
            row["clients_dropped"] = n_dropped
        if self.dp is not None:  # the noise the round's sum carried, and the run's epsilon so far
            row["dp_sigma"] = self.dp.sigma_round(len(clients))
            row["epsilon"] = self.dp.epsilon(self.rows + [row])
        if cfg.rank_every and t % cfg.rank_every == 0:
            row.update(self._effective_rank(local, setup))
            row.update(aggregate_rank_stats(agg, setup))
        evaluated = (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds
        if evaluated:
            row["hr"], row["ndcg"] = self.evaluate()
            row.update(self.client_loss_stats())
            row.update(self.personal.quality(self) if self.personal is not None
                       else self.algorithm.personal_quality(self))
        if self.attack is not None:
            row.update(self.attack.round_row(self, clients, evaluated))
        prev = self.rows[-1] if self.rows else {"cum_bytes": 0, "wallclock": 0.0}
        row["cum_bytes"] = prev["cum_bytes"] + row["bytes_up"] + row["bytes_down"]
        row["wallclock"] = prev["wallclock"] + row["t_round"]
        self.rows.append(row)
        self.round += 1
        return row

    def _sums_on_arrival(self, t: int) -> bool:
        """Whether round t's server adds each client's rows to the aggregate as the client ends (`SummedRows`):
        `sums_on_arrival`, with the engine's trainer and not a round whose rank statistics, kept view or ledger
        of every message reads each client's update. The same numbers to the bit, without the update table."""
        cfg = self.cfg
        return (sums_on_arrival(cfg) and self.algorithm.sums_on_arrival and self.uses_engine_trainer
                and self.layout == "rows" and not self.keep_view and self.Q.dtype == torch.float32
                and not self.ledger.every_message and not (cfg.rank_every and t % cfg.rank_every == 0))

    def arrival_sum(self, n_pos: np.ndarray) -> tuple | None:
        """What the engine's trainer sums as each client ends (`train_cohort`'s sum_on_arrival), or None: the
        aggregation and the clients' weights, and under DP the clip norm with equal weights (DP sums the
        clipped updates unweighted, as `_uplink` does with a table)."""
        if not self._sums_on_arrival(self.round):
            return None
        if self.dp is None:
            return self.cfg.aggregation, fedavg_weights(torch.from_numpy(n_pos))
        return self.cfg.aggregation, fedavg_weights(torch.ones(len(n_pos), dtype=torch.int64)), self.dp.clip

    def _uplink(self, t: int, local: LocalResult, setup, n_pos: np.ndarray, n_dropped: int = 0):
        """The method's uplink through quantization, the ledger (or encryption) and the server's aggregate."""
        cfg = self.cfg
        up = self.method.uplink(local, setup)
        up_sent, up_recv = quantize_wires(up, cfg.up_bits, cfg.quant_bucket, _gen(cfg.seed, t, S.STREAM_QUANT),
                                          cfg.up_link_budget, None if self.keep_view else self._workspace)
        if cfg.aggregation == "item_mean":
            up_sent = up_sent + [item_mask_wire(local.rows if local.rows is not None else local.touched)]
        up_sent = up_sent + self.algorithm.extra_uplink()  # q-FFL: each client's loss before training
        he, up_bytes = None, None
        if self.secure is None:
            up_bytes = self.ledger.record(t, "up", up_sent)

        t1 = time.perf_counter()
        decoded = self.method.decode_uplink({w.name: w for w in up_recv}, setup, local.rows)
        if self.dp is not None:  # each update clipped in the aggregated space (+ its noise share), summed unweighted
            dp_gen = _gen(cfg.seed, t, STREAM_DP)
            noised = self._read_alone(t, len(n_pos), n_dropped)
            if not isinstance(decoded, SummedRows):  # (summed rows were clipped as each client ended)
                out = None
                if (isinstance(decoded, RowUpdate) and decoded.values.dtype == torch.float32 and not self.keep_view
                        and self.dp.mode == "central"):
                    out = torch.from_numpy(self._workspace.array("dp_clipped", tuple(decoded.values.shape),
                                                                 np.float32))
                decoded = self.dp.privatize_clients(decoded, dp_gen, out, noised)
            n_pos = np.ones(len(n_pos), np.int64)
        if self.secure is None:
            touched = None if isinstance(decoded, RowUpdate) else local.touched_dense()
            weights = self.algorithm.weigh(fedavg_weights(torch.from_numpy(n_pos)), decoded)
            if self.defense is not None:
                rows = (decoded if isinstance(decoded, RowUpdate)
                        else RowUpdate.from_dense(decoded, local.touched_dense()))
                agg = self.defense.aggregate(rows, weights, t)
            else:
                agg = aggregate(decoded, cfg.aggregation, weights, touched, self.method.layout)
        else:  # encrypted / masked sum; the mod records the protected uplink in the ledger
            if isinstance(decoded, RowUpdate):  # the protocols work on each client's dense vector
                decoded = decoded.dense()
            he = self.secure.aggregate(t, up_sent, up_recv, decoded, n_pos, local.touched_dense(), setup,
                                       self.ledger, n_dropped)
            agg, up_bytes = he.aggregate, he.up_bytes
        if self.dp is not None:  # the noise on the sum; divided by the expected cohort, not the actual one
            on_sum = 0 if noised is None else len(n_pos) - len(noised)  # the shares of the clients no one reads alone
            noise = self.dp.server_noise(agg.shape, dp_gen, agg.dtype, on_sum)
            agg = (agg * len(n_pos) + noise) / self.dp.expected_cohort
        return up, up_sent, up_bytes, decoded, agg, he, t1

    def _read_alone(self, t: int, M: int, n_dropped: int) -> np.ndarray | None:
        """The uploaders whose own update something reads (None: all of them, for the round's view): the clients
        whose update is masked or encrypted for real; none without protection (the ledger records the messages
        before DP, and the server reads only the sum)."""
        if self.keep_view:
            return None
        if self.secure is None:
            return np.zeros(0, np.int64)
        return self.secure.real_clients(t, M, n_dropped)

    def _check_finite(self, t: int, loss: float) -> None:
        """Stop a run whose numbers left the floats (a step size too large) with what to change, before the
        round's statistics fail on them."""
        if math.isfinite(loss) and bool(torch.isfinite(self.Q).all()):
            return
        cfg = self.cfg
        knobs = ([f"lr (now {cfg.lr:g})"] + ([f"prox_mu (now {cfg.prox_mu:g})"] if cfg.prox_mu else [])
                 + ([f"server_lr (now {cfg.server_lr:g})"] if cfg.server_optimizer != "fedavg" or cfg.server_lr != 1.0
                    else []))
        raise DivergedError(f"round {t + 1}: the run diverged (training loss {loss:.3g}, item table "
                            f"{'finite' if bool(torch.isfinite(self.Q).all()) else 'not finite'}): lower "
                            + " or ".join(knobs))

    def _apply_downlink(self, wires: dict[str, Wire], setup) -> torch.Tensor:
        if self.server.stateful:
            return self.Q + wires["server_step"].data.view_as(self.Q)
        if self.server.lr != 1.0:  # FedAvg with a server step size: the clients scale the broadcast themselves
            return self.Q + self.server.step(self.method.downlink_delta(wires, setup))
        return self.method.apply_downlink(self.Q, wires, setup)

    def _times(self, clients, n_pos, up_bytes, down_bytes, sec_local, sec_server, up_wires, he=None) -> dict:
        cfg = self.cfg
        work = self.algorithm.work_per_sample + (self.personal.work_per_sample if self.personal is not None else 0)
        samples = n_pos * (1 + cfg.num_negatives) * cfg.local_epochs * work  # gradient evaluations per sample
        if cfg.comp_time == "measured":  # this machine's batched time, shared in proportion to work
            t_sim, t_server = sec_local * samples / samples.sum(), sec_server
        else:  # calibrated constants: reproducible across machines and runs
            t_sim, t_server = cfg.sec_per_sample * samples, cfg.sec_per_value * wire_values(up_wires)
        if he is not None:  # measured HE costs (columns he_client_s, he_server_s): clients encrypt + decrypt
            t_sim, t_server = t_sim + he.client_s, t_server + he.server_s
        return self.time_model.round_time(np.full(len(up_bytes), down_bytes), up_bytes, t_sim,
                                          self.tier[clients], t_server)

    def _effective_rank(self, local, setup) -> dict:
        right = None if setup.lowrank is None else setup.lowrank.B
        if local.rows is None:
            return effective_rank_stats(local.update, right)
        if local.rows.n_clients * local.rows.n_items * local.rows.width <= _DENSE_RANK_LIMIT:
            return effective_rank_stats(local.rows.dense(), right)  # small: the dense computation, same bits
        return rank_stats_rows(local.rows, right)

    def evaluate(self) -> tuple[float, float]:
        return hit_ratio_ndcg(self.P, self.Q, self.data.test_items, self.data.test_negatives, self.cfg.top_k)

    def client_loss_stats(self) -> dict[str, float]:
        """The spread of the model's quality over the clients: each user's mean BCE over its training positives and
        its evaluation negatives (`kernels.fused.user_losses`); mean, standard deviation, mean of the worst 10 %."""
        from .kernels.fused import user_losses

        d = self.data
        loss = user_losses(np.ascontiguousarray(self.Q.to(torch.float32).numpy()),
                           np.ascontiguousarray(self.P.to(torch.float32).numpy()), d.train_indptr, d.train_items,
                           np.ascontiguousarray(d.test_negatives))
        worst = np.sort(loss)[-max(1, len(loss) // 10):]
        return {"client_loss_mean": float(loss.mean()), "client_loss_std": float(loss.std()),
                "client_loss_worst10": float(worst.mean())}

    # --- checkpoints --------------------------------------------------------
    def state(self) -> dict:
        return {"round": self.round, "Q": self.Q, "P": self.P, "rows": self.rows, "ledger": self.ledger.rows,
                "key": self.cfg.key(), "server": self.server.state_dict(), "variates": None, "personal": None,
                **self.algorithm.state(), **(self.personal.state() if self.personal is not None else {})}

    def load_state(self, st: dict) -> None:
        if st.get("key") != self.cfg.key():
            raise ValueError("checkpoint belongs to a different config")
        self.round, self.Q, self.P = st["round"], st["Q"], st["P"]
        self.server.load_state_dict(st.get("server", {}))
        self.algorithm.load_state(st)
        if self.personal is not None:
            self.personal.load_state(st)
        self.rows, self.ledger = list(st["rows"]), Ledger(st["ledger"])

    def result(self, complete: bool) -> Result:
        import pandas as pd

        table = pd.DataFrame(self.rows).reindex(columns=list(ROUND_COLUMNS))
        notes = self.data.notes + (self.dp.stop_note(self.rows) if self.dp is not None else "")
        return Result(self.cfg, table, self.ledger.frame(), notes, complete)


# Effective rank from the dense (M, N, k) update up to this many values (CoLR at the paper's cohort: cheap, and
# the very numbers of the stored results); from the touched rows beyond (FedMF d=64: 5x less work).
_DENSE_RANK_LIMIT = 1 << 22


def aggregate_rank_stats(agg: torch.Tensor, setup) -> dict[str, float]:
    """N90 / N99 / entropy rank of the round's aggregated item-table update (the server's aggregate, (N, k)).

    The same definitions as the per-client columns, on one (N, d) matrix: for CoLR / SCoLR the aggregate is A
    and the update A B^T. Unlike a client's FedMF update (rank 1 when the client trained one user vector),
    the aggregate's rank grows with the cohort."""
    right = None if setup.lowrank is None else setup.lowrank.B
    s = effective_rank_stats(agg[None], right)
    return {"agg_n90": s["n90_mean"], "agg_n99": s["n99_mean"], "agg_erank": s["erank_mean"]}


def rank_stats_rows(rows: RowUpdate, right: torch.Tensor | None = None) -> dict[str, float]:
    """`effective_rank_stats` of the cohort's updates from their touched rows.

    The centred covariance of client u's (N, k) update is sum over touched rows of (x - mu)(x - mu)^T plus
    (N - n_u) mu mu^T for the untouched (zero) rows, mu the column means. Float64 throughout; N90 / N99 as
    the dense computation, the entropy rank equal to ~1e-8 relative (it takes square roots of eigenvalues
    that are rounding noise when the update has rank < k).
    """
    from ..metrics.effective_rank import components_for, entropy_rank

    M, N, k = rows.shape
    X = rows.values.to(torch.float64)
    ptr = rows.indptr
    cov = torch.zeros(M, k, k, dtype=torch.float64)
    for m in range(M):
        Xm = X[int(ptr[m]): int(ptr[m + 1])]
        mu = Xm.sum(0) / N
        Xc = Xm - mu
        cov[m] = Xc.T @ Xc + (N - Xm.shape[0]) * torch.outer(mu, mu)
    if right is not None:
        R = right.to(torch.float64)
        cov = R @ cov @ R.T
    evals = torch.linalg.eigvalsh(cov).flip(-1).clamp(min=0)
    total = evals.sum(-1, keepdim=True)
    ratios = torch.where(total > 0, evals / torch.where(total > 0, total, torch.ones_like(total)),
                         torch.full_like(evals, math.nan))
    ok = ~torch.isnan(ratios[:, 0])
    if not ok.any():
        return {k: math.nan for k in ("n90_mean", "n90_std", "n99_mean", "n99_std", "erank_mean")}
    r = ratios[ok]
    n90, n99 = components_for(r, 0.90).double(), components_for(r, 0.99).double()
    std = (lambda t: float(t.std(unbiased=False)))  # noqa: E731
    return {"n90_mean": float(n90.mean()), "n90_std": std(n90), "n99_mean": float(n99.mean()), "n99_std": std(n99),
            "erank_mean": float(entropy_rank(r).mean())}


def run(cfg: RunConfig, *, data: InteractionData | None = None, cache_dir: Path | str | None = None,
        use_cache: bool = True, progress: bool = True, on_round: Callable[[dict], None] | None = None,
        should_stop: Callable[[], bool] | None = None) -> Result:
    """Train, evaluate and measure one configuration.

    use_cache: return a stored result for the same config at once, and resume
    from a checkpoint if an earlier run of it was interrupted.
    on_round: called with each round's row (the app streams charts from it).
    should_stop: polled between rounds; a stopped run is checkpointed and
    returned with complete=False.
    """
    folder = Path(cache_dir or default_cache_dir()) / cfg.key()
    return run_cached(lambda: Simulation(cfg, data if data is not None else load_data(cfg)),
                      folder if use_cache else None, Result.load,
                      (lambda start: _progress(cfg, start)) if progress else None,
                      on_round=on_round, should_stop=should_stop,
                      postfix=lambda row: {"hr": f"{row['hr']:.3f}", "ndcg": f"{row['ndcg']:.3f}"}
                      if "hr" in row else None)


def _progress(cfg: RunConfig, start: int):
    from tqdm.auto import tqdm

    return tqdm(total=cfg.rounds, initial=start, desc=cfg.describe(), unit="round", leave=False)

"""Run a config as a Flower federation in Flower's simulation engine (Ray underneath), on one machine.

    from labcore.scale.simulate import run_flower
    fr = run_flower(RunConfig(method="colr", rank=4, rounds=3), nodes=10, num_cpus=2)
    fr.table   # round, loss, bytes (the lab's ledger), hr / ndcg, Flower's own serialized bytes, seconds

Ray's default of 2 CPUs per ClientApp runs one client at a time on a 2-core machine: each ClientApp asks
for `cpus_per_client` (default 1) of the `num_cpus` Ray is started with.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile

from ..config import RunConfig
from .federation import check_supported
from .flower_app import FlowerRun, Spec, make_apps


def backend_config(num_cpus: int, cpus_per_client: float = 1.0) -> dict:
    return {"init_args": {"num_cpus": int(num_cpus), "include_dashboard": False, "log_to_driver": False},
            "client_resources": {"num_cpus": float(cpus_per_client), "num_gpus": 0.0}}


def run_flower(cfg: RunConfig, nodes: int | None = None, *, draws: str = "engine", num_cpus: int = 2,
               cpus_per_client: float = 1.0, measure_bytes: bool = True, quiet: bool = True) -> FlowerRun:
    """Train `cfg` as a ServerApp + `nodes` ClientApps in Flower's simulation engine; returns the FlowerRun.

    nodes: SuperNodes, each serving a contiguous block of users (default: one per sampled client, at most
    the number of users).
    """
    from flwr.simulation import run_simulation

    from .flower_app import load_data
    from .ray_runs import connect

    check_supported(cfg)  # before Ray starts: inside the ServerApp it would end as "ended without a result"

    n_users = load_data(cfg).n_users
    nodes = nodes or min(cfg.clients_per_round, n_users)
    keys = tempfile.TemporaryDirectory(prefix="labcore-ckks-") if cfg.encryption == "ckks" else None
    if keys is not None:  # one key pair for this federation: the nodes read secret.ctx, the server public.ctx
        from .encrypted import write_keys

        write_keys(cfg, keys.name)
    spec = Spec(cfg, nodes, draws, measure_bytes, keys=keys.name if keys else "")
    sink: list[FlowerRun] = []
    server_app, client_app = make_apps(spec, sink)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    level = logging.getLogger("flwr").level
    if quiet:
        logging.getLogger("flwr").setLevel(logging.WARNING)
    connect(None, num_cpus)  # Flower's Ray backend uses a running Ray; ours retries a start that misses its deadline
    try:
        with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
            run_simulation(server_app, client_app, num_supernodes=nodes,
                           backend_config=backend_config(num_cpus, cpus_per_client))
    finally:
        logging.getLogger("flwr").setLevel(level)
        if keys is not None:
            keys.cleanup()
    if not sink:
        raise RuntimeError("the Flower simulation ended without a result (see the log above)")
    return sink[0]

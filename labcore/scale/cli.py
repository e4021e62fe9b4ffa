"""`labcore flower {sim,deploy,app} ...` and `labcore sweep ...` (Flower and Ray are imported only when used)."""
from __future__ import annotations

import functools
import itertools
import sys
from pathlib import Path

BACKENDS = ("processes", "ray")
CONNECT_TIMEOUT_S = 5.0  # a Ray head that does not accept a TCP connection in this time is reported unreachable
TLS_CAVEAT = ("--insecure sends every update in the clear: use it on a closed network only; anywhere else use TLS "
              "(drop --insecure, pass certificates; docs/scale-out.md)")


def check_backend(backend: str, address: str | None) -> None:
    """`--address` only with `--backend ray`, and a `host:port` address that accepts a connection within
    CONNECT_TIMEOUT_S (ray.init would otherwise wait minutes without a word)."""
    if address is None:
        return
    if backend != "ray":
        raise ValueError(f"--address={address!r} is invalid without --backend ray: it names a Ray cluster "
                         f"(--backend is {backend!r})")
    if address in ("auto", "local"):
        return  # Ray finds (or refuses) the cluster of this machine itself
    host, port = _host_port(address)
    import socket

    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise ValueError(f"--address={address!r}: no Ray cluster answers at {host}:{port} within "
                         f"{CONNECT_TIMEOUT_S:g} s ({e.strerror or e}); start one (`ray start --head`) or check the "
                         "address (auto, host:6379 or ray://host:10001)") from None


def _host_port(address: str) -> tuple[str, int]:
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--address={address!r} is invalid: expected auto, host:port (1..65535) or "
                         "ray://host:port")
    return host, int(port)


def add_commands(sub, add_config_options, config_from_args) -> None:
    """The scale-out commands, with the run options of `labcore run` (`add_config_options` adds them to a parser,
    `config_from_args` reads a RunConfig back): the CLI hands them in, so this module does not import it."""
    p = sub.add_parser("flower", help="run a method as a Flower federation: in Flower's simulation engine (sim), "
                                      "as SuperLink + SuperNode processes on this machine (deploy), or print the "
                                      "app and commands for several machines (app); needs labcore[scale]")
    p.add_argument("mode", choices=("sim", "deploy", "app"))
    add_config_options(p)
    p.add_argument("--nodes", type=int, default=None,
                   help="SuperNodes, each serving a block of users (sim default: one per sampled client; deploy: 3)")
    p.add_argument("--draws", choices=("engine", "local"), default="engine",
                   help="engine: same numbers as `labcore run`; local: each node draws for its own users")
    p.add_argument("--num-cpus", type=int, default=2, help="sim: CPUs of the local Ray cluster (one per ClientApp)")
    p.add_argument("--out", help="write table.csv, ledger.csv and bytes_check.csv here")
    p.set_defaults(fn=functools.partial(cmd_flower, config_from_args=config_from_args))

    p = sub.add_parser("sweep", help="train a grid of configs in parallel (processes or a Ray cluster) and "
                                     "print one row per config")
    add_config_options(p)
    p.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2,...",
                   help="a field and its values (repeat for a product), e.g. --grid rank=1,2,4 --grid method=colr,svd")
    p.add_argument("--backend", choices=BACKENDS, default="processes")
    p.add_argument("--jobs", type=int, default=2, help="processes, or CPUs of a local Ray cluster")
    p.add_argument("--address", help="with --backend ray: an existing cluster (e.g. ray://host:10001 or auto)")
    p.add_argument("--out", help="also write the table to this CSV")
    p.set_defaults(fn=functools.partial(cmd_sweep, config_from_args=config_from_args))


def grid_configs(base: dict, grid: list[str]) -> list:
    from ..config import from_dict

    axes = []
    for item in grid:
        if "=" not in item:
            raise ValueError(f"--grid {item!r} is invalid: write FIELD=V1,V2,... (e.g. rank=1,2,4)")
        name, values = item.split("=", 1)
        axes.append([(name.strip().replace("-", "_"), v.strip()) for v in values.split(",") if v.strip()])
    return [from_dict({**base, **dict(combo)}) for combo in itertools.product(*axes)] if axes else [from_dict(base)]


def cmd_sweep(ns, config_from_args) -> int:
    import pandas as pd

    from ..config import RunConfig
    from ..fed.engine import run
    from ..figures.runs import train_parallel, train_ray

    config_from_args(ns)  # the base options alone must make a valid config
    check_backend(ns.backend, ns.address)
    if ns.jobs < 1:
        raise ValueError(f"--jobs={ns.jobs} is invalid: allowed values are whole numbers >= 1")
    given = {k: getattr(ns, k) for k in RunConfig.__dataclass_fields__ if getattr(ns, k, None) is not None}
    cfgs = grid_configs(given, ns.grid)
    if ns.backend == "ray":
        n = train_ray(cfgs, address=ns.address, num_cpus=ns.jobs)
    else:
        n = train_parallel(cfgs, max(ns.jobs, 1))
    print(f"trained {n} of {len(cfgs)} runs ({ns.backend}); the others were cached", file=sys.stderr)
    fields = sorted({item.split("=", 1)[0].strip().replace("-", "_") for item in ns.grid})
    rows = []
    for c in cfgs:
        f = run(c, progress=False).final
        rows.append({**{k: getattr(c, k) for k in fields}, "key": c.key(), "hr": f["hr"], "ndcg": f["ndcg"],
                     "bytes_up": f["bytes_up"], "bytes_down": f["bytes_down"]})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if ns.out:
        Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(ns.out, index=False)
    return 0


def cmd_flower(ns, config_from_args) -> int:
    cfg = config_from_args(ns)
    if ns.mode == "app":
        from .deploy import APP_DIR

        print(f"Flower app: {APP_DIR}\n"
              "server:   flower-superlink --insecure --host 0.0.0.0 --port 8000\n"
              "node k:   flower-supernode --insecure --superlink <server>:8000 "
              "--node-config 'partition-id=<k> num-partitions=<n>'\n"
              f"run:      FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1 flwr run {APP_DIR} <connection> "
              "--run-config 'nodes=<n> config=\"<RunConfig as JSON>\" out=\"<folder>\"' --stream\n"
              "CKKS:     add keys=\"<folder>\" to --run-config, the folder holding secret.ctx on every node and "
              "public.ctx on the server (labcore.scale.encrypted.write_keys)\n"
              "(docs/scale-out.md: the connection in $FLWR_HOME/config.toml, one labcore install per machine)\n"
              f"TLS:      {TLS_CAVEAT}")
        return 0
    from .federation import check_supported

    check_supported(cfg)  # before the federation's processes start
    if ns.mode == "sim":
        from .simulate import run_flower

        res = run_flower(cfg, ns.nodes, draws=ns.draws, num_cpus=ns.num_cpus)
    else:
        import pandas as pd

        from .deploy import LocalFederation
        from .flower_app import FlowerRun

        out = Path(ns.out or "flower-run")
        with LocalFederation(ns.nodes or 3) as fed:
            fed.run(cfg, out, draws=ns.draws)
        res = FlowerRun(cfg, pd.read_csv(out / "table.csv"), pd.read_csv(out / "ledger.csv"),
                        pd.read_csv(out / "bytes_check.csv"))
    if ns.out:
        res.save(ns.out)
    cols = [c for c in ("round", "loss", "hr", "ndcg", "bytes_up", "bytes_down", "flower_bytes_up", "sec_round")
            if c in res.table.columns]
    print(f"{cfg.describe()} on {cfg.dataset} as a Flower federation ({ns.mode}):")
    print(res.table[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0

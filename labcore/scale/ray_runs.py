"""Card runs and sweeps as Ray tasks: a local Ray cluster by default, or an existing one (`address`).

Each task trains one config with the lab's engine (one engine thread, one Ray CPU) and sends the stored
result files back; the driver writes them into its own run cache (`$LABCORE_CACHE/<key>/`), so the cards
read them as they read `--jobs` runs, and the workers of a remote cluster need no shared disk (they need
labcore installed and the datasets under their own `$LABCORE_DATA`).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# The lab's tasks ask for no GPU: Ray is to leave the accelerator variables (CUDA_VISIBLE_DEVICES, ...) as they are,
# its coming default (it warns at every first start otherwise)
os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")

RESULT_FILES = ("table.csv", "ledger.csv", "result.json")  # result.json last: it marks "cached" (runner.store)


def connect(address: str | None = None, num_cpus: int | None = None, attempts: int = 3) -> None:
    """Join the Ray cluster at `address`, or start a local one with `num_cpus` CPUs (default: this machine's).

    A local start is retried: on a heavily loaded machine Ray's node can miss its own start-up deadline.
    """
    import ray

    if ray.is_initialized():
        return
    env = {k: v for k, v in os.environ.items() if k.startswith("LABCORE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    runtime_env = {"env_vars": env}
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
        return
    for attempt in range(1, attempts + 1):
        try:
            ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                     runtime_env=runtime_env)
            return
        except Exception as e:  # "the current node timed out during startup" under load
            ray.shutdown()
            if attempt == attempts:
                raise RuntimeError(f"could not start a local Ray cluster ({attempts} attempts): {e}") from e
            time.sleep(2.0 * attempt)


def _train_task(fn, cfg_text: str) -> tuple[tuple, dict[str, bytes]]:
    from ..runtime import default_cache_dir
    from .federation import config_from_text

    out = fn(config_from_text(cfg_text))
    folder = default_cache_dir() / out[0]
    return out, {f: (folder / f).read_bytes() for f in RESULT_FILES if (folder / f).exists()}


def submit(address: str | None = None, num_cpus: int | None = None):
    """A `figures.runs.train_many` submit over Ray: each config a task (one CPU), on a local cluster of `num_cpus`
    CPUs or the one at `address`; each result's files are written into this machine's run cache as it arrives."""
    def run(fn, cfgs):
        import ray

        from ..runtime import default_cache_dir
        from .federation import config_to_text

        connect(address, num_cpus)
        task = ray.remote(num_cpus=1, max_retries=1)(_train_task)
        pending = {task.remote(fn, config_to_text(c)): c for c in cfgs}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                cfg = pending.pop(ref)
                out, files = ray.get(ref)
                folder = Path(default_cache_dir()) / out[0]
                folder.mkdir(parents=True, exist_ok=True)
                for name in RESULT_FILES:
                    if name in files and not (folder / name).exists():
                        tmp = folder / f"{name}.{os.getpid()}.tmp"
                        tmp.write_bytes(files[name])
                        os.replace(tmp, folder / name)
                yield cfg, out

    return run


def shutdown() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()

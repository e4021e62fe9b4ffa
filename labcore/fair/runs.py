"""FAIR's runs behind the cards: trained in parallel processes first (`labcore figure 'fair-*' --full --jobs 2`),
and the time each took, read back from the run cache for the stored card."""
from __future__ import annotations

from pathlib import Path

from ..runtime import default_cache_dir, one_thread
from .config import FairConfig


def _folder(cfg: FairConfig) -> Path:
    return default_cache_dir() / cfg.key()


def is_cached(cfg: FairConfig) -> bool:
    return (_folder(cfg) / "result.json").exists()


def cost(cfg: FairConfig) -> float:
    """Relative cost, to start the longest runs first: rounds x devices per round x local epochs."""
    return cfg.rounds * cfg.clients_per_round * cfg.local_epochs


def _train(cfg_dict: dict) -> str:
    from .config import from_dict
    from .engine import run

    one_thread()  # one process per core
    cfg = from_dict(cfg_dict)
    run(cfg)
    return cfg.describe()


def prefetch(configs_by_card: dict[str, list[FairConfig]], jobs: int) -> None:
    """Train the uncached runs of these cards in `jobs` spawned processes, longest first, with a progress bar."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm.auto import tqdm

    todo = {c.key(): c for cs in configs_by_card.values() for c in cs if not is_cached(c)}
    order = sorted(todo.values(), key=cost, reverse=True)
    if not order:
        return
    with ProcessPoolExecutor(max(1, jobs), mp_context=mp.get_context("spawn")) as pool, \
            tqdm(total=len(order), desc="FAIR runs", unit="run") as bar:
        futures = [pool.submit(_train, c.to_dict()) for c in order]
        for fut in as_completed(futures):
            bar.set_postfix_str(fut.result()[:40])
            bar.update()


def run_times(configs: list[FairConfig]) -> dict:
    """What the stored card keeps of its runs' times (`timing_meta`: by run key, as each was trained)."""
    from ..fed.engine import load_timing
    from ..figures.registry import timing_meta

    return timing_meta({c.key(): load_timing(_folder(c)) for c in dict.fromkeys(configs)})

"""FAIR's runs behind the cards: trained in parallel processes first (`labcore figure 'fair-*' --full --jobs 2`),
and the time each took, read back from the run cache for the stored card."""
from __future__ import annotations

from pathlib import Path

from ..runtime import default_cache_dir, in_processes
from .config import FairConfig


def _folder(cfg: FairConfig) -> Path:
    return default_cache_dir() / cfg.key()


def is_cached(cfg: FairConfig) -> bool:
    return (_folder(cfg) / "result.json").exists()


def cost(cfg: FairConfig) -> float:
    """Relative cost, to start the longest runs first: rounds x devices per round x local epochs."""
    return cfg.rounds * cfg.clients_per_round * cfg.local_epochs


def _train(cfg: FairConfig) -> None:
    from .engine import run

    run(cfg)


def prefetch(configs_by_card: dict[str, list[FairConfig]], jobs: int) -> None:
    """Train the uncached runs of these cards in `jobs` processes, longest first, with a progress bar."""
    todo = {c.key(): c for cs in configs_by_card.values() for c in cs if not is_cached(c)}
    for _ in in_processes(_train, todo.values(), jobs, cost=cost, desc="FAIR runs"):
        pass


def run_times(configs: list[FairConfig]) -> dict:
    """What the stored card keeps of its runs' times (`timing_meta`: by run key, as each was trained)."""
    from ..runner.store import load_timing
    from ..figures.registry import timing_meta

    return timing_meta({c.key(): load_timing(_folder(c)) for c in dict.fromkeys(configs)})

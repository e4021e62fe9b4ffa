"""Compile the engine's kernels once, at set-up, so that a student's first `labcore run` starts at once.

numba keeps each compiled kernel on disk beside its source; this trains two rounds of each family of local
trainer on the tiny synthetic data (in a throw-away result cache), which compiles and stores them.
"""
from __future__ import annotations

import tempfile
import time

import labcore

WARM = (
    dict(method="colr", rank=4),  # the default run: CoLR / SCoLR at small rank have their own kernel
    dict(method="colr", rank=8),
    dict(method="scolr", rank=4),
    dict(method="fedmf"),
    dict(method="topk", up_bits=4, down_bits=8),
)


def main() -> None:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        for fields in WARM:
            cfg = labcore.RunConfig(synthetic_size="tiny", clients_per_round=20, rounds=2, eval_every=1, **fields)
            labcore.run(cfg, cache_dir=cache, progress=False)
    print(f"compiled the engine's kernels in {time.perf_counter() - start:.0f} s (once; kept on disk)")


if __name__ == "__main__":
    main()

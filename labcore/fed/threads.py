"""How many threads the compiled (numba) loops of a round use: as many as torch's, LABCORE_THREADS, one by
default (`engine.use_threads` says why: several processes share a 2-core laptop, and a parallel region that
waits for a descheduled thread is slower than one thread)."""
from __future__ import annotations

import os

import torch
from numba import config, set_num_threads, set_parallel_chunksize

# The sampling kernels' prange loops over clients run in chunks of 16 clients (measured at two threads: laying
# out a full ML-1M round's samples took 10 ms this way, 100 ms with numba's default split). The training
# kernels do not rely on it: they deal clients to threads themselves (`kernels.fused`, _lanes).
CHUNK = 16


def n_threads() -> int:
    return max(1, min(int(os.environ.get("LABCORE_THREADS", "1")), config.NUMBA_NUM_THREADS))


class compiled_threads:
    """`with compiled_threads(): kernel(...)`: the kernel's prange loops run on n_threads() threads."""

    def __enter__(self):
        self.torch_threads = torch.get_num_threads()
        set_num_threads(n_threads())
        self.old = set_parallel_chunksize(CHUNK)

    def __exit__(self, *exc):
        set_parallel_chunksize(self.old)
        # numba's OpenMP layer shares the process's OpenMP runtime with torch and leaves its thread count at
        # numba's pool size: torch ran on two spinning threads after the first round (twice the CPU, no gain)
        if torch.get_num_threads() != self.torch_threads:
            torch.set_num_threads(self.torch_threads)

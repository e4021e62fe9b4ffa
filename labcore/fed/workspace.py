"""Buffers kept from round to round.

Freshly allocated memory is faulted in page by page on its first write, and the kernel zeroes every page.
At full participation a round makes a few hundred MB of arrays (the update table, the plan's per-sample
arrays and schedule, the touched rows), and paid for them again every round: a full ML-1M CoLR@4 round
took about 51,000 page faults and 0.08 to 0.10 s of system time (0.70 to 0.74 s in all, one thread); with
its arrays from a `Workspace`, 7,000 faults and 0.01 s (0.64 to 0.65 s). Only the first round pays.

An array handed out is valid only until the next request of the same name: the engine gives a workspace
only when nothing keeps a round's plan or rows past the round (not with `keep_view`).
"""
from __future__ import annotations

import math

import numpy as np

# The plan's per-sample arrays and schedule, and the items of the touched rows: the engine frees them at the end
# of training when the update table is the larger (`Simulation.step`), where keeping them raised the run's
# memory peak (Pinterest FedMF d=64 at full participation).
SAMPLE_ARRAYS = ("s_item", "s_label", "slots", "row_item")


class Workspace:
    """Named buffers, each handing out an array of any shape and dtype while it is large enough."""

    def __init__(self):
        self._bufs: dict[str, np.ndarray] = {}

    def array(self, name: str, shape, dtype) -> np.ndarray:
        """An array of this shape and dtype in the buffer `name`, with whatever values it last held."""
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        n = math.prod(shape) * dtype.itemsize
        buf = self._bufs.get(name)
        if buf is None or buf.shape[0] < n:
            self._bufs.pop(name, None)  # the old buffer is freed before the new one is made
            # headroom: the sizes vary round to round; 64 bytes: any dtype's alignment (malloc gives 16 or more)
            buf = self._bufs[name] = np.empty(int(n * 1.1) + 64, dtype=np.uint8)
        return buf[:n].view(dtype).reshape(shape)

    def nbytes(self, *names: str) -> int:
        return sum(self._bufs[n].nbytes for n in names if n in self._bufs)

    def release(self, *names: str) -> None:
        """Free these buffers (made again at their next request)."""
        for n in names:
            self._bufs.pop(n, None)


def take(workspace: Workspace | None, name: str, shape, dtype) -> np.ndarray:
    """`workspace.array(...)`, or a new uninitialized array without a workspace."""
    if workspace is None:
        return np.empty(shape, dtype=dtype)
    return workspace.array(name, shape, dtype)

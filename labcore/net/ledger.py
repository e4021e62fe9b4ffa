"""The payload ledger: measured bytes of every message part, per round and direction.

Parts are turned into real `Part`s and serialized; the ledger keeps `len()` of
those bytes (what would travel) and the theoretical bit count beside it (what an
ideal encoder would need).

The wire format's length depends only on a part's name, kind, dtype and shape
(tests/core/test_engine_scale.py checks this for every kind), so by default one
message per distinct row length of a part is serialized and its measured size
counted for every client with that length: a full-participation round costs a
few serializations, not one per client; a length measured once is remembered
for the rest of the run (a dense payload, e.g. SCAFFOLD's two, is serialized
once a run, not every round). Kinds whose length depends on the
content (`CONTENT_SIZED_KINDS`: ciphertexts) are serialized one by one, and
`Ledger(every_message=True)` serializes every message as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .message import Part, serialize_part

if TYPE_CHECKING:  # pandas is imported where a table is made: an engine process never needs it (93 MB)
    import pandas as pd


def wire_part(name: str, kind: str, payload, bits_per_value: int | None) -> Part:
    if kind == "seed":
        return Part(name, "seed", int(np.asarray(payload).reshape(-1)[0]), 64)
    arr = np.ascontiguousarray(payload)
    per = bits_per_value if bits_per_value is not None else arr.dtype.itemsize * 8
    return Part(name, kind, arr, int(arr.size) * per)


CONTENT_SIZED_KINDS = ("ciphertext",)  # serialized length depends on the payload, not only its shape


def _n_rows(w) -> int:
    return int(w.shape[0]) if hasattr(w, "shape") else int(w.data.shape[0])


class Ledger:
    COLUMNS = ("round", "direction", "part", "kind", "messages", "bytes", "bits")

    def __init__(self, rows: list[dict] | None = None, every_message: bool = False):
        self.rows: list[dict] = list(rows or [])
        self.every_message = every_message
        self._measured: dict[tuple, tuple[int, int]] = {}  # (part's name, kind, dtype, bits, length) -> bytes, bits

    @staticmethod
    def _each(w) -> tuple[np.ndarray, int]:
        sizes, bits = [], 0
        for m in range(_n_rows(w)):
            part = wire_part(w.name, w.kind, w.row(m), w.bits_per_value)
            sizes.append(len(serialize_part(part)))
            bits += part.bits
        return np.asarray(sizes, dtype=np.int64), bits

    def _by_length(self, w) -> tuple[np.ndarray, int]:
        """One serialized message per distinct row length (once a run); every row of that length has its size."""
        M = _n_rows(w)
        lengths = np.asarray(w.lengths, dtype=np.int64) if w.lengths is not None else np.zeros(M, np.int64)
        uniq, first, inverse = np.unique(lengths, return_index=True, return_inverse=True)
        sizes, bits = np.zeros(len(uniq), np.int64), 0
        for j, m in enumerate(first):
            key = (w.name, w.kind, str(w.dtype), w.bits_per_value, int(uniq[j]) if w.lengths is not None else -1,
                   int(w.shape[1]))
            if key not in self._measured:
                part = wire_part(w.name, w.kind, w.row(int(m)), w.bits_per_value)
                self._measured[key] = (len(serialize_part(part)), part.bits)
            sizes[j] = self._measured[key][0]
            bits += self._measured[key][1] * int((inverse == j).sum())
        return sizes[inverse.reshape(-1)], bits

    def record(self, round_idx: int, direction: str, wires, receivers: int = 1) -> np.ndarray:
        """Measure every wire; return the bytes of each message (one per row).

        For the broadcast (one row) `receivers` is how many clients download it.
        """
        per_message = None
        for w in wires:
            if self.every_message or w.kind in CONTENT_SIZED_KINDS or not _n_rows(w):
                sizes, bits = self._each(w)
            else:
                sizes, bits = self._by_length(w)
            per_message = sizes if per_message is None else per_message + sizes
            self.rows.append({"round": round_idx, "direction": direction, "part": w.name, "kind": w.kind,
                              "messages": int(sizes.size) * receivers, "bytes": int(sizes.sum()) * receivers,
                              "bits": bits * receivers})
        return per_message if per_message is not None else np.zeros(0, np.int64)

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(self.COLUMNS))

"""The payload ledger: measured bytes of every message part, per round and direction.

Each client's part is turned into a real `Part` and serialized; the ledger
keeps `len()` of those bytes (what would travel) and the theoretical bit count
beside it (what an ideal encoder would need).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .message import Part, serialize_part


def wire_part(name: str, kind: str, payload, bits_per_value: int | None) -> Part:
    if kind == "seed":
        return Part(name, "seed", int(np.asarray(payload).reshape(-1)[0]), 64)
    arr = np.ascontiguousarray(payload)
    per = bits_per_value if bits_per_value is not None else arr.dtype.itemsize * 8
    return Part(name, kind, arr, int(arr.size) * per)


class Ledger:
    COLUMNS = ("round", "direction", "part", "kind", "messages", "bytes", "bits")

    def __init__(self, rows: list[dict] | None = None):
        self.rows: list[dict] = list(rows or [])

    def record(self, round_idx: int, direction: str, wires, receivers: int = 1) -> np.ndarray:
        """Serialize every row of every wire; return the bytes of each message (one per row).

        For the broadcast (one row) `receivers` is how many clients download it.
        """
        per_message = None
        for w in wires:
            sizes, bits = [], 0
            for m in range(w.data.shape[0]):
                part = wire_part(w.name, w.kind, w.row(m), w.bits_per_value)
                sizes.append(len(serialize_part(part)))
                bits += part.bits
            sizes = np.asarray(sizes, dtype=np.int64)
            per_message = sizes if per_message is None else per_message + sizes
            self.rows.append({"round": round_idx, "direction": direction, "part": w.name, "kind": w.kind,
                              "messages": int(sizes.size) * receivers, "bytes": int(sizes.sum()) * receivers,
                              "bits": bits * receivers})
        return per_message if per_message is not None else np.zeros(0, np.int64)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(self.COLUMNS))

"""The size of a personalized run's personal models, on its own so that the run configuration checks it before
anything is allocated (`config.check_personal`) without loading the personal models' code (torch)."""
from __future__ import annotations

PERSONAL_LIMIT = 2 << 30  # bytes of personal tables a run may hold


def table_bytes(n_users: int, n_items: int, dim: int) -> int:
    """Bytes of every user's personal float32 item table."""
    return n_users * n_items * dim * 4

"""Numbers as people read them: byte counts in KB / MB / GB (binary: 1 KB = 1024 bytes, as the app shows them)."""
from __future__ import annotations

import math


def readable_bytes(b: float | None) -> str:
    """'74.30 MB' for 77,904,000 bytes; '-' for a missing value (None or NaN)."""
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return "-"
    for unit, s in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if b >= s:
            return f"{b / s:,.2f} {unit}"
    return f"{b:,.0f} B"

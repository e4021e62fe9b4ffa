"""STTFedRec's lesson (notebook 07): the exercise checks."""
from __future__ import annotations

from ..labs_support import Feedback, missing, todo
from ..net.message import frame_bytes, serialize_part
from .efficiency import sas_upload_parts


def check_sas_upload_bytes(answer, n_user: int, union: int, d: int = 128, ring_bits: int = 64):
    """Lab 07: payload bytes (no framing) one device uploads to the aggregation server in a round.

    The expected value is measured: the three real ring parts are built and serialized, and their
    framing (`frame_bytes`) is taken off.
    """
    if missing(answer):
        return todo("a number of bytes")
    parts = sas_upload_parts(n_user, union, d, ring_bits)
    want = sum(len(serialize_part(p)) - frame_bytes(p.name, p.payload.ndim) for p in parts)
    try:
        ok = int(answer) == want
    except (TypeError, ValueError):
        ok = False
    word = 8 if ring_bits > 32 else 4
    return Feedback(ok, f"{want:,} bytes = ({n_user:,} + {union} x {d} + 1) values x {word} bytes" if ok else
                    f"{answer} is not it: count the user-tower gradient, the union x d embedding gradients and the "
                    f"loss, each one ring word of {word} bytes")

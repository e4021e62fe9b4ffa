"""A run's checkpoint: its simulation's state at a round boundary, so that an interrupted run resumes where it
stopped. Checked by a sha256 at the file's end and loaded as tensors and plain values only (a file planted in a
shared cache cannot run code)."""
from __future__ import annotations

import hashlib
import os
import pickle
import threading
import warnings
from pathlib import Path

import numpy as np
import torch

CHECKPOINT = "checkpoint.pt"
CHECKSUM_TAG = b"\nlabcore-sha256:"  # then the sha256 of the bytes before it, in hex


def _plain(obj):
    """A state as tensors, plain containers and Python scalars: all `torch.load(weights_only=True)` will read
    (numpy arrays become tensors, numpy scalars Python numbers)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(v) for v in obj)
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


class CheckpointError(ValueError):
    """A checkpoint file that is damaged (its checksum does not match) or not a checkpoint."""


def _sha256_of(path: Path, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = size
        while left:
            chunk = f.read(min(left, 1 << 22))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def save_checkpoint(sim, folder: Path) -> None:
    """The simulation's state at a round boundary, written atomically, with its sha256 as the file's last bytes
    (`CHECKSUM_TAG` + 64 hex digits after the torch payload, which `torch.load` ignores)."""
    folder.mkdir(parents=True, exist_ok=True)
    # a temporary name per process and thread: the app trains in threads, the figure cards in processes
    tmp = folder / f"{CHECKPOINT}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            torch.save(_plain(sim.state()), f)
        digest = _sha256_of(tmp, tmp.stat().st_size)
        with open(tmp, "ab") as f:
            f.write(CHECKSUM_TAG + digest.encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / CHECKPOINT)  # atomic: a crash mid-write never corrupts the last checkpoint
    finally:
        tmp.unlink(missing_ok=True)


def load_checkpoint(path: Path) -> dict:
    """A checkpoint's state, after checking its sha256; tensors and plain Python values only (`weights_only`:
    a file planted in a shared cache cannot run code)."""
    size = path.stat().st_size
    trailer = len(CHECKSUM_TAG) + 64
    with open(path, "rb") as f:
        f.seek(max(size - trailer, 0))
        tail = f.read()
    if size < trailer or not tail.startswith(CHECKSUM_TAG):
        raise CheckpointError(f"{path}: no checksum at the end of the file (not a checkpoint of this version)")
    if _sha256_of(path, size - trailer) != tail[len(CHECKSUM_TAG):].decode("ascii", "replace"):
        raise CheckpointError(f"{path}: checksum mismatch (the file is damaged)")
    return torch.load(path, weights_only=True)


def resume(sim, folder: Path) -> bool:
    """Load the run's checkpoint from `folder` if there is a sound one of this config."""
    ckpt = folder / CHECKPOINT
    if not ckpt.exists():
        return False
    try:
        sim.load_state(load_checkpoint(ckpt))
    except Exception as e:  # damaged, unsafe or another config's: start over rather than fail, but say so
        why = f"{type(e).__name__}: {e}"
        if isinstance(e, pickle.UnpicklingError):  # torch's advice on trusting the file is not for a shared cache
            found = [line.strip() for line in str(e).splitlines() if "Unsupported global" in line]
            why = "refused: it holds objects other than tensors and plain values" + (f" ({found[0]})" if found else "")
        warnings.warn(f"ignoring the checkpoint {ckpt} ({why}); training from round 0")
        return False
    return True

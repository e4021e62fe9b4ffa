"""One run on disk, the same for every topic: its tables as CSV files and one `result.json`.

    <cache>/<topic>/<key>/table.csv     the round table (a topic may keep more tables: ledger.csv, clients.csv ...)
    <cache>/<topic>/<key>/result.json   config, command, versions, timing, the topic's own fields, integrity

result.json is written last: it marks the folder as stored. Its integrity record holds the sha256 and row count of
every table and the sha256 of its own other fields, so a truncated, edited or damaged run is refused by name
(`DamagedResult`) and recomputed rather than served.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pandas is imported where a table is read or written: not while a run trains
    import pandas as pd

RESULT = "result.json"
INTEGRITY = "integrity"


class DamagedResult(ValueError):
    """A stored run whose files do not match their integrity record (or that has none): recomputed."""


def stored(folder: Path) -> bool:
    """Whether the folder holds a finished run (sound or not: `load_run` checks)."""
    return (folder / RESULT).exists()


def timing(seconds: float, cpu_seconds: float, cpu_clock: str = "process", resumed_at: int = 0,
           rounds: int | None = None) -> dict:
    """How long a run took in the process that trained it (rounds `resumed_at` to `rounds`), so a card reading it
    from the shared cache knows its cost even when another process trained it."""
    load = os.getloadavg()[1] if hasattr(os, "getloadavg") else float("nan")
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu_seconds, 2), "cpu_clock": cpu_clock,
            "resumed_at": resumed_at, "rounds": rounds, "load_avg": round(load, 2),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def provenance() -> dict:
    """The command of the process that trained the run and the versions that made its numbers."""
    from importlib import metadata

    versions = {"labcore": _version("labcore", metadata), "python": platform.python_version()}
    for name in ("numpy", "torch"):
        if name in sys.modules:  # only what the run used
            versions[name] = _version(name, metadata)
    return {"command": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "",
            "versions": versions}


def _version(name: str, metadata) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def save_run(folder: Path, tables: dict[str, "pd.DataFrame"], fields: dict, run_timing: dict | None = None,
             float_format: str | None = None) -> None:
    """Store a finished run: each table as `<name>.csv`, then result.json with `fields` (which holds "config"),
    the timing, the command and versions, and the integrity record. Each file written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        write_atomic(folder / f"{name}.csv", frame.to_csv(index=False, float_format=float_format).encode())
    meta = {**fields, "timing": run_timing, **provenance()}
    meta = json.loads(json.dumps(meta, default=_plain_json))  # as it will read back
    files = {f"{name}.csv": file_record(folder / f"{name}.csv") for name in tables}
    meta[INTEGRITY] = {"files": files, "meta_sha256": _meta_digest(meta)}
    write_atomic(folder / RESULT, json.dumps(meta, indent=1).encode())


def load_run(folder: Path, tables: tuple[str, ...]) -> tuple[dict[str, "pd.DataFrame"], dict]:
    """The stored run's tables (by name) and result.json's fields, after checking both against the integrity
    record (`DamagedResult` naming the file and what is wrong otherwise)."""
    import pandas as pd

    meta = verify(folder, tables)
    return {name: pd.read_csv(folder / f"{name}.csv") for name in tables}, meta


def read_stored(folder: Path, load: Callable[[Path], object], quiet: bool = False):
    """The result stored in `folder`, or None when there is none or it fails to load (damaged, truncated, edited,
    or stored without a checksum: `store.verify`); such a failure is reported as a warning naming the file, and
    the caller recomputes the run."""
    if not stored(folder):
        return None
    try:
        return load(folder)
    except (ValueError, KeyError, TypeError, OSError) as e:  # DamagedResult is a ValueError
        if not quiet:
            warnings.warn(f"the stored result in {folder} is not used ({e}); recomputing it", stacklevel=2)
        return None


def load_timing(folder: Path) -> dict | None:
    """The timing a finished run stored with its result (None without one)."""
    try:
        return json.loads((folder / RESULT).read_text()).get("timing")
    except (OSError, ValueError, AttributeError):
        return None


def write_atomic(path: Path, data: bytes) -> None:
    """Write the whole file or nothing (a temporary beside it, then a rename)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def file_record(path: Path) -> dict:
    data = path.read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "rows": _rows(path.name, data)}


def _rows(name: str, data: bytes) -> int:
    """Data rows of a CSV (lines after the header; pandas writes no quoted newlines for these tables); 1 else."""
    return max(data.count(b"\n") - 1, 0) if name.endswith(".csv") else 1


def _plain_json(value):
    """JSON for what a topic's fields may hold beside plain values: numpy arrays and scalars, sets, paths."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def _meta_digest(meta: dict) -> str:
    rest = {k: v for k, v in meta.items() if k != INTEGRITY}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def verify(folder: Path, tables: tuple[str, ...] = ()) -> dict:
    """result.json's fields once it and every file it records match, and it records each of `tables`; else
    `DamagedResult` saying which file and what is wrong. A run stored without an integrity record cannot prove
    itself and is refused too."""
    path = folder / RESULT
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DamagedResult(f"{path}: unreadable ({type(e).__name__}: {e})") from e
    record = meta.get(INTEGRITY) if isinstance(meta, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        raise DamagedResult(f"{path}: no integrity record (stored by a version that kept no checksums)")
    if record.get("meta_sha256") != _meta_digest(meta):
        raise DamagedResult(f"{path}: its fields do not match their sha256 (edited or damaged)")
    for name in tables:
        if f"{name}.csv" not in record["files"]:
            raise DamagedResult(f"{path}: the integrity record lists no {name}.csv")
    for name, want in record["files"].items():
        f = folder / name
        if not f.exists():
            raise DamagedResult(f"{f}: missing")
        got = file_record(f)
        if got["rows"] != want.get("rows"):
            raise DamagedResult(f"{f}: {got['rows']} rows, {want.get('rows')} recorded (truncated or extended)")
        if got["sha256"] != want.get("sha256"):
            raise DamagedResult(f"{f}: sha256 mismatch (a value was edited or damaged)")
    return meta

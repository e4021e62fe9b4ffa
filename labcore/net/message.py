"""Messages that cross the simulated network, and their measured size.

A message is a list of named parts. Each part has a kind (what it is, for the
payload ledger), a payload (a numpy array, raw bytes such as a serialized
ciphertext, or an integer seed) and a theoretical bit count (what an ideal
encoder would need). `serialize` turns a message into the bytes that would
travel; the ledger records `len()` of those bytes per part, so every byte
figure in the lab is measured, not computed from shapes.

Wire format of one part (little endian), kept deliberately simple:
    u8 name length, name (utf-8), u8 kind code, u8 dtype code, u8 ndim,
    ndim x u32 shape, u64 payload length, payload bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable

import numpy as np

# What a part is. "ciphertext" parts carry serialized bytes from an HE library.
PART_KINDS = ("values", "factors", "indices", "codes", "scales", "seed", "ciphertext", "meta")
_KIND_CODE = {k: i for i, k in enumerate(PART_KINDS)}
_DTYPES = ("float32", "float64", "int32", "int64", "uint8", "uint16", "uint32", "int8", "bytes", "float16")
_DTYPE_CODE = {d: i for i, d in enumerate(_DTYPES)}


@dataclass(frozen=True, eq=False)
class Part:
    name: str
    kind: str
    payload: np.ndarray | bytes | int
    bits: int  # theoretical size in bits (ideal encoding, no framing)

    def __post_init__(self):
        if self.kind not in _KIND_CODE:
            raise ValueError(f"part kind {self.kind!r} is not one of {PART_KINDS}")


def array_part(name: str, kind: str, arr: np.ndarray, bits_per_value: int | None = None) -> Part:
    arr = np.ascontiguousarray(arr)
    if str(arr.dtype) not in _DTYPE_CODE:
        raise ValueError(f"part {name!r}: dtype {arr.dtype} cannot be sent; use one of {_DTYPES}")
    per = bits_per_value if bits_per_value is not None else arr.dtype.itemsize * 8
    return Part(name, kind, arr, int(arr.size) * per)


def seed_part(name: str, seed: int) -> Part:
    return Part(name, "seed", int(seed), 64)


def bytes_part(name: str, kind: str, data: bytes, bits: int | None = None) -> Part:
    return Part(name, kind, bytes(data), 8 * len(data) if bits is None else bits)


FRAME_FIXED_BYTES = 1 + 1 + 1 + 8  # kind, dtype, ndim, payload length (+ name and shape, see frame_bytes)


def frame_bytes(name: str, ndim: int) -> int:
    """Framing overhead of one part: what a test compares measured sizes against."""
    return 1 + len(name.encode()) + FRAME_FIXED_BYTES + 4 * ndim


def serialize_part(p: Part) -> bytes:
    name = p.name.encode()
    if isinstance(p.payload, np.ndarray):
        dtype, shape, raw = str(p.payload.dtype), p.payload.shape, p.payload.tobytes()
    elif isinstance(p.payload, (bytes, bytearray)):
        dtype, shape, raw = "bytes", (), bytes(p.payload)
    else:  # an integer seed travels as 8 bytes
        dtype, shape, raw = "int64", (), struct.pack("<q", int(p.payload))
    head = struct.pack("<B", len(name)) + name
    head += struct.pack("<BBB", _KIND_CODE[p.kind], _DTYPE_CODE[dtype], len(shape))
    head += struct.pack(f"<{len(shape)}I", *shape) + struct.pack("<Q", len(raw))
    return head + raw


def deserialize_parts(buf: bytes) -> list[Part]:
    parts, pos = [], 0
    while pos < len(buf):
        (n,) = struct.unpack_from("<B", buf, pos)
        pos += 1
        name = buf[pos : pos + n].decode()
        pos += n
        kind_c, dtype_c, ndim = struct.unpack_from("<BBB", buf, pos)
        pos += 3
        shape = struct.unpack_from(f"<{ndim}I", buf, pos)
        pos += 4 * ndim
        (length,) = struct.unpack_from("<Q", buf, pos)
        pos += 8
        raw = buf[pos : pos + length]
        pos += length
        kind, dtype = PART_KINDS[kind_c], _DTYPES[dtype_c]
        if kind == "seed":
            payload = struct.unpack("<q", raw)[0]
            parts.append(Part(name, kind, payload, 64))
        elif dtype == "bytes":
            parts.append(Part(name, kind, raw, 8 * len(raw)))
        else:
            arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
            parts.append(Part(name, kind, arr, arr.size * arr.dtype.itemsize * 8))
    return parts


@dataclass(frozen=True, eq=False)
class Message:
    """One message of one client (or the server's broadcast) in one direction."""

    direction: str  # "up" or "down"
    parts: tuple[Part, ...]

    def serialize(self) -> bytes:
        return b"".join(serialize_part(p) for p in self.parts)

    def part_sizes(self) -> dict[str, tuple[int, int]]:
        """name -> (measured serialized bytes, theoretical bits)."""
        return {p.name: (len(serialize_part(p)), p.bits) for p in self.parts}

    def __getitem__(self, name: str) -> Part:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)

    @staticmethod
    def of(direction: str, parts: Iterable[Part]) -> "Message":
        if direction not in ("up", "down"):
            raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
        return Message(direction, tuple(parts))

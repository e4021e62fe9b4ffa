"""What every config of the lab shares (the core's RunConfig, FAIR's, STTFedRec's).

A config is a frozen dataclass of bool / int / float / str / tuple fields. These helpers check
types, choices and ranges, turn strings (URL, CLI) into field values and list what differs from the
defaults, so that every bad value fails the same way: `<field>=<value> is invalid: <what is allowed>`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import fields


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and what is allowed."""


class TypedConfig:
    """What every config class shares; subclasses are frozen dataclasses that validate in __post_init__."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def replace(self, **changes):
        return build(type(self), {**self.to_dict(), **changes})

    def to_query(self) -> dict[str, str]:
        """Only the fields that differ from the defaults, as strings (the app's URL)."""
        return query_of(self)


def hash_key(fields_and_values: dict, prefix: str = "") -> str:
    """A stable 16-hex-digit name for a config's results (the on-disk cache key)."""
    blob = json.dumps(fields_and_values, sort_keys=True, default=list)
    return prefix + hashlib.sha256(blob.encode()).hexdigest()[:16]


def fail(name: str, value, allowed: str) -> typing.NoReturn:
    raise ConfigError(f"{name}={value!r} is invalid: {allowed}")


def check_types(cfg, types: dict) -> None:
    for f in fields(cfg):
        v, t = getattr(cfg, f.name), types[f.name]
        if t is bool:
            if not isinstance(v, bool):
                fail(f.name, v, "expected true or false")
        elif t is int:
            if isinstance(v, bool) or not isinstance(v, int):
                fail(f.name, v, "expected an integer")
        elif t is float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                fail(f.name, v, "expected a number")
        elif t is str and not isinstance(v, str):
            fail(f.name, v, "expected a string")


def check_choices(cfg, choices: dict[str, tuple]) -> None:
    for name, allowed in choices.items():
        if getattr(cfg, name) not in allowed:
            fail(name, getattr(cfg, name), "allowed values are " + ", ".join(allowed))


def check_ranges(cfg, ranges: dict[str, tuple], positive: tuple = (), nonnegative: tuple = ()) -> None:
    for name, (lo, hi) in ranges.items():
        v = getattr(cfg, name)
        if not lo <= v <= hi:
            fail(name, v, f"allowed range is {lo}..{hi}")
    for name in positive:
        if not getattr(cfg, name) > 0:
            fail(name, getattr(cfg, name), "must be > 0")
    for name in nonnegative:
        if not getattr(cfg, name) >= 0:
            fail(name, getattr(cfg, name), "must be >= 0")


def coerce(name: str, raw, t: type):
    """A string (URL, CLI) as a value of type `t`; other values pass through (ints widen to float)."""
    if not isinstance(raw, str) or t is str:
        if t is tuple and isinstance(raw, list):
            return tuple(tuple(x) if isinstance(x, list) else x for x in raw)
        if t is float and isinstance(raw, int) and not isinstance(raw, bool):
            return float(raw)
        return raw
    try:
        if t is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if t is int:
            return int(raw)
        if t is float:
            return float(raw)
        if t is tuple:
            return coerce(name, json.loads(raw), t) if raw else ()
    except (ValueError, json.JSONDecodeError):
        pass
    expected = {bool: "true or false", int: "an integer", float: "a number", tuple: "a JSON list"}[t]
    fail(name, raw, f"expected {expected}")


def build(cls, d: dict):
    """`cls(**d)` with every string coerced to its field's type; unknown names list the valid ones."""
    types = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ConfigError(f"unknown config field(s) {', '.join(unknown)}; valid fields are: {', '.join(names)}")
    return cls(**{k: coerce(k, v, types[k]) for k, v in d.items()})


def query_of(cfg) -> dict[str, str]:
    """Only the fields that differ from the defaults, as strings (tuples as JSON)."""
    default = type(cfg)()
    out = {}
    for f in fields(cfg):
        v = getattr(cfg, f.name)
        if v != getattr(default, f.name):
            out[f.name] = json.dumps(v) if isinstance(v, tuple) else str(v)
    return out

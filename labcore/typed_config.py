"""What every config of the lab shares (the core's RunConfig, FAIR's, STTFedRec's).

A config is a frozen dataclass of bool / int / float / str / tuple fields. These helpers check
types, choices and ranges, turn strings (URL, CLI) into field values and list what differs from the
defaults, so that every bad value fails the same way: `<field>=<value> is invalid: <what is allowed>`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
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


# What a value from a link or the command line may be at most: longer strings and deeper or longer lists are
# refused before they are parsed (a JSON list of 3,000 "[" would otherwise exhaust Python's recursion limit).
MAX_TEXT = 4096
MAX_DEPTH = 4
MAX_ITEMS = 1024


def fail(name: str, value, allowed: str) -> typing.NoReturn:
    shown = repr(value)
    if len(shown) > 80:  # an overlong value is named by its start and length, not printed whole
        shown = f"{shown[:60]}... ({len(shown):,} characters)"
    raise ConfigError(f"{name}={shown} is invalid: {allowed}")


def check_types(cfg, types: dict, names: tuple[str, ...] | None = None) -> None:
    """Every field (or those `names`) has its declared type; every number, also inside a tuple, is finite (inf
    and nan pass "> 0" checks and then train to NaN)."""
    for name in names if names is not None else [f.name for f in fields(cfg)]:
        v, t = getattr(cfg, name), types[name]
        if t is bool:
            if not isinstance(v, bool):
                fail(name, v, "expected true or false")
        elif t is int:
            if isinstance(v, bool) or not isinstance(v, int):
                fail(name, v, "expected an integer")
        elif t is float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                fail(name, v, "expected a number")
            if not math.isfinite(v):
                fail(name, v, "expected a finite number")
        elif t is str:
            if not isinstance(v, str):
                fail(name, v, "expected a string")
            if len(v) > MAX_TEXT:
                fail(name, v, f"at most {MAX_TEXT} characters")
        elif t is tuple:
            check_nested_numbers(name, v)


def check_nested_numbers(name: str, value, depth: int = 0) -> None:
    """A tuple of finite numbers or of such tuples (at most MAX_DEPTH deep, MAX_ITEMS long); no booleans."""
    if depth > MAX_DEPTH:
        fail(name, value, f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(value, tuple):
        fail(name, value, "expected a tuple (a JSON list) of numbers")
    if len(value) > MAX_ITEMS:
        fail(name, value, f"at most {MAX_ITEMS} items")
    for x in value:
        if isinstance(x, tuple):
            check_nested_numbers(name, x, depth + 1)
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            fail(name, value, f"every item is a number; {x!r} is not")
        elif not math.isfinite(x):
            fail(name, value, f"every number is finite; {x!r} is not")


def check_choices(cfg, choices: dict[str, tuple]) -> None:
    for name, allowed in choices.items():
        if getattr(cfg, name) not in allowed:
            fail(name, getattr(cfg, name), "allowed values are " + ", ".join(allowed))


def check_ranges(cfg, ranges: dict[str, tuple], positive: tuple = (), nonnegative: tuple = (),
                 at_most: dict[str, float] | None = None) -> None:
    """`ranges`: name -> (lo, hi) inclusive; `positive` / `nonnegative`: open-ended numbers, bounded above by
    `at_most` (name -> hi) where given."""
    at_most = at_most or {}
    for name, (lo, hi) in ranges.items():
        v = getattr(cfg, name)
        if not lo <= v <= hi:
            fail(name, v, f"allowed range is {lo}..{hi}")
    for name in positive:
        v = getattr(cfg, name)
        if not (v > 0 and v <= at_most.get(name, math.inf)):
            fail(name, v, "must be > 0" + (f" and at most {at_most[name]:g}" if name in at_most else ""))
    for name in nonnegative:
        v = getattr(cfg, name)
        if not (v >= 0 and v <= at_most.get(name, math.inf)):
            fail(name, v, "must be >= 0" + (f" and at most {at_most[name]:g}" if name in at_most else ""))


def coerce(name: str, raw, t: type):
    """A string (URL, CLI) as a value of type `t`; other values pass through (ints widen to float)."""
    if not isinstance(raw, str) or t is str:
        if t is tuple and isinstance(raw, list):
            return _as_tuple(name, raw)
        if t is float and isinstance(raw, int) and not isinstance(raw, bool):
            try:
                return float(raw)
            except OverflowError:
                fail(name, raw, "expected a finite number")
        return raw
    if len(raw) > MAX_TEXT:
        fail(name, raw, f"at most {MAX_TEXT} characters")
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
            if not raw:
                return ()
            if _depth(raw) > MAX_DEPTH + 1:
                fail(name, raw, f"a JSON list nested at most {MAX_DEPTH + 1} levels deep")
            return coerce(name, json.loads(raw), t)
    except ConfigError:
        raise
    except (ValueError, json.JSONDecodeError, RecursionError):
        pass
    expected = {bool: "true or false", int: "an integer", float: "a number", tuple: "a JSON list"}[t]
    fail(name, raw, f"expected {expected}")


def _depth(text: str) -> int:
    """The deepest nesting of brackets in a JSON text (counted before parsing it)."""
    depth = deepest = 0
    for ch in text:
        if ch == "[" or ch == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == "]" or ch == "}":
            depth -= 1
    return deepest


def _as_tuple(name: str, items: list, depth: int = 0) -> tuple:
    if depth > MAX_DEPTH:
        fail(name, items, f"nested deeper than {MAX_DEPTH} levels")
    if len(items) > MAX_ITEMS:
        fail(name, items, f"at most {MAX_ITEMS} items")
    return tuple(_as_tuple(name, x, depth + 1) if isinstance(x, list) else x for x in items)


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

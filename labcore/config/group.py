"""What a group of RunConfig's fields declares: its choices and ranges, the rules that tie its fields to others,
and which of its fields cannot change a given run (kept out of the cache key).

A group is a frozen dataclass of fields with defaults; `RunConfig` is all the groups at once (it inherits their
fields, so every field keeps its flat name: `cfg.rank`, `--rank`, `?rank=`). Each group checks its own fields
here, where they are defined.
"""
from __future__ import annotations

from dataclasses import fields

from ..typed_config import check_choices, check_ranges, check_types


class ConfigGroup:
    # class attributes, not annotated: a dataclass would take an annotated one for a field
    CHOICES = {}  # field -> its allowed values
    RANGES = {}  # field -> (lower, upper), inclusive
    POSITIVE = ()
    NONNEGATIVE = ()
    AT_MOST = {}  # upper ends of the open-ended numbers

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def check_values(cls, c, types: dict) -> None:
        """This group's fields of the whole config `c`: types, then choices, then ranges."""
        check_types(c, types, cls.names())
        check_choices(c, cls.CHOICES)
        check_ranges(c, cls.RANGES, cls.POSITIVE, cls.NONNEGATIVE, cls.AT_MOST)

    @classmethod
    def check_rules(cls, c) -> None:
        """Rules between this group's fields and the others' (each group states its own)."""

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        """This group's fields that cannot change the run `c` (left out of its cache key)."""
        return ()

"""Errors raised by the dataset layer, worded so a student can fix the input."""
from __future__ import annotations

from pathlib import Path


class DatasetFormatError(ValueError):
    """A data file does not have the layout its reader expects."""

    def __init__(self, path: str | Path, line_no: int | None, expected: str, got: str, detail: str = ""):
        self.path = str(path)
        self.line_no = line_no
        self.expected = expected
        self.got = got
        self.detail = detail
        where = f"{self.path} line {line_no}" if line_no is not None else self.path
        shown = got if line_no is None else repr(_clip(got))
        message = f"{where}: expected {expected}, got {shown}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class DatasetNotFoundError(FileNotFoundError):
    """The files of a dataset are neither on disk nor downloadable."""

    def __init__(self, message: str):
        super().__init__(message)

    def __str__(self) -> str:  # FileNotFoundError would otherwise print the errno tuple
        return self.args[0]


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."

"""Reading text files whose every line is a fixed number of non-negative integers.

The fast path hands the bytes to pandas' C parser. Whenever it complains, or
its result looks wrong, the file is re-read line by line by a slow, strict
reader: that one is the reference and produces the precise error message
(file, line number, offending text, expected layout). The fast path takes only
files made of digits, separators and line breaks, because pandas also reads
`1e3`, `1.0` and `+196` as integers where the strict reader refuses them.

A file must end with a line break: a copy or download cut short ends in the
middle of a line, and that line may still look valid (a timestamp cut to its
first digits). A file cut exactly after a line break cannot be told from a
shorter file by its format; loaders that know their row count check it.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import DatasetFormatError

_PAIR = re.compile(r"\((\d+),(\d+)\)")
_PAIR_BYTES = re.compile(rb"^[ \t]*\((\d+),(\d+)\)", re.MULTILINE)
_FAST_BYTES = b"0123456789\t\r\n "  # what the fast path reads (plus the separator); anything else: strict reader
_STRICT_LIMIT = 10**18  # the strict reader takes at most 18 digits
_SEP_NAMES = {"\t": "tabs", "::": "'::'", " ": "spaces", ",": "commas"}


@dataclass(frozen=True)
class RowFormat:
    """Layout of one line: `n_fields` fields joined by `sep`.

    n_fields=None means "as many as the first line has, the same on every line".
    pair_head=True means the first field is written `(a,b)` and yields two ints.
    """

    template: str  # shown to the user, e.g. 'UserID::MovieID::Rating::Timestamp'
    sep: str
    n_fields: int | None = None
    pair_head: bool = False

    def describe(self, n_fields: int | None = None) -> str:
        n = n_fields if n_fields is not None else self.n_fields
        count = f"{n} fields" if n is not None else "the same number of fields on every line"
        return f"'{self.template}' ({count} separated by {_SEP_NAMES.get(self.sep, repr(self.sep))})"


def read_int_rows(path: str | Path, fmt: RowFormat) -> np.ndarray:
    """All data lines of `path` as an int64 matrix (blank lines are skipped)."""
    path = Path(path)
    raw = path.read_bytes()
    check_whole_lines(path, raw, fmt.describe())
    fast = _fast_parse(raw, fmt)
    if fast is not None:
        return fast
    return _strict_parse(path, raw.decode("latin-1"), fmt)


def check_whole_lines(path: Path, raw: bytes, expected: str) -> None:
    """Refuse a file whose last line has no line break after it (see the module's note)."""
    last = raw.rpartition(b"\n")[2]
    if last.strip():
        raise DatasetFormatError(
            path, raw.count(b"\n") + 1, expected,
            last.decode("latin-1"), "the file ends in the middle of this line, without a line break: it looks "
            "truncated; copy or download it again, or, if it is complete, add a line break at its end")


def line_number_of_row(path: str | Path, row: int) -> int:
    """1-based line number of the `row`-th data line (blank lines do not count as rows)."""
    seen = -1
    with open(path, encoding="latin-1") as handle:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                seen += 1
                if seen == row:
                    return line_no
    raise IndexError(row)


def line_text(path: str | Path, line_no: int) -> str:
    with open(path, encoding="latin-1") as handle:
        for number, line in enumerate(handle, start=1):
            if number == line_no:
                return line.rstrip("\r\n")
    return ""


def _fast_parse(raw: bytes, fmt: RowFormat) -> np.ndarray | None:
    import pandas as pd  # here: a dataset loaded from its cached split never needs pandas (93 MB resident)

    if fmt.sep != "\t" and b"\t" in raw:
        return None  # a tab would pass for a separator here
    if raw.translate(None, _FAST_BYTES + fmt.sep.encode() + (b"()," if fmt.pair_head else b"")):
        return None  # a sign, a decimal point, an exponent, ...: pandas would read them, the strict reader decides
    data, n_heads = raw, None
    if fmt.pair_head:
        data, n_heads = _PAIR_BYTES.subn(rb"\1\t\2", data)
    if fmt.sep != "\t":
        data = data.replace(fmt.sep.encode(), b"\t")
    try:
        frame = pd.read_csv(io.BytesIO(data), sep="\t", header=None, dtype=np.int64, engine="c")
    except Exception:  # any parser complaint: let the strict reader explain it
        return None
    values = frame.to_numpy(dtype=np.int64)
    expected_cols = None if fmt.n_fields is None else fmt.n_fields + int(fmt.pair_head)
    if values.shape[0] == 0 or (expected_cols is not None and values.shape[1] != expected_cols):
        return None
    if (values < 0).any() or (values >= _STRICT_LIMIT).any():
        return None
    if n_heads is not None and n_heads != values.shape[0]:
        return None  # some row lacks its '(a,b)' head
    return np.ascontiguousarray(values)


def _strict_parse(path: Path, text: str, fmt: RowFormat) -> np.ndarray:
    rows: list[list[int]] = []
    n_fields = fmt.n_fields
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(fmt.sep)
        if n_fields is None:
            n_fields = len(fields)
        if len(fields) != n_fields:
            raise DatasetFormatError(
                path, line_no, fmt.describe(n_fields), line,
                f"found {len(fields)} field{'s' if len(fields) != 1 else ''}",
            )
        rows.append(_parse_fields(path, line_no, line, fields, fmt, n_fields))
    if not rows:
        raise DatasetFormatError(path, None, fmt.describe(), "an empty file")
    return np.asarray(rows, dtype=np.int64)


def _parse_fields(path: Path, line_no: int, line: str, fields: list[str], fmt: RowFormat, n_fields: int) -> list[int]:
    values: list[int] = []
    for position, field in enumerate(fields, start=1):
        token = field.strip()
        if fmt.pair_head and position == 1:
            match = _PAIR.fullmatch(token)
            if match is None:
                raise DatasetFormatError(
                    path, line_no, fmt.describe(n_fields), line,
                    f"field 1 ({token!r}) is not of the form '(user,item)'",
                )
            values.extend((int(match.group(1)), int(match.group(2))))
        elif token.isascii() and token.isdigit() and len(token) <= 18:  # 18 digits always fit int64
            values.append(int(token))
        else:
            raise DatasetFormatError(
                path, line_no, fmt.describe(n_fields), line,
                f"field {position} ({token!r}) is not a non-negative integer",
            )
    return values

"""The fast integer parser (pandas' C parser) and the strict line reader accept the same files: what the strict
reader refuses (`1e3`, `1.0`, `+196`, `8.8e8`, 19 digits) sends the fast path to the strict one, which names the
file and line."""
from __future__ import annotations

import numpy as np
import pytest

from labcore.data import DatasetFormatError
from labcore.data.movielens import ML1M_RATINGS, ML100K_RATINGS
from labcore.data.tabular import _fast_parse, _strict_parse, read_int_rows

GOOD = "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n"


@pytest.mark.parametrize("fmt, sep", [(ML100K_RATINGS, "\t"), (ML1M_RATINGS, "::")])
def test_both_paths_read_a_valid_file_alike(tmp_path, fmt, sep):
    text = GOOD.replace("\t", sep)
    fast = _fast_parse(text.encode(), fmt)
    strict = _strict_parse(tmp_path / "f", text, fmt)
    assert fast is not None and np.array_equal(fast, strict) and fast.dtype == strict.dtype == np.int64


@pytest.mark.parametrize("bad", ["1e3", "1.0", "+196", "8.8e8", "9" * 19, " 1 2", "0x1F"])
@pytest.mark.parametrize("column", [0, 1, 3])
def test_what_the_strict_reader_refuses_the_fast_path_refuses_too(tmp_path, bad, column):
    fields = GOOD.splitlines()[1].split("\t")
    fields[column] = bad
    text = GOOD.splitlines()[0] + "\n" + "\t".join(fields) + "\n" + GOOD.splitlines()[2] + "\n"
    assert _fast_parse(text.encode(), ML100K_RATINGS) is None
    path = tmp_path / "u.data"
    path.write_text(text)
    with pytest.raises(DatasetFormatError, match=rf"u\.data line 2: .*field {column + 1} "):
        _strict_parse(path, text, ML100K_RATINGS)
    with pytest.raises(DatasetFormatError, match=r"u\.data line 2: "):
        read_int_rows(path, ML100K_RATINGS)


def test_a_file_cut_mid_line_is_refused_even_when_its_last_line_looks_whole(tmp_path):
    path = tmp_path / "u.data"
    path.write_text(GOOD[:-5])  # the last timestamp cut to 5 of its 9 digits: still four integers
    assert _fast_parse(GOOD[:-5].encode(), ML100K_RATINGS) is not None  # which the parser alone would take
    with pytest.raises(DatasetFormatError, match=r"u\.data line 3: .*ends in the middle of this line"):
        read_int_rows(path, ML100K_RATINGS)

"""Numbers as people read them (`labcore.units`)."""
import math

from labcore.units import readable_bytes


def test_byte_counts_read_in_binary_units_with_two_decimals():
    assert readable_bytes(0) == "0 B" and readable_bytes(1023) == "1,023 B"
    assert readable_bytes(1024) == "1.00 KB" and readable_bytes(1536) == "1.50 KB"
    assert readable_bytes(77_904_000) == "74.30 MB"
    assert readable_bytes(5 * 2**30) == "5.00 GB" and readable_bytes(2048 * 2**30) == "2,048.00 GB"
    assert readable_bytes(None) == "-" and readable_bytes(math.nan) == "-"

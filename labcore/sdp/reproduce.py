"""`python -m labcore.sdp.reproduce [card ids ...]`: kept for the commands stored with older results; the same as
`labcore figure <id> --full --save` for each id (default: every SDP card)."""
from __future__ import annotations

import sys

from ..cli import reproduce_cards

if __name__ == "__main__":
    sys.exit(reproduce_cards(sys.argv[1:], "sdp-"))

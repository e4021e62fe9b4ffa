"""`python -m labcore.gist.reproduce [card ids ...] [--jobs 2]`: kept for the commands stored with older results;
the same as `labcore figure <id> --full --save --jobs N` for each id (default: every GIST card)."""
from __future__ import annotations

import sys

from ..cli import reproduce_cards

if __name__ == "__main__":
    sys.exit(reproduce_cards(sys.argv[1:], "gist-"))

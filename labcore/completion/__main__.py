"""`python -m labcore.completion <card id>... [--size full] [--jobs 2] [--save]`: kept for the commands stored with
older results; the same as `labcore figure <id> [--full] [--save] [--jobs N]` for each id."""
import sys

from ..cli import reproduce_cards

sys.exit(reproduce_cards(sys.argv[1:], "completion-"))

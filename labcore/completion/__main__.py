"""`python -m labcore.completion <card id>... [--size full] [--jobs 2] [--save]`: compute the topic's cards."""
import sys

from .cards import main

main(sys.argv[1:])

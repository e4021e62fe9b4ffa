"""Full-size reproductions of the federated-optimization cards (minutes each): `pytest -m slow`."""
from __future__ import annotations

import pytest

from labcore.flalgos import cards  # noqa: F401  (registers the cards)
from labcore.figures import registry


@pytest.mark.slow
@pytest.mark.parametrize("card_id", ["flalgos-scaffold-quadratics", "flalgos-bytes", "flalgos-backdoor",
                                     "flalgos-personalization", "flalgos-scaffold-digits", "flalgos-qffl-fairness",
                                     "flalgos-fedprox-stragglers"])
def test_full_card_within_tolerance(card_id):
    card = registry.get(card_id)
    ours = card.compute("full")
    assert card.check(ours), card.compare(ours).to_string()

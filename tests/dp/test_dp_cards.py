"""The DP topic's cards are lab experiments: every compared row is a claim or shown, never a number, and a
result without the effect (noise that costs nothing, a defense that hides nothing) fails the checks. No full
result is committed, so the tables are small hand-made results (the HR and inversion cards' smoke runs take
longer than a unit test should) and the curious server's smoke run."""
from __future__ import annotations

import pandas as pd
import pytest

import labcore.dp.cards  # noqa: F401  (registers the cards)
from labcore.figures import registry

CARD_IDS = ["dp-hr-epsilon", "dp-curious-server", "dp-inversion"]


def _hr(hr_by_sigma: dict[float, list[float]], plain: list[float] = (0.74, 0.75, 0.73)) -> pd.DataFrame:
    """Both methods with the same HR@10 per seed: clipped at each sigma (0: the clip alone), and `plain` without
    DP; epsilon as the accountant gives it (equal)."""
    eps = {0.0: float("inf"), 1.0: 1.8, 4.0: 0.15}
    clipped = [{"method": m, "clipped": True, "sigma": s, "seed": i, "epsilon": eps[s], "hr": v}
               for m in ("FedMF", "CoLR@4") for s, vals in hr_by_sigma.items() for i, v in enumerate(vals)]
    return pd.DataFrame(clipped + [{"method": m, "clipped": False, "sigma": 0.0, "seed": i, "epsilon": float("inf"),
                                    "hr": v} for m in ("FedMF", "CoLR@4") for i, v in enumerate(plain)])


FALLING = {0.0: [0.60, 0.61, 0.59], 1.0: [0.55, 0.56, 0.54], 4.0: [0.40, 0.42, 0.41]}


def _inversion(psnr: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"defense": d, "seed": i, "psnr": v, "chance_psnr": 10.0}
                         for d, vals in psnr.items() for i, v in enumerate(vals)])


ATTACKED = {"none": [50.0, 52.0, 49.0], "5 local steps": [20.0, 19.0, 21.0], "rank 1": [50.0, 52.0, 49.0],
            "DP sigma 0.1": [9.0, 9.5, 8.5]}


@pytest.fixture(scope="module")
def curious():
    return registry.get("dp-curious-server").compute("smoke")


def test_the_list_covers_every_card_of_the_topic():
    assert sorted(CARD_IDS) == sorted(c for c in registry.card_ids() if c.startswith("dp-"))


@pytest.mark.parametrize("card_id", CARD_IDS)
def test_every_compared_row_is_a_claim_or_shown(card_id, curious):
    ours = {"dp-hr-epsilon": _hr(FALLING), "dp-curious-server": curious, "dp-inversion": _inversion(ATTACKED)}[card_id]
    card = registry.get(card_id)
    table = card.compare_fn(ours, card.paper)  # the card's own kinds, before the registry
    assert "kind" in table and table["kind"].isin(["claim", "shown"]).all()
    assert ((table["kind"] == "shown") == table["ok"].isna()).all()


def test_hr_must_fall_beyond_the_seeds_noise():
    card = registry.get("dp-hr-epsilon")
    assert card.check(_hr(FALLING))
    assert not card.check(_hr({s: FALLING[0.0] for s in FALLING}))  # noise that costs nothing
    inside_noise = {0.0: [0.60, 0.62, 0.58], 1.0: [0.60, 0.62, 0.58], 4.0: [0.59, 0.61, 0.57]}
    assert not card.check(_hr(inside_noise))  # a drop of 0.01 with a seed spread of 0.02: not a fall
    step_up = {0.0: [0.60, 0.61, 0.59], 1.0: [0.40, 0.41, 0.39], 4.0: [0.50, 0.51, 0.49]}
    assert not card.check(_hr(step_up))  # "falls as epsilon shrinks": every step, not only the ends
    clip_costs_all = {s: [0.105, 0.104, 0.106] for s in FALLING}  # the clip alone at a random ranking's level
    assert not card.check(_hr(clip_costs_all))  # the no-DP point's 0.74 does not make the noise look costly


def test_hr_card_measures_the_noise_from_the_clip_alone():
    rows = registry.get("dp-hr-epsilon").compare_fn(_hr(FALLING), None)
    ours = rows.set_index("quantity")["ours"]
    assert ours["FedMF: HR@10 from the clip alone to the largest sigma"] == "0.6000 -> 0.5500 -> 0.4100"
    assert ours["FedMF: HR@10 without DP, then clipped to C alone"] == "0.7400 -> 0.6000"


def test_local_dp_that_hides_nothing_fails(curious):
    card = registry.get("dp-curious-server")
    assert not card.check(curious.assign(upload_precision=curious["upload_precision"].max()))


def test_a_defense_that_hides_nothing_fails():
    card = registry.get("dp-inversion")
    assert card.check(_inversion(ATTACKED))
    assert not card.check(_inversion({d: ATTACKED["none"] for d in ATTACKED}))
    within_noise = {**ATTACKED, "5 local steps": [49.0, 51.0, 48.5]}  # 1 dB below, seeds 1.5 dB apart
    assert not card.check(_inversion(within_noise))

"""Gradient inversion (Geiping et al. 2020) on the digits model: one 8x8 image from one step comes back clearly,
and each defense degrades it (measured PSNR, against the dataset-mean image's PSNR: the chance baseline)."""
import pytest

from labcore.dp import inversion as I

BASE = I.Setup(iterations=250)


@pytest.fixture(scope="module")
def undefended():
    return I.attack(BASE)


def test_one_image_one_step_no_defense_comes_back(undefended):
    r = undefended
    assert r.labels.tolist() == r.true_labels.tolist()  # iDLG's label from the last layer's bias
    assert r.mean_psnr > 30 > r.mean_image_psnr + 15  # far above the chance baseline (about 10 dB)


@pytest.mark.parametrize("name", ["5 local steps", "Top-K 10%", "QSGD 2 bits", "DP sigma 0.1", "SecAgg of 8"])
def test_each_defense_lowers_the_reconstruction(undefended, name):
    r = I.attack(I.defended(BASE, name))
    assert r.mean_psnr < undefended.mean_psnr - 10, (name, r.mean_psnr)


@pytest.mark.slow
def test_a_batch_of_eight_lowers_it(undefended):
    """Two images of different classes still come back whole (56 dB measured): the batch defends from about 8."""
    assert I.attack(I.defended(BASE, "batch of 8")).mean_psnr < undefended.mean_psnr - 10


def test_a_rank_one_update_loses_nothing_of_one_image_at_one_step(undefended):
    """The weight gradient of one image is x delta^T in each layer: already rank 1, so the rank-1 defense sends
    it whole (to float rounding); it takes more images or steps for the rank to bite."""
    assert I.attack(I.defended(BASE, "rank 1")).mean_psnr == pytest.approx(undefended.mean_psnr, abs=0.01)


def test_bad_setup_names_the_field():
    with pytest.raises(ValueError, match="^n_images="):
        I.Setup(n_images=9)
    with pytest.raises(ValueError, match="^local_steps="):
        I.Setup(local_steps=0)

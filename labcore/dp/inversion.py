"""Gradient inversion: a curious server rebuilds a client's training images from the update it sent.

Geiping et al. 2020, "Inverting gradients - how easy is it to break privacy in federated learning?": dummy images
x' are optimized with Adam so that the gradient they give at the round's model points the way the observed
update does (loss 1 - cos(grad(x'), -update), plus a total-variation prior on x'); the label of a single image
is read off the last layer's bias as in iDLG (Zhao et al. 2020: the only class whose bias gradient is negative),
for several images the labels are taken as known (Geiping's setting). The update after K local steps is the
model difference theta_K - theta_0, inverted as if it were one gradient (Geiping et al., Sec. 5).

The task is the FL-algorithms topic's digits model (`labcore.flalgos.problems.Classifier` on scikit-learn's
8x8 digits, pixels in [0, 1]). Each defense is a parameter of `Setup`: more local steps or images, Top-K of the
update, QSGD quantization, a rank-r update of each weight matrix, DP (clip + Gaussian noise, labcore.privacy.dp),
and secure aggregation of M clients (the server sees only the sum of M clients' updates).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from ..privacy import dp

SIDE = 8  # the digits are 8 x 8


@dataclass(frozen=True)
class Setup:
    """One client's round and the attack on it. Every defense is off at its default."""

    n_images: int = 1  # the client's batch (1..8)
    local_steps: int = 1  # full-batch local SGD steps before the update is sent (1..5)
    local_lr: float = 0.1
    model: str = "mlp"  # the digits model of the FL-algorithms topic: "mlp" (64-32-10 ReLU) or "logreg"
    hidden: int = 32
    # defenses on the update
    topk_ratio: float = 1.0  # keep this share of the largest-magnitude values (1 = all)
    quant_bits: int = 0  # QSGD bits per value (0 = float32)
    rank: int = 0  # send each weight matrix at this rank (0 = full)
    dp_noise: float = 0.0  # sigma: N(0, sigma^2 C^2) added to the clipped update
    dp_clip: float = 1.0  # C
    secagg_clients: int = 1  # the server sees the sum of this many clients' updates
    # the attack
    iterations: int = 600
    attack_lr: float = 0.1
    tv_weight: float = 1e-3
    seed: int = 0

    def __post_init__(self):
        checks = (("n_images", 1 <= self.n_images <= 8, "1..8"), ("local_steps", 1 <= self.local_steps <= 5, "1..5"),
                  ("topk_ratio", 0 < self.topk_ratio <= 1, "(0, 1]"), ("quant_bits", 0 <= self.quant_bits <= 16,
                                                                       "0..16"),
                  ("rank", self.rank >= 0, ">= 0"), ("dp_noise", self.dp_noise >= 0, ">= 0"),
                  ("dp_clip", self.dp_clip > 0, "> 0"), ("secagg_clients", self.secagg_clients >= 1, ">= 1"),
                  ("model", self.model in ("mlp", "logreg"), "'mlp' or 'logreg'"),
                  ("iterations", self.iterations >= 1, ">= 1"))
        for name, ok, allowed in checks:
            if not ok:
                raise ValueError(f"{name}={getattr(self, name)!r} is invalid: allowed values are {allowed}")


@dataclass
class Inversion:
    originals: np.ndarray  # (n, 8, 8) in [0, 1]
    reconstructions: np.ndarray  # (n, 8, 8), matched to the originals
    psnr: np.ndarray  # (n,) dB
    labels: np.ndarray  # the labels the attack used
    true_labels: np.ndarray
    mean_image_psnr: float  # the chance baseline: the dataset's mean image against the originals

    @property
    def mean_psnr(self) -> float:
        return float(self.psnr.mean())


def _digits():
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y, dtype=torch.int64)


def _model(s: Setup):
    from ..flalgos.problems import Classifier
    from ..flalgos.tasks import FedData
    x, y = _digits()
    one = torch.tensor([0, len(x)])
    data = FedData("digits", x, y, one, x[:0], y[:0], torch.tensor([0, 0]), 10)
    return Classifier(data, s.model, s.hidden)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Peak signal-to-noise ratio of two images with pixels in [0, 1] (peak 1)."""
    mse = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(1.0 / mse)


def local_update(clf, theta0: torch.Tensor, x: torch.Tensor, y: torch.Tensor, steps: int, lr: float) -> torch.Tensor:
    """The model difference after `steps` full-batch SGD steps on (x, y)."""
    theta = theta0.clone()
    for _ in range(steps):
        theta = theta.detach().requires_grad_(True)
        g, = torch.autograd.grad(clf.loss(theta, x, y), theta)
        theta = theta - lr * g
    return (theta - theta0).detach()


def defend(clf, update: torch.Tensor, s: Setup, gen: torch.Generator) -> torch.Tensor:
    """The update as the server receives it, through each defense that is on."""
    u = update.clone()
    if s.rank:
        parts, pos = [], 0
        for shape in clf.shapes:
            n = int(np.prod(shape))
            block = u[pos:pos + n].reshape(shape)
            if len(shape) == 2 and s.rank < min(shape):
                from ..methods.compress import svd_reconstruct, svd_truncate
                block = svd_reconstruct(*svd_truncate(block, s.rank))
            parts.append(block.reshape(-1))
            pos += n
        u = torch.cat(parts)
    if s.topk_ratio < 1:
        from ..methods.compress import topk_compress, topk_count, topk_decompress
        vals, idx = topk_compress(u[None], topk_count(u.numel(), s.topk_ratio))
        u = topk_decompress(vals, idx, (1, u.numel()))[0]
    if s.quant_bits:
        from ..methods.quantize import dequantize, quantize
        lv, sg, nm = quantize(u[None], s.quant_bits, 512, gen)
        u = dequantize(lv, sg, nm, s.quant_bits, 512, (1, u.numel()))[0]
    if s.dp_noise:
        u = dp.clip_updates(u[None], s.dp_clip)[0] + dp.gaussian(u.shape, s.dp_noise * s.dp_clip, gen, u.dtype)
    return u


def infer_label(clf, update: torch.Tensor) -> int:
    """iDLG: for one image the last layer's bias gradient is p - onehot(y), negative only at y; the update is
    minus the learning rate times it (to first order over the local steps), so y is where the update is largest."""
    k = clf.shapes[-1][0]
    return int(torch.argmax(update[-k:]))


def total_variation(x: torch.Tensor) -> torch.Tensor:
    img = x.reshape(-1, SIDE, SIDE)
    return (img[:, 1:, :] - img[:, :-1, :]).abs().mean() + (img[:, :, 1:] - img[:, :, :-1]).abs().mean()


def reconstruct(clf, theta0: torch.Tensor, observed: torch.Tensor, labels: torch.Tensor, s: Setup) -> torch.Tensor:
    """Geiping et al.'s attack: Adam on dummy images, loss 1 - cos(grad, -observed) + tv_weight TV(x)."""
    gen = torch.Generator().manual_seed(s.seed + 1)
    dummy = torch.rand(len(labels), SIDE * SIDE, generator=gen).requires_grad_(True)
    opt = torch.optim.Adam([dummy], lr=s.attack_lr)
    target = -observed / observed.norm().clamp(min=1e-12)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [s.iterations * 3 // 8, s.iterations * 5 // 8,
                                                       s.iterations * 7 // 8], gamma=0.1)
    for _ in range(s.iterations):
        opt.zero_grad()
        g, = torch.autograd.grad(clf.loss(theta0, dummy, labels), theta0, create_graph=True)
        loss = 1 - (g * target).sum() / g.norm().clamp(min=1e-12) + s.tv_weight * total_variation(dummy)
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():
            dummy.clamp_(0, 1)
    return dummy.detach()


def attack(s: Setup) -> Inversion:
    """Pick the client's images, train, send through the defenses, invert; PSNR of each matched image."""
    x_all, y_all = _digits()
    clf = _model(s)
    rng = np.random.default_rng(s.seed)
    theta0 = clf.init(torch.Generator().manual_seed(s.seed)).requires_grad_(True)
    picks = rng.choice(len(x_all), size=s.n_images * s.secagg_clients, replace=False)
    gen = torch.Generator().manual_seed(s.seed + 2)
    updates = []
    for c in range(s.secagg_clients):  # client 0 is the target; the others are summed with it under secagg
        idx = torch.from_numpy(picks[c * s.n_images:(c + 1) * s.n_images])
        upd = local_update(clf, theta0.detach(), x_all[idx], y_all[idx], s.local_steps, s.local_lr)
        updates.append(defend(clf, upd, s, gen))
    observed = torch.stack(updates).sum(0)
    target_idx = torch.from_numpy(picks[:s.n_images])
    x, y = x_all[target_idx], y_all[target_idx]
    labels = torch.tensor([infer_label(clf, observed)]) if s.n_images == 1 else y
    rec = reconstruct(clf, theta0, observed, labels, s).numpy().reshape(-1, SIDE, SIDE)
    orig = x.numpy().reshape(-1, SIDE, SIDE)
    cost = np.array([[np.mean((o - r) ** 2) for r in rec] for o in orig])
    rows, cols = linear_sum_assignment(cost)
    rec = rec[cols[np.argsort(rows)]]
    mean_img = x_all.mean(0).numpy().reshape(SIDE, SIDE)
    return Inversion(orig, rec, np.array([psnr(o, r) for o, r in zip(orig, rec)]), labels.numpy(), y.numpy(),
                     float(np.mean([psnr(o, mean_img) for o in orig])))


DEFENSES = {  # a label, and what the defense sets (the strength the cards and the page start from)
    "none": {},
    "5 local steps": {"local_steps": 5},
    "batch of 8": {"n_images": 8},
    "Top-K 10%": {"topk_ratio": 0.1},
    "QSGD 2 bits": {"quant_bits": 2},
    "rank 1": {"rank": 1},
    "DP sigma 0.1": {"dp_noise": 0.1, "dp_clip": 0.1},
    "SecAgg of 8": {"secagg_clients": 8},
}


def defended(base: Setup, name: str) -> Setup:
    return replace(base, **DEFENSES[name])

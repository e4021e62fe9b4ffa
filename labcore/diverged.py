"""The one error every training loop of the lab raises when its numbers leave the floats.

A step size too large (lr=100 on FedMF, lr=inf reaching a loop some other way) turns the loss into inf or NaN;
a metric computed from such a model (AUC 1.0 from NaN scores, accuracy of an argmax over NaN) would look
believable. Every loop checks its loss (and, where cheap, its weights) with `check_finite` and stops with a
`DivergedError` that says what to lower, before any metric of that state is reported.
"""
from __future__ import annotations

import math


class DivergedError(FloatingPointError, ValueError):
    """A run's loss or weights stopped being finite (its step sizes are too large); the message says which
    setting to lower. A ValueError as well, so that the command line and the app report it as one line."""


def check_finite(where: str, loss=None, tensors=(), lower: str = "lr") -> None:
    """Raise DivergedError when `loss` (a float or a scalar tensor) or any of `tensors` is not finite.

    `where` names the point of the run ("round 12", "epoch 3"), `lower` what to change ("lr (now 100)")."""
    import torch

    value = None if loss is None else float(loss.detach() if hasattr(loss, "detach") else loss)
    bad_loss = value is not None and not math.isfinite(value)
    bad_weights = any(not bool(torch.isfinite(t).all()) for t in tensors)
    if bad_loss or bad_weights:
        what = []
        if value is not None:
            what.append(f"training loss {value:.3g}")
        if tensors:
            what.append("weights " + ("not finite" if bad_weights else "finite"))
        raise DivergedError(f"{where}: the run diverged ({', '.join(what)}): lower {lower}")

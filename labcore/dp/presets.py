"""The Privacy page's presets: the three DP modes at one noise level, and an inversion with a defense."""
from __future__ import annotations

from ..app.presets import Preset

PRESETS = (
    Preset("dp-central", "DP: central DP-FedAvg, sigma 1", "privacy", {"_dp_mode": "central", "_dp_sigma": "1"},
           "The server clips, sums, adds N(0, sigma^2 C^2) and divides by the expected cohort.",
           cards=("dp-hr-epsilon",)),
    Preset("dp-local", "DP: local DP against the curious server", "privacy", {"_dp_mode": "local", "_dp_sigma": "1"},
           "Each client noises its own update: the curious server's precision drops, and so does HR@10.",
           cards=("dp-curious-server",)),
    Preset("dp-inversion-dp", "DP: gradient inversion against DP noise", "privacy",
           {"_dp_inv_dp": "0.1"}, "One digit, one step, with DP noise on the update.", cards=("dp-inversion",)),
)

"""The Privacy page's presets: the three DP modes at one noise level, and an inversion with a defense."""
from __future__ import annotations

from ..app.lesson import Step
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

LESSON = (
    Step("Differential privacy: what epsilon costs", 5, "privacy", PRESETS[0].query,
         move="the noise multiplier sigma up and down, then the mode from central to local.",
         watch="epsilon round by round (the accountant) beside HR@10, and the curious server's precision.",
         ask="Which spends the privacy budget faster: more rounds, or less noise per round?",
         notebook="labs/14_differential_privacy.ipynb"),
)

"""The Wireless page's step of the lesson path (`labcore.app.lesson`); the page has no paper presets."""
from __future__ import annotations

from ..app.lesson import Step

LESSON = (
    Step("Bits on a noisy link", 2, "wireless", {},
         move="the uplink bits k_u above the uplink budget K_U, then both back to 8.",
         watch="the error curve against Theorem 1's bound, and where the bound stops applying.",
         ask="What happens to training when a client sends more bits than its channel carries?",
         notebook="labs/09_wireless_quantization.ipynb"),
)

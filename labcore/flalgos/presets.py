"""The FL-algorithms page's step of the lesson path (`labcore.app.lesson`); the page has no paper presets."""
from __future__ import annotations

from ..app.lesson import Step

LESSON = (
    Step("Client drift: SCAFFOLD against FedAvg", 3, "flalgos", {"alpha": "0.05"},
         move="the Dirichlet alpha (how skewed each client's digits are) from 0.05 to 10, then the local steps K.",
         watch="the chosen algorithm's accuracy beside FedAvg's, trained on the same clients and minibatches.",
         ask="Does the gap between them grow as the clients' data grows more different, or with more local steps?",
         notebook="labs/08_fl_algorithms.ipynb"),
)

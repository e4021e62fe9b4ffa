from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="dp", title="Differential privacy: DP-FedAvg with an accountant, and gradient inversion",
    paper="McMahan et al. 2018 (DP-FedAvg, ICLR); Geiping et al. 2020 (Inverting gradients, NeurIPS); the accountants "
          "of Opacus (Yousefpour et al. 2021)",
    section="Recommendation papers", order=50,
    cards=".cards",
    config="labcore.config:from_dict",  # the cards train the engine's RunConfigs
    pages=(Page("privacy", "Privacy: DP and gradient inversion", ":material/shield_lock:", HERE / "page.py"),),
    presets=".presets",
    exercises=".exercises",
    notebook="labs/14_differential_privacy.ipynb",
    summary="Pick epsilon or a noise multiplier, watch the accountant and HR@10 round by round, attack a DP run "
            "as a curious server, and see 8x8 digits come back out of one update.",
)

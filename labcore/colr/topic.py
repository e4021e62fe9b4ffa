from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent

TOPIC = Topic(
    name="colr",
    title="CoLR: low-rank federated recommendation",
    paper=("Nguyen et al., Towards Efficient Communication and Secure Federated Recommendation System via "
           "Low-rank Training (colr-low-rank-fedrec.txt)"),
    section="Recommendation papers",
    order=10,
    cards=".cards",
    # the engine's own paper: Explorer and Compare are the core pages; its encryption section is its own page
    pages=(Page("encryption", "Encryption", ":material/lock:", HERE / "page.py"),),
    presets=".presets",
    exercises=".exercises",
    notebook="labs/01_federated_recommendation.ipynb",
    cli=".cli",
    config="labcore.config:from_dict",
    summary="Federated MF with low-rank updates (CoLR, SCoLR) against FedMF, SVD and Top-K: bytes, HR@10, "
            "round time and encryption.",
)

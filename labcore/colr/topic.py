from labcore.topics import Topic

TOPIC = Topic(
    name="colr",
    title="CoLR: low-rank federated recommendation",
    paper=("Nguyen et al., Towards Efficient Communication and Secure Federated Recommendation System via "
           "Low-rank Training (colr-low-rank-fedrec.txt)"),
    section="Recommendation papers",
    order=10,
    cards=".cards",
    pages=(),  # CoLR is the core engine's own paper: its views are the core pages (Explorer, Compare, Encryption)
    presets=".presets",
    exercises=".exercises",
    notebook="labs/01_federated_recommendation.ipynb",
    cli=".cli",
    config="labcore.config:from_dict",
    summary="Federated MF with low-rank updates (CoLR, SCoLR) against FedMF, SVD and Top-K: bytes, HR@10, "
            "round time and encryption.",
)

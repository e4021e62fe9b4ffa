from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="fair",
    title="FAIR: random subspaces",
    paper=("FAIR: devices of different memory train one recommendation model through hashed random subspaces "
           "(fair-random-subspaces.txt)"),
    section="Recommendation papers",
    order=20,
    cards=".cards",
    pages=(Page("fair", "FAIR: random subspaces", ":material/memory:", HERE / "page.py"),),
    presets=".presets",
    prefetch=".runs:prefetch",
    exercises=".exercises",
    notebook="labs/06_fair.ipynb",
    config=".config:from_dict",
    summary="Devices with 1x to 64x less memory train one model: model loss against data loss.",
)

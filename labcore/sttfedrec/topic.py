from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="sttfedrec",
    title="STTFedRec: split two-tower learning",
    paper="STTFedRec: split learning of a two-tower recommender (sttfedrec-split-two-tower.txt)",
    section="Recommendation papers",
    order=30,
    cards=".cards",
    prefetch=".experiments:prefetch",
    pages=(Page("split_learning", "STTFedRec: split learning", ":material/call_split:", HERE / "page.py"),),
    presets=".presets",
    exercises=".exercises",
    notebook="labs/07_split_learning.ipynb",
    config=".config:from_dict",
    summary="The device keeps one tower, the server the other: payload, time and what obfuscated requests hide.",
)

"""The GIST topic's declaration (light: no torch, no streamlit)."""
from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="gist", title="GIST: GCN independent subnet training",
    paper="Report 1 of rice-course-reports-gist-mc-wireless-sdp-fl.txt (GCN-IST; Wolfe et al.)",
    section="Course reports", order=130,
    cards=".cards",
    pages=(Page("gist", "GIST: independent subnets", ":material/hub:", HERE / "page.py"),),
    presets=None,
    exercises=".exercises",
    notebook="labs/10_gist.ipynb",
    config=".config:from_dict",
    prefetch=".experiments:prefetch",
    summary="Train a GCN as m independent subnets and watch accuracy, bytes and the parallel speed-up.",
)

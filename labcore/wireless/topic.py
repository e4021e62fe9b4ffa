from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="wireless", title="Wireless FL: uplink/downlink quantization under channel budgets",
    paper="Report 3 of rice-course-reports-gist-mc-wireless-sdp-fl.txt (Federated Learning at the Wireless Edge; "
          "N. Mehrotra)",
    section="Course reports", order=120,
    cards=".cards",
    pages=(Page("wireless", "Wireless: link budgets", ":material/cell_tower:", HERE / "page.py"),),
    presets=".presets",
    exercises=".exercises",
    notebook="labs/09_wireless_quantization.ipynb",
    config=".config:from_dict",
    summary="Set link budgets and bits, watch the error floor follow Theorem 1, and split a shared channel "
            "between two users.",
)

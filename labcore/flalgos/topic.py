from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="flalgos",
    title="Federated optimization: FedProx, SCAFFOLD, q-FFL, adaptive servers, personalization, backdoors",
    paper="Report 5 of rice-course-reports-gist-mc-wireless-sdp-fl.txt (survey of cross-device FL algorithms; "
          "FedProx, SCAFFOLD, q-FFL, Reddi et al., Ditto, pFedMe, APFL, Per-FedAvg from their original papers)",
    section="Course reports",
    order=110,
    cards=".cards",
    pages=(Page("flalgos", "FL algorithms: drift, fairness, attacks", ":material/tune:", HERE / "page.py"),),
    presets=".presets",
    exercises=".exercises",
    notebook="labs/08_fl_algorithms.ipynb",
    config=".config:card_config_from_dict",
    summary="Pick an algorithm, a task and how heterogeneous the clients are; watch convergence, per-client "
            "fairness, drift and bytes side by side.",
)

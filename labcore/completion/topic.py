from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="completion",
    title="Matrix completion benchmark",
    paper="Report 2 of rice-course-reports-gist-mc-wireless-sdp-fl.txt (benchmarking low-rank matrix completion)",
    section="Course reports",
    order=140,
    cards=".cards",
    pages=(Page("completion", "Matrix completion race", ":material/grid_on:", HERE / "page.py"),),
    exercises=".exercises",
    notebook="labs/11_matrix_completion.ipynb",
    config=".config:from_dict",
    prefetch=".harness:prefetch",
    summary="Give ten completion algorithms the same time budget and watch their error race; map where any wins.",
)

from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="sdp", title="Low-rank SDP: Burer-Monteiro, mixing, Frank-Wolfe",
    paper="Report 4 of rice-course-reports-gist-mc-wireless-sdp-fl.txt (A Review of Low-Rank Solutions to "
          "Semidefinite Programming; Abouzeid & Fan)",
    section="Course reports", order=150,
    cards=".cards",
    pages=(Page("sdp", "Low-rank SDP (MaxCut)", ":material/scatter_plot:", HERE / "page.py"),),
    exercises=".exercises",
    notebook="labs/12_low_rank_sdp.ipynb",
    config=".config:from_dict",
    summary="Solve the MaxCut SDP with mixing, Burer-Monteiro and Frank-Wolfe, watch the certified gap and the "
            "rank, and round to a cut.",
)

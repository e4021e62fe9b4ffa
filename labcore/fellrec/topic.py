from pathlib import Path

from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(
    name="fellrec", title="FELLRec: federated fine-tuning of a language-model recommender",
    paper="fellrec-federated-llm-rec.txt (FELLRec: dynamic balance and flexible storage for federated "
          "LLM-based recommendation)",
    section="Recommendation papers", order=40,
    cards=".cards",
    pages=(Page("fellrec", "FELLRec: federated LLM recommender", ":material/dynamic_feed:", HERE / "page.py"),),
    exercises=".exercises",
    notebook="labs/13_fellrec.ipynb",
    config=".config:from_dict",
    prefetch=".experiments:prefetch",
    summary="Fine-tune a small transformer recommender with LoRA across clients; compare FedAvg, FedProx, Ditto "
            "and FELLRec on accuracy and client imbalance; slide alpha, beta and k.",
)

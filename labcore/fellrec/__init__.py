"""FELLRec (federated fine-tuning of a language-model recommender) in one folder.

    config.py       FellrecConfig: the typed, validated config of one experiment (and its cache key)
    data.py         ML-100K titles / Amazon games ids / synthetic; chronological 8:1:1 splits; BPE item text
    clients.py      clients from KMeans on the core MF engine's user embeddings, or Dirichlet(c)
    model.py        the recommender: a small decoder-only transformer with LoRA on attention (nanoGPT style);
                    the client-specific parameters: the adapters, or every weight (tune="full")
    minilm.py       all-MiniLM-L6-v2 read from its wheel (sha256-pinned), a plain-torch BERT with LoRA on q/k/v/output
    recformer.py    backbone="minilm": users and items as title texts, cosine scores, few-shot samples, the split
    offload.py      flexible storage: the device keeps layers 1..k and N, the server k+1..N-1; split passes
    aggregate.py    eqs. (1)-(4): cosine-similarity personalized aggregation, curriculum heating; FedAvg
    federated.py    foundation pre-training, FedAvg / FedProx / Ditto / FELLRec / centralized runs (cached)
    metrics.py      full-ranking Recall@K, NDCG@K, imbalance
    probes.py       linear and MLP probe attacks on each layer's output (Fig. 3)
    costs.py        device memory, bytes and seconds against k beside Table 3's formulas (Fig. 4)
    experiments.py  the runs behind the cards at smoke and full size
    paper.py        the paper's numbers
    cards.py        figure cards (Tables 1, 4, 6; Figs. 3, 4, 5, 6, 7); cards_minilm.py the same on MiniLM
    plots.py        plotly figures;  page.py  the app page;  exercises.py  the notebook's checks
"""

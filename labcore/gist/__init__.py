"""GIST: a 2-layer GCN trained as m independent subnets (GCN-IST, report 1 of the Rice course reports).

    from labcore.gist.config import GistConfig
    from labcore.gist.simulate import run
    res = run(GistConfig(graph="cora", subnets=4, split="both", hidden=64))
    res.summary(), res.history, res.subnet_loss, res.ledger, res.partitions

What is where in this folder:
    topic.py        the topic's declaration (cards, page, exercises, notebook)
    config.py       GistConfig (one GCN-IST run) and KipfConfig (the plain GCN baseline), validated
    planetoid.py    the Planetoid loader (ind.<graph>.* files, Kipf's semantics, pooch download, clear errors)
    synthetic.py    a small planted-partition graph for smoke runs
    graph.py        normalised adjacency, row-normalised features, the Gaussian random projection
    model.py        the GCN forward as a function of a parameter dict; Glorot init; seeded dropout masks
    baseline.py     Kipf & Welling's GCN training (the baseline)
    subnets.py      the partition, each subnet's blocks, its message, the server's merge (pure functions)
    trainer.py      one subnet's local iterations, the LR schedule, the result object
    simulate.py     the m subnets in one process (notebook, app, cards)
    distributed.py  the m subnets in m processes over torch.distributed (gloo), same floats
    paper.py        the report's Table 1 and appendix tables
    experiments.py  cached runs and mean / std over seeds behind the cards
    cards.py        the figure cards; reproduce.py computes and stores them through labcore.figures
    plots.py        plotly figures; page.py the app page; exercises.py the notebook's checks
"""

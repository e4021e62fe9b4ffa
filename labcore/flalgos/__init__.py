"""Federated optimization lab: the survey's cross-device algorithms on heterogeneous clients.

    config.py       FLConfig: task, heterogeneity, algorithm and its knobs, stragglers, dropouts, attacks, defenses
    tasks.py        FedProx's Synthetic(alpha, beta), digits with Dirichlet label / quantity skew, quadratics
    files.py        MNIST (IDX, pooch download + sha256) and FEMNIST (LEAF json) readers
    problems.py     the cohort's models as one (clients, P) tensor: batched gradients, evaluation, backdoor triggers
    recommend.py    the recommendation task: MF on the core's datasets, user vectors private, HR@10
    strategies.py   FedAvg and one subclass per algorithm, each overriding only the step it changes
    defenses.py     median, trimmed mean, Krum, norm clipping (+ noise)
    simulation.py   one run: cohort, stragglers, dropouts, secure aggregation, payload ledger; cached `run(cfg)`
    experiments.py  the cards' experiments (smoke and full sizes); the `engine_*` ones run every algorithm,
                    attack, defense and personalization on the lab's engine (`labcore.fed`, RunConfig fields)
    cards.py        figure cards;  plots.py  plotly figures;  page.py  the app page
    exercises.py    the notebook's checks and its base config `lab_config`
    topic.py        the topic's declaration

    from labcore.flalgos.config import FLConfig
    from labcore.flalgos.simulation import run
    res = run(FLConfig(algorithm="scaffold", task="digits", dirichlet_alpha=0.1))
    res.history, res.clients, res.ledger
"""

"""Low-rank semidefinite programming on MaxCut (Report 4 of the Rice course reports): what is where.

    topic.py            the topic's declaration (name, pages, cards, notebook)
    config.py           SdpConfig: graph, method, rule, rank k, stopping rule (frozen, validated, key())
    problem.py          DiagSDP (min <C, X>, diag X = 1, X PSD), maxcut(W) and diag_sdp(C) with input checks
    graphs.py           Cora's citation graph, the Last.fm trust network, random graphs, Z2 synchronization
    mixing_kernels.py   the mixing method's block updates compiled with numba (+ the plain-loop baseline)
    mixing.py           the mixing method: cyclic / uniform / importance / greedy rules, Mixing++
    burer_monteiro.py   Burer-Monteiro augmented Lagrangian with scipy's L-BFGS (Algorithm 1)
    frank_wolfe.py      Hazan's algorithm (FW, step 2/(t+2), Lanczos) and in-face extended Frank-Wolfe
    certificates.py     the dual bound from y_i = -||g_i|| and the smallest eigenvalue: a proved gap
    trace.py            the per-iteration table (value, bound, gap, rank, seconds)
    reference.py        the cvxpy/SCS optimum for graphs of up to a few hundred nodes
    rounding.py         Goemans-Williamson hyperplane rounding
    run.py              run(cfg) -> SdpResult(trace, V)
    experiments.py      the cards' experiments (convergence, rank threshold, rounding, rules, Hazan's rate)
    cards.py, plots.py  figure cards and their plotly figures
    page.py             the app page;  exercises.py  the notebook's checks and base config
"""

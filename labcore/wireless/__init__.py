"""Wireless FL: uplink/downlink quantization under channel budgets (report 3 of the Rice course reports).

    config.py      WirelessConfig: d, users, kappa, step (gamma L), bits and budgets of both links, trials
    data.py        linear regression with an exact condition number, split over users (Problem)
    fedavg.py      quantized FedAvg of Eq. (2)-(3), batched over trials and users; the Eq. (5) payload ledger
    theory.py      Theorem 1: contraction, neighbourhood, conditions, thresholds, the worked examples
    allocation.py  the budget allocation of Eq. (9)-(12): SLSQP solver, whole-bit search, Eq. (12), Table 1
    cards.py       figure cards wireless-fig2/3/4 and wireless-table1
    plots.py       error curves with the bound, the two-user rate region, Table 1
    page.py        the app page; exercises.py the notebook's checks and lab config
The quantizer is `labcore.methods.quantize` (quantize_levels) and the channel `labcore.net.channel`.
"""

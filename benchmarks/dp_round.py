"""A DP round against a plain round of the same method on ML-1M at CoLR's settings, both in one process.

    LABCORE_DATA=<data folder> python benchmarks/dp_round.py                 # FedMF, central DP, sigma 1
    python benchmarks/dp_round.py --method colr --rounds 20
    python benchmarks/dp_round.py --mode distributed --encryption secagg --rounds 5   # both runs under secagg

Both runs use Poisson cohorts (60 clients a round expected) and aggregation "weighted" (DP's fixed
denominator needs it), so the plain run differs from the DP one only by the DP step: clipping in the aggregated
space, the noise, the fixed denominator and the accountant's epsilon. The runs alternate round by round (the
same machine load for both); the first round of each (compilation, allocation) is not timed, nor are evaluations.
Prints the median CPU seconds of a round of each and their ratio (goal: DP <= 1.3x plain), and the DP rounds'
time in the accountant: distributed DP's sigma follows the cohort's size, and each new size costs Opacus's RDP
curve of a new sigma (cached for the rest of the process).
"""
from __future__ import annotations

import argparse
import statistics
import time

from labcore.config import paper_ml1m
from labcore.fed.engine import Simulation, load_data
from labcore.privacy import dp


def time_the_accountant() -> list[float]:
    """Count the CPU seconds of every epsilon the engine computes (`RoundDP.epsilon`) in the returned list's one
    value."""
    spent, epsilon_of_rounds = [0.0], dp.epsilon_of_rounds

    def timed(*args, **kwargs):
        c0 = time.process_time()
        try:
            return epsilon_of_rounds(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - c0
    dp.epsilon_of_rounds = timed
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="fedmf", choices=("fedmf", "colr", "scolr", "topk"))
    ap.add_argument("--mode", default="central", choices=("central", "distributed", "local"))
    ap.add_argument("--rounds", type=int, default=10, help="timed rounds of each (distributed DP: a few hundred, "
                    "so that the cohort sizes repeat as in a full run)")
    ap.add_argument("--encryption", default="none", choices=("none", "secagg"),
                    help="the uplink of both runs (distributed DP's noise shares are meant for secagg's masks)")
    a = ap.parse_args()
    extra = {"rank": 4} if a.method in ("colr", "scolr") else {}
    common = dict(method=a.method, client_schedule="poisson", aggregation="weighted", rounds=10**6,
                  eval_every=10**6, rank_every=0, encryption=a.encryption, **extra)
    plain_cfg = paper_ml1m(**common)
    dp_cfg = paper_ml1m(**common, dp_mode=a.mode, dp_noise_multiplier=1.0, dp_clip=0.1)
    data = load_data(plain_cfg)
    sims = {"plain": Simulation(plain_cfg, data), "DP": Simulation(dp_cfg, data)}
    for s in sims.values():
        s.step()  # warm-up
    spent = time_the_accountant()
    cpu, accountant = {k: [] for k in sims}, []
    for _ in range(a.rounds):
        for name, s in sims.items():
            c0, a0 = time.process_time(), spent[0]
            s.step()
            cpu[name].append(time.process_time() - c0)
        accountant.append(spent[0] - a0)  # the plain run computes no epsilon
    med = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"{plain_cfg.describe()} on ML-1M, {a.rounds} timed rounds each, DP {a.mode} sigma 1 C 0.1, "
          f"encryption {a.encryption}")
    for k, v in med.items():
        print(f"  {k:5s} median CPU s per round {v:.3f}  (rounds: {', '.join(f'{x:.2f}' for x in cpu[k])})")
    print(f"  ratio DP / plain: {med['DP'] / med['plain']:.2f}  (goal <= 1.3)")
    total = {k: sum(v) for k, v in cpu.items()}  # what a run of this many rounds pays, new cohort sizes included
    print(f"  ratio of the total CPU of the {a.rounds} rounds: {total['DP'] / total['plain']:.2f} "
          f"(plain {total['plain']:.2f} s, DP {total['DP']:.2f} s)")
    without = statistics.median(c - e for c, e in zip(cpu["DP"], accountant))
    print(f"  of a DP round, the accountant: median {statistics.median(accountant):.3f} s (rounds: "
          f"{', '.join(f'{x:.2f}' for x in accountant)}); ratio without it {without / med['plain']:.2f}")


if __name__ == "__main__":
    main()

"""Federated-optimization topic: the batched cohort against a per-client loop, and each algorithm's round cost.

    .venv/bin/python benchmarks/flalgos_speed.py [--clients 100] [--steps 10] [--repeats 5]

1. Local training of a round of 100 digits clients (FedAvg, 10 steps of batch 10, logistic regression and MLP):
   the batched path (`FedAvg.local_train`: one (clients, P) tensor, batched matmuls) against the same math client
   by client (`tests/oracles/flalgos_loop.local_train_loop`: autograd on each client's tensors) and against a loop
   calling the batched kernel with one client at a time; same minibatches, same process, one thread. Results are checked equal.
2. A whole round (`Simulation.step`: sampling, training, ledger, aggregation) of FedProx and SCAFFOLD against
   FedAvg's.
Prints medians and ratios (wall-clock on this machine; other work running on it changes the absolute numbers
more than the ratios).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test oracles (`tests/oracles`)

from labcore.flalgos.config import FLConfig
from oracles.flalgos_loop import local_train_loop  # noqa: E402
from labcore.flalgos.simulation import Simulation, round_generator
from labcore.flalgos.strategies import RoundContext


def timed(fn, repeats: int) -> tuple[float, object]:
    out, ts = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def kernel_loop(strategy, ctx):
    """The batched kernel called with one client at a time (what vectorization saves beyond autograd)."""
    p, cfg, w = strategy.problem, strategy.cfg, strategy.w
    out = []
    for c in range(len(ctx.cohort)):
        theta = w[None].clone()
        for t in range(int(ctx.steps[c])):
            x, y = p.batch(ctx.batches, t)
            theta = theta - cfg.lr * p.batched_grad(theta, x[c : c + 1], y[c : c + 1])
        out.append(theta[0])
    return torch.stack(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    base = dict(task="digits", n_clients=a.clients, clients_per_round=a.clients, split="iid", local_steps=a.steps,
                batch_size=10, lr=0.05)
    print(f"1. local training of one round, {a.clients} digits clients, {a.steps} steps of batch 10 (median of "
          f"{a.repeats})")
    for model in ("logreg", "mlp"):
        sim = Simulation(FLConfig(model=model, **base))
        gen = round_generator(0, 0)
        cohort, steps, _ = sim.plan(gen)
        ctx = RoundContext(0, cohort, steps, sim.problem.draw(cohort, a.steps, 10, gen), gen)
        s = sim.strategy
        t_vec, w_vec = timed(lambda: s.local_train(ctx), a.repeats)
        t_loop, w_loop = timed(lambda: local_train_loop(s, ctx), max(1, a.repeats // 2))
        t_kern, w_kern = timed(lambda: kernel_loop(s, ctx), max(1, a.repeats // 2))
        assert torch.allclose(w_vec, w_loop, atol=1e-5) and torch.allclose(w_vec, w_kern, atol=1e-5)
        print(f"  {model:6s} batched {1e3 * t_vec:8.2f} ms | per-client autograd loop {1e3 * t_loop:8.1f} ms "
              f"(x{t_loop / t_vec:5.1f}) | per-client batched-kernel loop {1e3 * t_kern:8.1f} ms "
              f"(x{t_kern / t_vec:5.1f})")
    print(f"2. a whole round (Simulation.step) of {a.clients} clients, cost relative to FedAvg (median of "
          f"{a.repeats})")
    ref = None
    for alg, extra in (("fedavg", {}), ("fedprox", {"mu": 0.1}), ("scaffold", {})):
        sim = Simulation(FLConfig(algorithm=alg, **extra, **base))
        sim.step()  # warm-up
        t, _ = timed(sim.step, a.repeats)
        ref = ref or t
        print(f"  {alg:9s} {1e3 * t:8.2f} ms per round  x{t / ref:4.2f} of FedAvg")


if __name__ == "__main__":
    main()

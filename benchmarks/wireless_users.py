"""Quantized FedAvg rounds: batched over users (labcore.wireless.fedavg) against a loop over users, same config.

    python benchmarks/wireless_users.py [users] [rounds]

Both use the same quantizer and channel; the loop quantizes and steps one user at a time (the shape a
per-client implementation has). Prints the seconds of each and the ratio (wall-clock; one thread).
"""
from __future__ import annotations

import sys
import time

import torch

from labcore.methods.quantize import dequantize_levels, quantize_levels
from labcore.net.channel import transmit_levels
from labcore.wireless.config import WirelessConfig
from labcore.wireless.fedavg import WirelessFedAvg


def loop_rounds(cfg: WirelessConfig, sim: WirelessFedAvg, rounds: int) -> None:
    P, gen, x = sim.problem, torch.Generator().manual_seed(0), sim.x.clone()
    ku, kd = 2**cfg.bits_up, 2**cfg.bits_down
    for _ in range(rounds):
        lv, sg, nm = quantize_levels(x, kd, gen)
        acc = torch.zeros_like(x)
        for i in range(cfg.users):
            xd = dequantize_levels(transmit_levels(lv, kd, cfg.budget_down_bits, gen), sg, nm, kd)
            xt = xd - cfg.gamma * (xd @ P.H[i] - P.c[i])
            l2, s2, n2 = quantize_levels(xt, ku, gen)
            acc += dequantize_levels(transmit_levels(l2, ku, cfg.budget_up_bits, gen), s2, n2, ku)
        x = acc / cfg.users


def main() -> None:
    torch.set_num_threads(1)
    users = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    cfg = WirelessConfig(d=200, users=users, samples=50, bits_up=8, bits_down=8, budget_up_bits=6, trials=20)
    sim = WirelessFedAvg(cfg)
    sim._record = lambda *a, **k: None  # time the arithmetic only, as the loop does
    t0 = time.perf_counter()
    for _ in range(rounds):
        sim.step()
    batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop_rounds(cfg, sim, rounds)
    loop = time.perf_counter() - t0
    print(f"{users} users, {rounds} rounds, d = {cfg.d}, {cfg.trials} trials: batched {batched:.2f} s, "
          f"loop over users {loop:.2f} s, ratio {loop / batched:.1f}x")


if __name__ == "__main__":
    main()

"""CoLR Table 3 (ML-1M: overheads and ciphertext / plaintext sizes) with our measured costs beside the paper's.

    python benchmarks/table3.py              # ML-1M size, our parameters (N=32768, q=(60,50,60), 2^50; Paillier 2048)
    python benchmarks/table3.py --smoke      # a few seconds: 1024-bit Paillier, small samples
    python benchmarks/table3.py --csv out.csv

Also the curious-server attack on ML-1M runs (plain / CKKS / secure aggregation) with --attack.
"""
from __future__ import annotations

import argparse
import time

import pandas as pd

from labcore.privacy.costs import TABLE3_SETTINGS, format_table3, table3_rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--attack", action="store_true", help="also run the curious-server attack on ML-1M")
    ap.add_argument("--attack-rounds", type=int, default=2)
    a = ap.parse_args(argv)

    t0 = time.perf_counter()
    rows = table3_rows(smoke=a.smoke)
    print(TABLE3_SETTINGS, "\n")
    print(format_table3(rows))
    for r in rows:
        print(f"  {r['method']}: {r['basis']}")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if a.csv:
        from labcore.privacy.costs import table3_frame

        table3_frame(rows).to_csv(a.csv, index=False)

    if a.attack:
        import labcore
        from labcore.privacy.server_attack import attack_summary, curious_server

        cfgs = [labcore.paper_ml1m(method="fedmf"), labcore.paper_ml1m(method="colr", rank=4),
                labcore.paper_ml1m(method="colr", rank=4, encryption="ckks"),
                labcore.paper_ml1m(method="colr", rank=4, encryption="secagg"),
                labcore.paper_ml1m(method="fedmf", encryption="secagg"),
                labcore.paper_ml1m(method="topk", topk_ratio=1 / 64, aggregation="weighted", compress_down=False)]
        res = []
        for c in cfgs:
            t0 = time.perf_counter()
            res.append(curious_server(c, rounds=a.attack_rounds))
            print(f"{c.describe()}: {time.perf_counter() - t0:.0f} s", flush=True)
        with pd.option_context("display.width", 200):
            print(attack_summary(res).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()

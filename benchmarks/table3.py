"""CoLR Table 3 (ML-1M: overheads and ciphertext / plaintext sizes) with our measured costs beside the paper's.

    python benchmarks/table3.py              # ML-1M size, our parameters (N=32768, q=(60,50,60), 2^50; Paillier 2048)
    python benchmarks/table3.py --smoke      # a few seconds: 1024-bit Paillier, small samples
    python benchmarks/table3.py --csv out.csv
    python benchmarks/table3.py --gmpy2      # Paillier per-value costs with gmpy2 and without (same process)

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
    ap.add_argument("--gmpy2", action="store_true", help="only compare Paillier with and without gmpy2")
    a = ap.parse_args(argv)
    if a.gmpy2:
        paillier_gmpy2()
        return

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
        from labcore.colr.curious_server import attack_summary, curious_server

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


def paillier_gmpy2(key_length: int = 2048, sample: int = 32) -> None:
    """phe uses gmpy2 when it is importable (phe.util.HAVE_GMP); time encryption both ways on the same values.

    CPU seconds of this process (the machine may be shared), per value."""
    import numpy as np
    import phe.util

    from labcore.privacy.paillier import VALUE_PRECISION, keypair

    pk, _ = keypair(key_length)
    x = np.random.default_rng(1).normal(0.0, 1e-2, size=sample)
    print(f"phe uses gmpy2: {phe.util.HAVE_GMP}; {key_length}-bit key, {sample} values")
    cpu = {}
    for gmp in (True, False):
        phe.util.HAVE_GMP = gmp
        c0 = time.process_time()
        for v in x:
            pk.encrypt(float(v), precision=VALUE_PRECISION)
        cpu[gmp] = (time.process_time() - c0) / sample
        print(f"  gmpy2 {'on ' if gmp else 'off'}: encryption {1e3 * cpu[gmp]:.1f} ms CPU per value")
    phe.util.HAVE_GMP = True
    print(f"  ratio without / with gmpy2: {cpu[False] / cpu[True]:.1f}x")


if __name__ == "__main__":
    main()

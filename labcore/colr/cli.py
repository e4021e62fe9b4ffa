"""CoLR's command: `labcore table2` (Table 2's form: FedMF against CoLR ranks, communication and computation time)."""
from __future__ import annotations


def cmd_table2(ns) -> int:
    from ..cli import config_from_args
    from ..fed.engine import run
    from ..net.wallclock import table2

    base = config_from_args(ns)
    try:
        ranks = [int(x) for x in ns.ranks.split(",")]
    except ValueError:
        raise ValueError(f"--ranks={ns.ranks!r} is invalid: expected whole numbers separated by commas, e.g. 1,2,4") \
            from None
    cfgs = [base.replace(method="fedmf")] + [base.replace(method="colr", rank=r) for r in ranks]  # all valid first
    runs = [run(c, progress=not ns.quiet) for c in cfgs]
    print(table2(runs).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


def add_commands(sub) -> None:
    from ..cli import add_config_options

    p = sub.add_parser("table2", help="CoLR Table 2's form: FedMF vs CoLR ranks, communication/computation time")
    add_config_options(p)
    p.add_argument("--ranks", default="1,2,4,8,16,32")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_table2)

"""The Compare page's grids: several configurations drawn on the same axes.

`sweep(base, mode, values, with_base)` returns the runs of one comparison and
the values it had to skip (with the reason):

rank    CoLR's Fig. 3 form: CoLR@r at the base d against FedMF with d=r, which
        sends the same number of values per round (N x r), plus FedMF at full d.
ratio   Fig. 4 form: CoLR@r, SVD@r and Top-K keeping r/d of the values, i.e.
        the same compression ratio (SVD also sends V: r(N+d) values), both
        directions compressed; with the baseline, FedMF with d=r dashed.
b_init  Fig. 5: CoLR@r with B normal, orthonormal, on the sphere, and on the sphere scaled by sqrt(d/r).
scolr   Table 4: SCoLR with local ranks r_u uniform in 1..r against CoLR@r.
bits    CoLR@r (the base rank) with uplink and downlink quantized to b bits,
        against float32.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import B_INITS, ConfigError, RunConfig

MODES = {
    "rank": "CoLR rank sweep vs FedMF at matching bytes (Fig. 3 form)",
    "ratio": "CoLR vs SVD vs Top-K at equal compression ratio (Fig. 4 form)",
    "b_init": "distribution of CoLR's B (Fig. 5)",
    "scolr": "SCoLR local ranks vs CoLR (Table 4)",
    "bits": "quantization bits vs float32",
}
VALUE_LABELS = {"rank": "ranks r", "ratio": "ranks r (ratio r/d)", "b_init": "ranks r", "scolr": "global ranks r",
                "bits": "bits"}


@dataclass(frozen=True)
class Run:
    label: str
    group: str
    cfg: RunConfig
    dashed: bool = False


def sweep(base: RunConfig, mode: str, values: tuple[int, ...], with_base: bool = True) -> tuple[list[Run], list[str]]:
    d = base.dim
    runs: list[Run] = []
    skipped: list[str] = []
    common = dict(encryption="none")

    def add(label, group, dashed=False, **changes):
        try:
            runs.append(Run(label, group, base.replace(**common, **changes), dashed))
        except ConfigError as e:
            skipped.append(f"{label}: {e}")

    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: allowed values are {', '.join(MODES)}")
    ranks = [v for v in values if mode == "bits" or v <= d]
    skipped += [f"r={v} > d={d}: a rank-r update of a d-dimensional embedding has r <= d" for v in values
                if mode != "bits" and v > d]
    if mode == "rank":
        for r in ranks:
            add(f"CoLR@{r} (d={d})", f"CoLR (d={d})", method="colr", rank=r)
        if with_base:
            for r in sorted(set(ranks) | {d}):
                add(f"FedMF d={r}", "FedMF (d = r)", True, method="fedmf", dim=r, rank=min(base.rank, r))
    elif mode == "ratio":
        for r in ranks:
            add(f"CoLR@{r}", "CoLR", method="colr", rank=r)
            add(f"SVD@{r}", "SVD", method="svd", rank=r, compress_down=True)
            add(f"TopK {r}/{d}", "Top-K", method="topk", topk_ratio=r / d, compress_down=True)
        if with_base:
            for r in ranks:
                add(f"FedMF d={r}", "FedMF (d = r)", True, method="fedmf", dim=r, rank=min(base.rank, r))
    elif mode == "b_init":
        for r in ranks:
            for b in B_INITS:
                add(f"CoLR@{r} B {b}", f"B {b}", method="colr", rank=r, b_init=b)
    elif mode == "scolr":
        for r in ranks:
            add(f"SCoLR 1-{r}", "SCoLR (r_u in 1..r)", method="scolr", rank=r, scolr_min_rank=1)
            add(f"CoLR@{r}", "CoLR@r", method="colr", rank=r)
    elif mode == "bits":
        r = min(base.rank, d)
        for b in values:
            add(f"CoLR@{r} {b}-bit", f"CoLR@{r} quantized", method="colr", rank=r, up_bits=b, down_bits=b)
        if with_base:
            add(f"CoLR@{r} float32", "float32", True, method="colr", rank=r, up_bits=0, down_bits=0)
    return runs, skipped

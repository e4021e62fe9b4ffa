"""STTFedRec's multi-party circular secret-sharing chain (section 3.3, step 4).

Two forms, both exact in fixed-point ring arithmetic (see secagg.FixedPoint):

mode="shares" (the paper's Eq. 10-12, the default). Each client c_k splits
its update into two additive shares, g_k = [g_k]_1 + [g_k]_2, with [g_k]_2
uniform in the ring. It sends [g_k]_2 to the next client c_(k+1) (the last one
to the first, closing the circle), and uploads the mixed value
    g_k* = [g_k]_1 + [g_(k-1)]_2
to the aggregation server, which sums the K mixed values: every [.]_2 share
appears exactly once, so sum_k g_k* = sum_k g_k. Each g_k* is uniform on its
own. All neighbour transfers happen in parallel, so a round costs 2 sequential
hops (neighbour transfer, upload) whatever K is: the paper's observation that
the client-side cost does not grow with K.

mode="relay" (a running-sum variant). The first client draws a uniform R and
sends R + g_1 to the second; every client adds its own update and passes the
running sum on; the last returns it to the first, which subtracts R and
uploads the exact sum. The server sees only the sum, but the round takes
K + 1 sequential hops, so latency grows linearly with K.

Dropouts. `dropouts` maps a client index to when it vanished:
  * "before": it never took part (unreachable from the start of the step);
  * "after":  it received what its predecessor sent, then vanished before
    sending on / uploading (its predecessor's share or the running sum is lost).
With on_dropout="raise" (default) any dropout raises ChainBrokenError naming
the broken link "c_i -> c_j". With on_dropout="reroute", a client that dropped
"before" is routed around (its predecessor sends to the next live client) and
the result is the exact sum over the live clients; a client that dropped
"after" still raises, because the value it held cannot be recovered and a
silently wrong sum is never returned.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from .secagg import FixedPoint, SecureAggregationError

CHAIN_MODES = ("shares", "relay")
DROP_STAGES = ("before", "after")


class ChainBrokenError(SecureAggregationError):
    """A link of the circular chain broke; `link` is (sender, receiver)."""

    def __init__(self, message: str, link: tuple[int, int]):
        super().__init__(message)
        self.link = link


@dataclass
class ChainReport:
    mode: str
    n_clients: int
    included: list[int]  # clients whose update is in the sum
    rerouted: list[tuple[int, int]]  # links that replaced a dropped client
    n_links: int  # client-to-client transfers
    link_bytes: list[int]  # measured bytes of each transfer
    upload_bytes: list[int]  # measured bytes of each upload to the server
    sequential_hops: int  # transfers that must happen one after another (latency)
    plaintext_bytes_per_client: int
    client_s: float  # mean per-client compute (share / add)
    server_s: float
    links: list[tuple[int, int]] = field(default_factory=list)
    uploads: list[np.ndarray] = field(default_factory=list, repr=False)  # what the server received (ring vectors)

    @property
    def bytes_per_link(self) -> int:
        return self.link_bytes[0] if self.link_bytes else 0


def _live_order(K: int, dropouts: Mapping[int, str], on_dropout: str) -> list[int]:
    for c, stage in dropouts.items():
        if not 0 <= c < K:
            raise ValueError(f"dropped client {c} is not in 0..{K - 1}")
        if stage not in DROP_STAGES:
            raise ValueError(f"dropout stage {stage!r} for client {c}: expected one of {DROP_STAGES}")
    order = list(range(K))
    for c in sorted(dropouts):
        pred = (c - 1) % K
        if dropouts[c] == "after" or on_dropout == "raise":
            when = "after receiving from its predecessor" if dropouts[c] == "after" else "before the step"
            raise ChainBrokenError(
                f"chain link c{pred} -> c{c} broke: client {c} dropped {when}"
                + ("; its value cannot be recovered" if dropouts[c] == "after" else "")
                + " (the aggregate would be wrong, so none is produced)",
                (pred, c),
            )
    live = [c for c in order if c not in dropouts]
    if len(live) < 2:
        raise ChainBrokenError(f"fewer than 2 live clients ({live}): no chain can be formed", (-1, -1))
    return live


def chain_aggregate(
    updates: np.ndarray,
    mode: str = "shares",
    dropouts: Mapping[int, str] | None = None,
    on_dropout: str = "raise",
    codec: FixedPoint = FixedPoint(),
    seed: int | None = None,
) -> tuple[np.ndarray, ChainReport]:
    """Sum the rows of `updates` (K, n) through the circular chain; returns (sum, report).

    The sum is exact in the ring: decode(sum of encodings), i.e. equal to
    sum_k round(g_k * 2**f) / 2**f. Divide by len(report.included) for the mean
    of Eq. (12).
    """
    if mode not in CHAIN_MODES:
        raise ValueError(f"chain mode {mode!r}: expected one of {CHAIN_MODES}")
    if on_dropout not in ("raise", "reroute"):
        raise ValueError(f"on_dropout={on_dropout!r}: expected 'raise' or 'reroute'")
    G = np.asarray(updates, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"updates must be (K, n), got shape {G.shape}")
    K, n = G.shape
    dropouts = dict(dropouts or {})
    live = _live_order(K, dropouts, on_dropout)
    L = len(live)
    rng = np.random.default_rng(seed)
    enc = {c: codec.encode(G[c], K) for c in live}
    rerouted = [(live[i], live[(i + 1) % L]) for i in range(L) if (live[i] + 1) % K != live[(i + 1) % L]]

    if mode == "shares":
        t0 = time.perf_counter()
        share2 = {c: codec.random(rng, n) for c in live}
        share1 = {c: codec.sub(enc[c], share2[c]) for c in live}
        links = [(live[i], live[(i + 1) % L]) for i in range(L)]
        link_bytes = [len(codec.wire_bytes(share2[s])) for s, _ in links]
        pred = {live[(i + 1) % L]: live[i] for i in range(L)}
        mixed = {c: codec.add(share1[c], share2[pred[c]]) for c in live}
        t_client = (time.perf_counter() - t0) / L
        upload = [len(codec.wire_bytes(mixed[c])) for c in live]
        t0 = time.perf_counter()
        total = None
        for c in live:
            total = mixed[c].copy() if total is None else codec.add(total, mixed[c])
        t_server = time.perf_counter() - t0
        hops = 2
        server_view = [mixed[c] for c in live]
    else:  # relay
        t0 = time.perf_counter()
        first = live[0]
        R = codec.random(rng, n)
        running = codec.add(R, enc[first])
        links, link_bytes = [], []
        for i in range(1, L):
            links.append((live[i - 1], live[i]))
            link_bytes.append(len(codec.wire_bytes(running)))
            running = codec.add(running, enc[live[i]])
        links.append((live[-1], first))
        link_bytes.append(len(codec.wire_bytes(running)))
        total = codec.sub(running, R)
        t_client = (time.perf_counter() - t0) / L
        upload = [len(codec.wire_bytes(total))]
        t_server = 0.0
        hops = L + 1
        server_view = [total]
    report = ChainReport(
        mode=mode,
        n_clients=K,
        included=live,
        rerouted=rerouted,
        n_links=len(links),
        link_bytes=link_bytes,
        upload_bytes=upload,
        sequential_hops=hops,
        plaintext_bytes_per_client=4 * n,
        client_s=t_client,
        server_s=t_server,
        links=links,
        uploads=server_view,
    )
    return codec.decode(total), report

"""The app's URL scheme: every view is a link that reproduces it.

A page's state is a `RunConfig` plus a few page options. In the query string

* a RunConfig field is written under its own name (`rank=8`, `up_bits=4`,
  `seed=3`, `bandwidth_tiers=[[0.5,1,1],[0.5,0.25,0.25]]`), and only when it
  differs from the page's base configuration (`PageSpec.base`), so the bare
  page URL is the page's default view;
* a page option starts with an underscore (`_y=ndcg`, `_mode=rank`,
  `_values=1,2,4,8`);
* `_hide=encryption,bits` is lesson mode: the named controls (a group name
  from `GROUPS` or a field name) are not shown, while their values still come
  from the link.

`parse()` never raises: a value that is unknown, malformed, out of the
widget's range or inconsistent with the rest is dropped (the base value is
used) and reported in `Parsed.warnings`; the page shows them with
`st.warning`. This module does not import Streamlit, so it is tested directly.

Hosted mode: a link sets only what its page can show. A RunConfig field with no
control on the page (`PageSpec.controls`) is ignored with a warning naming it,
unless the page lists it in its allow-list (`PageSpec.link_only`, each entry with
the reason), so a link cannot reach the config's whole valid range (a thousand
negatives per positive, 200 local epochs) through fields the page never shows.
A value longer than `MAX_VALUE_CHARS`, or a list nested deeper than its field
allows, is refused before it is parsed.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, Callable, Mapping

from ..config import (ATTACKS, B_INITS, CLIENT_SCHEDULES, DATASETS, DEFENSES, ENCRYPTIONS, FIELD_NAMES, METHODS,
                      PERSONALIZATIONS, SERVER_OPTIMIZERS, STRAGGLER_POLICIES, SYNTHETIC_SIZES, ConfigError,
                      RunConfig, coerce_field, from_dict)

# Query parameters Streamlit itself uses; never reported as unknown.
STREAMLIT_PARAMS = ("embed", "embed_options")
# The longest link value read (a custom bandwidth-tier list of 20 tiers is about 400 characters; `_hide` naming every
# control about 800): longer ones are refused unread.
MAX_VALUE_CHARS = 1000
# How deep a list field nests: bandwidth_tiers is a list of lists, ckks_coeff_bits a flat list.
_TUPLE_DEPTH = {"bandwidth_tiers": 2, "ckks_coeff_bits": 1}

# Bandwidth heterogeneity presets: (share of clients, downlink factor, uplink factor) per tier.
TIER_PRESETS: dict[str, tuple] = {
    "uniform": (),
    "two tiers: half the clients at 1/4 bandwidth": ((0.5, 1.0, 1.0), (0.5, 0.25, 0.25)),
    "three tiers: 20% fast (4x), 50% base, 30% slow (1/5)": ((0.2, 4.0, 4.0), (0.5, 1.0, 1.0), (0.3, 0.2, 0.2)),
    "straggler: 10% of the clients at 1/20 bandwidth": ((0.9, 1.0, 1.0), (0.1, 0.05, 0.05)),
}
CUSTOM_TIERS = "custom (from the link)"

TOPK_RATIOS = (1 / 256, 1 / 128, 1 / 64, 2 / 64, 4 / 64, 8 / 64, 16 / 64, 32 / 64, 1.0)
DIMS = (2, 4, 8, 16, 32, 64, 128, 256)


def ratio_label(x: float) -> str:
    f = Fraction(x).limit_denominator(4096)
    return "1" if f == 1 else f"{f.numerator}/{f.denominator}"


@dataclass(frozen=True)
class Control:
    """One sidebar widget bound to one RunConfig field."""

    field: str
    label: str
    kind: str  # select | select_slider | slider | number | toggle | tiers | chain
    group: str  # lesson-mode name (`_hide=<group>`)
    options: tuple = ()
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    help: str = ""
    show_if: tuple = ()  # (other_field, allowed values): shown only then (its value is kept either way)
    hidden_value: Any = None  # the value that applies while show_if hides the control (None: the kept one)

    def check(self, value) -> str | None:
        """None if the widget can show `value`, else why not."""
        if self.kind in ("select", "select_slider"):
            if not any(_same(value, o) for o in self.options):
                shown = ", ".join(ratio_label(o) if isinstance(o, float) else str(o) for o in self.options)
                return f"the control offers {shown}"
        elif self.kind in ("slider", "number"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not self.lo <= value <= self.hi:
                return f"the control's range is {self.lo:g}..{self.hi:g}"
        return None

    def visible(self, values: Mapping[str, Any]) -> bool:
        return not self.show_if or values.get(self.show_if[0]) in self.show_if[1]


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


@dataclass(frozen=True)
class Option:
    """A page option (not a RunConfig field), written as `_name=value`."""

    name: str  # without the underscore
    default: Any
    choices: tuple = ()  # allowed values (strings); empty = any value `parse_value` accepts
    kind: str = "str"  # str | int_list | bool | int
    lo: int | None = None
    hi: int | None = None
    max_len: int = 12

    def parse_value(self, raw: str):
        if self.kind == "bool":
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if self.kind == "int":
            v = int(raw)
            if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
                raise ValueError(f"allowed range is {self.lo}..{self.hi}")
            return v
        if self.kind == "int_list":
            vals = tuple(sorted({int(x) for x in raw.split(",") if x.strip()}))
            if not vals:
                raise ValueError("expected a comma-separated list of integers")
            if len(vals) > self.max_len:
                raise ValueError(f"at most {self.max_len} values")
            if any((self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi) for v in vals):
                raise ValueError(f"each value must lie in {self.lo}..{self.hi}")
            return vals
        if self.choices and raw not in self.choices:
            raise ValueError("allowed values are " + ", ".join(self.choices))
        return raw

    def format(self, value) -> str:
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind == "int_list":
            return ",".join(str(v) for v in value)
        return str(value)


@dataclass(frozen=True)
class PageSpec:
    name: str
    base: RunConfig
    controls: tuple[Control, ...]
    options: tuple[Option, ...] = ()
    # The allow-list: fields a link may set although the page has no control for them, each with the reason.
    link_only: tuple[tuple[str, str], ...] = ()
    # Fields the page sets from its controls' values (Paillier needs weighted aggregation): values -> {field: value}.
    derive: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def accepts(self, name: str) -> bool:
        """May a link set the config field `name` on this page?"""
        return self.control(name) is not None or any(f == name for f, _ in self.link_only)

    def derived(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return self.derive(values) if self.derive else {}

    def control(self, name: str) -> Control | None:
        return next((c for c in self.controls if c.field == name), None)

    @property
    def groups(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for c in self.controls:
            out.setdefault(c.group, []).append(c.field)
        return {g: tuple(v) for g, v in out.items()}

    def option_defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}


@dataclass
class Parsed:
    cfg: RunConfig
    options: dict[str, Any]
    hide: frozenset[str]  # field names whose controls are hidden
    hide_names: tuple[str, ...]  # as written in the link (groups or fields), for re-encoding
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the pages' controls

def _explorer_controls() -> tuple[Control, ...]:
    lowrank = ("colr", "scolr", "svd")
    return (
        Control("dataset", "dataset", "select", "dataset", DATASETS,
                help="synthetic needs no download; ML-1M / ML-100K / Pinterest are read from $LABCORE_DATA or ./data"),
        Control("synthetic_size", "synthetic size", "select", "dataset", SYNTHETIC_SIZES,
                help="tiny 50x40, small 600 users x 400 items, medium 2000x1500, ml1m: the ML-1M shape",
                show_if=("dataset", ("synthetic",))),
        Control("method", "method", "select", "method", METHODS,
                help="FedMF sends the full item-table update; CoLR a rank-r factor; SCoLR a random subset of "
                     "r_u <= r columns per client; SVD / Top-K compress a full update"),
        Control("dim", "embedding size d", "select_slider", "dim", DIMS),
        Control("rank", "rank r", "slider", "rank", (), 1, 64, 1,
                help="CoLR / SVD rank; SCoLR's global rank r_g", show_if=("method", lowrank)),
        Control("scolr_min_rank", "rank tiers: smallest local rank r_u", "slider", "heterogeneity", (), 1, 64, 1,
                help="SCoLR: each client draws its local rank r_u uniformly in [this, r] every round",
                show_if=("method", ("scolr",))),
        Control("topk_ratio", "compression ratio (Top-K keeps)", "select_slider", "ratio", TOPK_RATIOS,
                help="fraction of the update's N x d values each Top-K message keeps", show_if=("method", ("topk",))),
        Control("up_bits", "uplink bits (0 = float32)", "slider", "bits", (), 0, 16, 1,
                help="stochastic quantization of the upload: bits per value (+ 1 sign bit), float32 scale per bucket"),
        Control("down_bits", "downlink bits (0 = float32)", "slider", "bits", (), 0, 16, 1),
        Control("up_link_budget", "uplink channel budget log2 K (0 = no limit)", "slider", "channel", (), 0, 16, 1,
                help="the wireless channel (the wireless topic's Eq. 6): up to K levels arrive exactly, more "
                     "levels arrive with noise N(0, 1/(4K^2)); spending bits beyond the budget hurts"),
        Control("down_link_budget", "downlink channel budget log2 K (0 = no limit)", "slider", "channel", (), 0, 16,
                1),
        Control("bw_up", "uplink bandwidth (MB/s)", "number", "bandwidth", (), 0.01, 1000.0, 0.05,
                help="per client; MB = 2**20 bytes, as in CoLR's Table 2"),
        Control("bw_down", "downlink bandwidth (MB/s)", "number", "bandwidth", (), 0.01, 1000.0, 0.05),
        Control("bandwidth_tiers", "bandwidth tiers", "tiers", "heterogeneity",
                help="heterogeneous links: each device gets a tier; the slowest client of a round sets its time"),
        Control("data_skew", "data skew", "slider", "heterogeneity", (), 0.0, 2.0, 0.1,
                help="how unequal the clients' data sizes are (log-normal sigma of the interactions per user): "
                     "0 = every client holds about as much data, larger = a few heavy clients hold most of it",
                show_if=("dataset", ("synthetic",)), hidden_value=1.0),
        Control("stragglers", "stragglers (share of each round)", "slider", "heterogeneity", (), 0.0, 1.0, 0.1,
                help="this share of every round's clients takes a uniform 1..K-1 of its K local steps (FedProx's "
                     "systems heterogeneity)"),
        Control("straggler_policy", "stragglers' work", "select", "heterogeneity", STRAGGLER_POLICIES,
                help="auto: plain FedAvg drops the stragglers (they neither train nor send), FedProx, SCAFFOLD and "
                     "q-FFL keep their partial work; drop / keep force one"),
        Control("dropout", "dropout (chance a sampled client leaves)", "slider", "heterogeneity", (), 0.0, 0.9,
                0.05, help="each sampled client receives the model, then leaves before it uploads with this "
                           "probability: the server averages the survivors (under secagg it removes the dropped "
                           "clients' masks, or stops the run when too few are left)"),
        Control("encryption", "encryption", "select", "encryption", ENCRYPTIONS,
                help="ckks / secagg protect FedMF, CoLR and SCoLR uploads; paillier the values of Top-K"),
        Control("he_real_every", "CKKS: encrypt for real every k rounds", "slider", "encryption", (), 1, 100, 1,
                help="round 0 and every k-th round encrypt, add and decrypt real CKKS ciphertexts; the rounds between "
                     "sum in plaintext and take their bytes and times from the last real round's per-ciphertext "
                     "figures (1 = every round, as the CLI does)",
                show_if=("encryption", ("ckks",))),
        Control("secagg_threshold", "secagg threshold (share that must upload)", "slider", "encryption", (), 0.05,
                1.0, 0.05, help="secure aggregation unmasks the sum only when more than this share of the sampled "
                                "clients uploaded (0.5 = a strict majority); below it the run stops with an error",
                show_if=("encryption", ("secagg",))),
        Control("attack", "backdoor attack", "select", "attack", ATTACKS,
                help="replacement: colluding users push one item (the least popular) into everyone's top 10 by "
                     "boosting their update of its row (model replacement); dba: the same goal cut into blocks, "
                     "each group of attackers sending one (distributed backdoor); FedMF only",
                show_if=("method", ("fedmf",)), hidden_value="none"),
        Control("attacker_share", "attackers (share of the users)", "slider", "attack", (), 0.0, 0.5, 0.01,
                show_if=("attack", ("replacement", "dba")), hidden_value=0.0),
        Control("dba_parts", "DBA groups (blocks of the target row)", "slider", "attack", (), 2, 16, 1,
                show_if=("attack", ("dba",))),
        Control("defense", "robust aggregation", "select", "attack", DEFENSES,
                help="clip: every update scaled to norm <= clip norm (+ Gaussian noise); median / trimmed: per item, "
                     "over the clients that trained it; krum: average the clients whose whole updates sit closest to "
                     "the others' (multi-Krum); FedMF only, not under encryption",
                show_if=("method", ("fedmf",)), hidden_value="none"),
        Control("clip_norm", "clip norm", "number", "attack", (), 0.01, 1000.0, 1.0,
                help="an honest FedMF update's norm is about 5 to 20 on MovieLens-1M", show_if=("defense", ("clip",))),
        Control("dp_noise", "noise multiplier (std = x clip norm / clients)", "number", "attack", (), 0.0, 10.0,
                0.01, show_if=("defense", ("clip",))),
        Control("trim_frac", "trimmed share at each end", "slider", "attack", (), 0.0, 0.45, 0.05,
                show_if=("defense", ("trimmed",))),
        Control("krum_f", "Krum: attackers tolerated a round", "slider", "attack", (), 0, 50, 1,
                help="the clients_per_round - f updates of lowest Krum score are averaged; needs clients_per_round "
                     "> 2 f + 2", show_if=("defense", ("krum",))),
        Control("personalization", "personal models", "select", "algorithm", PERSONALIZATIONS,
                help="ditto: every user also trains its own item table and user vector, pulled toward the global "
                     "table; apfl: its own table, used mixed with the global one; pfedme: a personal model theta "
                     "that the sent update is pulled toward; perfedavg: a meta-learned global model, personalized by "
                     "one local step (HR@10 of the personal models: the 'personal' metric); FedMF; Ditto, APFL "
                     "and pFedMe need every user's table in memory (ML-100K, synthetic)",
                show_if=("method", ("fedmf",)), hidden_value="none"),
        Control("ditto_lambda", "Ditto lambda", "number", "algorithm", (), 0.0, 10.0, 0.01,
                help="the pull toward the global table: 0 = local training alone, large = the global model",
                show_if=("personalization", ("ditto",))),
        Control("apfl_alpha", "APFL alpha (personal share of the mix)", "slider", "algorithm", (), 0.0, 1.0, 0.05,
                help="the personal model is alpha x own table + (1 - alpha) x global table: 0 = the global model, "
                     "1 = local training alone", show_if=("personalization", ("apfl",))),
        Control("pfedme_lambda", "pFedMe lambda", "number", "algorithm", (), 0.0, 10.0, 0.1,
                help="the pull between the personal model and the local model it drags along (lr x lambda < 1)",
                show_if=("personalization", ("pfedme",))),
        Control("pfedme_steps", "pFedMe personal steps per batch (K)", "slider", "algorithm", (), 1, 20, 1,
                show_if=("personalization", ("pfedme",))),
        Control("perfedavg_alpha", "Per-FedAvg inner step (alpha)", "number", "algorithm", (), 0.001, 10.0, 0.05,
                help="the step of the personalization (one local step from the global model); lr is the outer step",
                show_if=("personalization", ("perfedavg",))),
        Control("prox_mu", "FedProx mu (0 = FedAvg)", "number", "algorithm", (), 0.0, 10.0, 0.01,
                help="every local step pulls the client's item-table update toward the round's global table by "
                     "lr x mu of itself (FedProx's proximal term); user vectors stay private and unregularized"),
        Control("scaffold", "SCAFFOLD control variates", "toggle", "algorithm",
                help="every local step is corrected by c - c_i (the server's and the client's control variates): "
                     "less client drift, twice the bytes each way. FedMF with weighted aggregation only",
                show_if=("method", ("fedmf",)), hidden_value=False),
        Control("qffl_q", "q-FFL q (0 = FedAvg)", "number", "algorithm", (), 0.0, 20.0, 0.001,
                help="q-FedAvg: clients with a higher loss before training weigh more in the average; FedMF with "
                     "weighted aggregation only", show_if=("method", ("fedmf",)), hidden_value=0.0),
        Control("server_optimizer", "server optimizer", "select", "algorithm", SERVER_OPTIMIZERS,
                help="fedavg adds the mean update; fedavgm / fedadam / fedyogi keep momentum or moments on the "
                     "server, so every client receives the server's dense step: CoLR's downlink grows d / r times"),
        Control("server_lr", "server step size", "number", "algorithm", (), 0.0001, 10.0, 0.01,
                help="eta: with fedavg, 1 applies the mean update as it is; fedadam / fedyogi need about 0.01"),
        Control("server_momentum", "server momentum (FedAvgM)", "slider", "algorithm", (), 0.0, 0.99, 0.01,
                show_if=("server_optimizer", ("fedavgm",))),
        Control("clients_per_round", "clients per round", "slider", "clients", (), 1, 500, 1),
        Control("rounds", "rounds", "slider", "rounds", (), 1, 1000, 1),
        Control("seed", "seed", "number", "seed", (), 0, 2**31 - 1, 1,
                help="every round draws its randomness from (seed, round): same seed, same numbers"),
        Control("local_epochs", "local epochs", "slider", "advanced", (), 1, 10, 1),
        Control("lr", "learning rate", "number", "advanced", (), 0.001, 100.0, 0.05),
        Control("eval_every", "evaluate every (rounds)", "slider", "advanced", (), 1, 100, 1),
        Control("rank_every", "effective rank every (rounds, 0 = never)", "slider", "advanced", (), 0, 100, 1),
        Control("b_init", "CoLR B distribution", "select", "advanced", B_INITS,
                show_if=("method", ("colr", "scolr"))),
        Control("b_as_seed", "send B as a seed", "toggle", "advanced", show_if=("method", ("colr", "scolr"))),
        Control("compress_down", "compress the downlink too", "toggle", "advanced", show_if=("method", ("svd", "topk"))),
        Control("aggregation", "aggregation", "select", "advanced", ("item_mean", "weighted")),
        Control("client_schedule", "client schedule", "select", "advanced", CLIENT_SCHEDULES,
                help="uniform: each round draws its clients at random; rotating: the users are shuffled once and "
                     "take turns, so every user trains once per pass (the CoLR authors' code; see the "
                     "colr-schedule-ml1m card)"),
        Control("data_seed", "data seed", "number", "advanced", (), 0, 2**31 - 1, 1),
    )


# Defaults of the live lab: the core's defaults (CoLR@4, d=64, 60 clients) with 100 rounds, evaluated and
# rank-measured every 10 rounds: ten points a curve, and the evaluations no longer the larger part of a run (every 5
# rounds they were half of it and doubled the wait for a redraw). The synthetic catalogue is the
# medium one (1,500 items): on the small one (400) a FedMF upload is 100 KB and communication 5 % of the round, so
# the trade-off the page is about does not show; on 1,500 it is 375 KB and 16 % (CoLR@4: 1.2 %). Under CKKS every
# tenth round encrypts for real: every round, FedMF's 96,000 values took two clients 0.4 s of encryption a round and
# the run 70 s; the other rounds' bytes and times are scaled from the real ones (labelled on the page).
EXPLORER_BASE = RunConfig(rounds=100, eval_every=10, rank_every=10, synthetic_size="medium", he_real_every=10)
# The Compare's view: the medium catalogue and 100 rounds, where CoLR@r beats FedMF with d = r at equal bytes for
# every r (seeds 0-2), as in the paper; at the small catalogue's 40 rounds FedMF d=8 came out ahead of CoLR@8.
COMPARE_BASE = RunConfig(rounds=100, eval_every=10, rank_every=0, dim=32, synthetic_size="medium")
ENCRYPTION_BASE = RunConfig(rounds=1, eval_every=10**6, rank_every=0, clients_per_round=20, encryption="ckks")

Y_METRICS = ("hr", "ndcg", "loss")
EXPLORER_Y = Y_METRICS + ("hr_personal", "backdoor_success")  # only in runs with Ditto / an attack

EXPLORER = PageSpec("explorer", EXPLORER_BASE, _explorer_controls(),
                    (Option("y", "hr", EXPLORER_Y),))

COMPARE_MODES = ("rank", "ratio", "b_init", "scolr", "bits")
_CMP_KEEP = ("dataset", "synthetic_size", "dim", "bits", "bandwidth", "heterogeneity", "clients", "rounds", "seed",
             "advanced")
_CMP_DROP = ("b_init", "b_as_seed", "compress_down", "data_skew")  # Explorer-only controls
COMPARE = PageSpec(
    "compare", COMPARE_BASE,
    tuple(c for c in _explorer_controls() if c.group in _CMP_KEEP and c.field not in _CMP_DROP),
    (Option("mode", "rank", COMPARE_MODES), Option("values", (2, 4, 8), kind="int_list", lo=1, hi=64, max_len=8),
     Option("base", True, kind="bool"), Option("y", "hr", Y_METRICS)),
)

CKKS_CHAINS = ((), (60, 40, 40, 60), (60, 40, 60), (60, 50, 60), (60, 30, 30, 30, 60), (60, 40, 40, 40, 40, 60))


def _encryption_controls() -> tuple[Control, ...]:
    keep = {"dataset", "synthetic_size", "dim", "clients_per_round", "seed"}
    base = tuple(c for c in _explorer_controls() if c.field in keep)
    return base + (
        Control("method", "what is encrypted", "select", "method", ("fedmf", "colr", "scolr", "topk"),
                help="FedMF: the N x d update; CoLR: the N x r factor A_u; Top-K: k values (Paillier)"),
        Control("rank", "rank r", "slider", "rank", (), 1, 64, 1, show_if=("method", ("colr", "scolr"))),
        Control("topk_ratio", "compression ratio (Top-K keeps)", "select_slider", "ratio", TOPK_RATIOS,
                show_if=("method", ("topk",))),
        Control("encryption", "protection (attack demo)", "select", "encryption", ENCRYPTIONS),
        Control("ckks_degree", "CKKS poly modulus degree N", "select", "ckks", (8192, 16384, 32768),
                help="N/2 values per ciphertext; larger N: more values per ciphertext, larger and slower ciphertexts"),
        Control("ckks_coeff_bits", "coefficient modulus primes (bits)", "chain", "ckks", CKKS_CHAINS,
                help="() = (60, scale, 60). The total must stay under SEAL's 128-bit-security bound for N"),
        Control("ckks_scale_bits", "scale bits", "slider", "ckks", (), 20, 60, 1,
                help="precision: values are encoded as round(x * 2**scale)"),
    )


def _encryption_derived(values: Mapping[str, Any]) -> dict[str, Any]:
    """Paillier (Top-K) needs weighted aggregation and an uncompressed downlink (`config.privacy`);
    the other protections keep the page's base values. The page has no control for either field."""
    if values.get("encryption") == "paillier":
        return {"aggregation": "weighted", "compress_down": False}
    return {"aggregation": ENCRYPTION_BASE.aggregation, "compress_down": ENCRYPTION_BASE.compress_down}


ENCRYPTION = PageSpec("encryption", ENCRYPTION_BASE, _encryption_controls(),
                      (Option("attack_rounds", 1, kind="int", lo=1, hi=5),),
                      link_only=(("client_schedule", "the CoLR presets' client schedule (the authors' rotating "
                                                     "order): it picks which clients a round attacks, not how "
                                                     "many"),
                                 ("aggregation", "follows the protection (weighted under paillier)"),
                                 ("compress_down", "follows the protection (off under paillier)")),
                      derive=_encryption_derived)

FIGURES = PageSpec("figures", EXPLORER_BASE, (), (Option("card", ""), Option("size", "stored", ("stored", "smoke"))))

PAGES = {p.name: p for p in (EXPLORER, COMPARE, ENCRYPTION, FIGURES)}
_ALL_OPTIONS = frozenset(o.name for p in PAGES.values() for o in p.options)


# --------------------------------------------------------------------------- parse / encode

def _error_field(msg: str) -> str:
    return msg.split("=", 1)[0].strip() if "=" in msg else ""


def parse(query: Mapping[str, str], spec: PageSpec) -> Parsed:
    """Query parameters -> (RunConfig, page options, hidden controls, warnings). Never raises."""
    warnings: list[str] = []
    accepted: dict[str, Any] = {}
    options = spec.option_defaults()
    hide_names: list[str] = []
    valid_options = {o.name: o for o in spec.options}
    typed = _typed_link_fields(query, spec)  # the link's fields this page takes, as values (context for checks)
    for key, raw in query.items():
        raw = str(raw)
        if key in STREAMLIT_PARAMS:
            continue
        if len(raw) > MAX_VALUE_CHARS:
            warnings.append(f"{key}: its value is {len(raw):,} characters long (a link value is read up to "
                            f"{MAX_VALUE_CHARS:,}); ignored")
            continue
        if key == "_hide":
            groups = spec.groups
            for name in (n.strip() for n in raw.split(",")):
                if not name:
                    continue
                if name in groups or spec.control(name) is not None:
                    hide_names.append(name)
                else:
                    warnings.append(f"_hide: '{name}' is not a control of this page (ignored); use one of "
                                    + ", ".join(sorted(set(groups) | {c.field for c in spec.controls})))
            continue
        if key.startswith("_"):
            opt = valid_options.get(key[1:])
            if opt is None:
                if key[1:] not in _ALL_OPTIONS:  # another page's option (a link that switched pages): silent
                    warnings.append(f"unknown link parameter '{key}' ignored")
                continue
            try:
                options[opt.name] = opt.parse_value(raw)
            except ValueError as e:
                warnings.append(f"{key}={raw!r} is invalid ({e}); using {opt.format(opt.default)!r}")
            continue
        if key not in FIELD_NAMES:
            warnings.append(f"unknown link parameter '{key}' ignored (it may come from an older version of the lab)")
            continue
        if not spec.accepts(key):
            warnings.append(f"{key}={_short(raw)} ignored: this page has no control for {key}, so a link cannot set "
                            f"it; using {key}={_show(getattr(spec.base, key))}")
            continue
        try:
            value = _field_from_link(spec.base, key, raw, typed)
        except (ConfigError, TypeError, ValueError, RecursionError) as e:
            text = str(e) if not isinstance(e, RecursionError) else f"{key}={_short(raw)} is nested too deeply"
            warnings.append(f"{text}; using {key}={_show(getattr(spec.base, key))}")
            continue
        ctrl = spec.control(key)
        why = ctrl.check(value) if ctrl is not None else None
        if why:
            warnings.append(f"{key}={raw!r} cannot be shown ({why}); using {key}={_show(getattr(spec.base, key))}")
            continue
        accepted[key] = value
    cfg = spec.base
    while True:
        derived = spec.derived({**spec.base.to_dict(), **accepted})
        for name, value in derived.items():  # a link's value for a derived field must agree with the page's
            if name in accepted and not _same(accepted[name], value):
                warnings.append(f"{name}={_show(accepted[name])} ignored: on this page {name} follows the other "
                                f"settings; using {name}={_show(value)}")
                del accepted[name]
        try:
            cfg = from_dict({**spec.base.to_dict(), **accepted, **derived})
            break
        except ConfigError as e:
            bad = _error_field(str(e))
            if bad not in accepted:  # a default that the link's other values contradict: drop the last of them
                if not accepted:
                    cfg = spec.base
                    break
                bad = next(reversed(accepted))
            del accepted[bad]
            warnings.append(f"{e}; using {bad}={_show(getattr(spec.base, bad))}")
    hidden: set[str] = set()
    groups = spec.groups
    for name in hide_names:
        hidden.update(groups.get(name, (name,)))
    return Parsed(cfg, options, frozenset(hidden), tuple(dict.fromkeys(hide_names)), warnings)


def _short(raw: str, most: int = 40) -> str:
    return repr(raw if len(raw) <= most else raw[:most] + "...")


def _nesting(raw: str) -> int:
    """How deep the brackets of `raw` nest (counted, not parsed: a parser recurses on each level)."""
    depth = deepest = 0
    for ch in raw:
        if ch == "[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == "]":
            depth -= 1
    return deepest


def _coerce(key: str, raw: str):
    most = _TUPLE_DEPTH.get(key)
    if most is not None and _nesting(raw) > most:
        raise ConfigError(f"{key}={_short(raw)} is invalid: lists nest at most {most} deep in {key} "
                          + ("([[share, down, up], ...])" if most == 2 else "([60, 40, 60])"))
    return coerce_field(key, raw)


def _typed_link_fields(query: Mapping[str, str], spec: PageSpec) -> dict[str, Any]:
    out = {}
    for key, raw in query.items():
        raw = str(raw)
        if key in FIELD_NAMES and spec.accepts(key) and len(raw) <= MAX_VALUE_CHARS:
            try:
                out[key] = _coerce(key, raw)
            except (ConfigError, TypeError, ValueError, RecursionError):
                pass
    return out


def _field_from_link(base: RunConfig, key: str, raw: str, link: Mapping[str, Any] = {}):
    """The typed value of one field from the link, checked on its own.

    A value that is only invalid together with the base's other fields (d=2 with the base rank 4, paillier with
    the base's CoLR) passes here when the link's other values make it valid or the error names another field;
    `parse` settles such conflicts on the whole configuration.
    """
    value = _coerce(key, raw)
    try:
        return getattr(base.replace(**{key: value}), key)
    except ConfigError as e:
        if _error_field(str(e)) != key:
            return value
        others = {k: v for k, v in link.items() if k != key}
        if not others:
            raise
        try:
            base.replace(**{**others, key: value})
        except ConfigError as e2:
            if _error_field(str(e2)) == key:
                raise e from None
        return value


def _show(v) -> str:
    return json.dumps(v) if isinstance(v, tuple) else str(v)


def value_to_str(v) -> str:
    if isinstance(v, tuple):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def encode(cfg: RunConfig, spec: PageSpec, options: Mapping[str, Any] | None = None,
           hide_names: tuple[str, ...] = ()) -> dict[str, str]:
    """The query parameters of a view: config fields that differ from the page's base, then options."""
    out: dict[str, str] = {}
    for f in fields(RunConfig):
        v, b = getattr(cfg, f.name), getattr(spec.base, f.name)
        differs = (v != b) if isinstance(v, tuple) else not _same(v, b)
        if differs:
            out[f.name] = value_to_str(v)
    defaults = spec.option_defaults()
    for o in spec.options:
        if options and o.name in options and options[o.name] != defaults[o.name]:
            out["_" + o.name] = o.format(options[o.name])
    if hide_names:
        out["_hide"] = ",".join(hide_names)
    return out


def link(cfg: RunConfig, page: str = "explorer", **options) -> str:
    """The app path of a view, e.g. link(RunConfig(method="fedmf")) -> 'explorer?method=fedmf&rounds=200...'."""
    from urllib.parse import urlencode

    spec = PAGES[page]
    q = encode(cfg, spec, options)
    return page + ("?" + urlencode(q) if q else "")


def tiers_name(tiers: tuple) -> str:
    for name, t in TIER_PRESETS.items():
        if t == tiers:
            return name
    return CUSTOM_TIERS


def chain_label(chain: tuple) -> str:
    return "(60, scale, 60)" if not chain else "(" + ", ".join(str(b) for b in chain) + ")"

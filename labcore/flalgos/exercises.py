"""The notebook's base config and exercise checks (labs/08_fl_algorithms.ipynb).

Every check computes its expected answer with the topic's own code (a short run, the payload ledger); called
with `...` it says what to fill in.
"""
from __future__ import annotations

from ..labs_support import Feedback, close, missing, paper_size, todo
from .config import FLConfig, from_dict

# Smoke size: digits over 20 clients, 10 a round, 10 local steps; a run takes a second or two on one core.
LAB_BASE = dict(task="digits", n_clients=20, clients_per_round=10, local_steps=10, batch_size=10, lr=0.05, rounds=20,
                eval_every=2, dirichlet_alpha=0.3)
PAPER_BASE = dict(task="digits", n_clients=30, clients_per_round=10, local_steps=20, batch_size=10, lr=0.05,
                  rounds=150, eval_every=5, dirichlet_alpha=0.1)
QUADRATIC_BASE = dict(task="quadratic", n_clients=10, clients_per_round=10, local_steps=10, lr=0.1,
                      weighting="uniform", rounds=60, eval_every=2)


def lab_config(paper: bool | None = None, **overrides) -> FLConfig:
    """The notebook's base run with `overrides` (paper size when LABCORE_PAPER_SIZE=1)."""
    base = PAPER_BASE if (paper if paper is not None else paper_size()) else LAB_BASE
    return from_dict({**base, **overrides})


def quadratic_config(**overrides) -> FLConfig:
    return from_dict({**QUADRATIC_BASE, **overrides})


def check_fedavg_floor(answer, cfg: FLConfig | None = None) -> Feedback:
    """FedAvg's distance to x* after its last round on the quadratics (it stops improving: a floor)."""
    if missing(answer):
        return todo("a number: FedAvg's final distance to the optimum (read it off the table or the plot)")
    from .simulation import run

    cfg = cfg or quadratic_config(algorithm="fedavg")
    d = float(run(cfg).history["distance"].iloc[-1])
    ok = close(answer, d, rel=0.05)
    return Feedback(ok, f"{d:.3g}: with K = {cfg.local_steps} local steps every client drifts toward its own "
                        "optimum, and averaging those drifted models does not land on x*" if ok else
                    f"{answer} is not it: read the last value of the FedAvg run's `distance` column")


def check_scaffold_uplink_factor(answer, cfg: FLConfig | None = None) -> Feedback:
    """How many times FedAvg's measured uplink bytes does SCAFFOLD send in one round?"""
    if missing(answer):
        return todo("a number: SCAFFOLD's uplink bytes / FedAvg's uplink bytes")
    from .simulation import run

    cfg = (cfg or lab_config()).replace(rounds=1, eval_every=1)
    up = {}
    for a in ("fedavg", "scaffold"):
        led = run(cfg.replace(algorithm=a)).ledger
        up[a] = int(led[led.direction == "up"]["bytes"].sum())
    ratio = up["scaffold"] / up["fedavg"]
    ok = close(answer, ratio, abs_=0.02)
    return Feedback(ok, f"{ratio:.3f}: each client sends its model change AND its control-variate change, "
                        f"{up['scaffold']:,} against {up['fedavg']:,} bytes" if ok else
                    f"{answer} is not it: what does a SCAFFOLD client send besides Delta y?")


def check_mu_zero(answer) -> Feedback:
    """The largest absolute difference between FedProx(mu=0) and FedAvg's global models after a run."""
    if missing(answer):
        return todo("a number: max |w_FedProx - w_FedAvg| after the same run with mu = 0")
    from .simulation import Simulation

    cfg = lab_config(rounds=3, straggler_policy="keep")
    a, b = (Simulation(cfg.replace(algorithm=x, mu=0.0)) for x in ("fedavg", "fedprox"))
    for s in (a, b):
        s.run()
    diff = float((a.strategy.w - b.strategy.w).abs().max())
    ok = close(answer, diff, abs_=0.0)
    return Feedback(ok, f"{diff:g}: the proximal term mu (w - w^t) adds exactly zero, so every step is the same "
                        "floating-point operation" if ok else
                    f"{answer} is not it: with mu = 0 what does the proximal term add to each gradient?")


def check_more_heterogeneous(answer, alphas=(0.1, 10.0)) -> Feedback:
    """Which Dirichlet alpha gives FedAvg the larger client drift (mean ||Delta_i - mean Delta||)?"""
    if missing(answer):
        return todo(f"one of {alphas}")
    from .simulation import run

    drift = {a: float(run(lab_config(dirichlet_alpha=a, rounds=5)).history["drift"].iloc[-1]) for a in alphas}
    best = max(drift, key=drift.get)
    ok = close(answer, best, abs_=1e-9)
    return Feedback(ok, f"alpha = {best:g}: drift {drift[best]:.3f} against {min(drift.values()):.3f}; small alpha "
                        "gives each client few classes, so local models pull apart" if ok else
                    f"{answer} is not it: small alpha means each client holds only a few of the classes")


# The lab's engine (CoLR's recommendation engine) at smoke size: the small synthetic set, a few rounds.
ENGINE_BASE = dict(dataset="synthetic", synthetic_size="small", method="colr", dim=64, rank=4, rounds=3,
                   clients_per_round=20, local_epochs=1, batch_size=64, eval_every=3, rank_every=0)


def engine_config(**overrides):
    """A run of the lab's engine (`labcore.RunConfig`) for the notebook's last section."""
    from ..config import from_dict as engine_from_dict

    return engine_from_dict({**ENGINE_BASE, **overrides})


def check_server_step_downlink(answer, server_optimizer: str = "fedadam") -> Feedback:
    """How many times CoLR's downlink bytes per client does a round cost with a stateful server optimizer?"""
    if missing(answer):
        return todo("a number: CoLR@4's downlink bytes per client with FedAdam / with FedAvg")
    from ..fed.engine import run

    down = {o: float(run(engine_config(server_optimizer=o, server_lr=0.01), progress=False)
                     .table["bytes_down_client"].iloc[-1]) for o in ("fedavg", server_optimizer)}
    ratio = down[server_optimizer] / down["fedavg"]
    ok = close(answer, ratio, abs_=0.5)
    return Feedback(ok, f"{ratio:.2f}: the optimizer's moments stay on the server, so every client receives its "
                        f"dense step (items x d = 64 values an item) instead of CoLR's A (items x r = 4)" if ok else
                    f"{answer} is not it: compare the `bytes_down_client` columns of the two runs")


def scaffold_pair(rounds: int = 1):
    """FedAvg and SCAFFOLD (both with the FedAvg weights, FedMF) on the notebook's small engine run: their item
    tables after `rounds` rounds."""
    from ..fed.engine import Simulation, load_data

    out = {}
    for name, kw in (("fedavg", {}), ("scaffold", {"scaffold": True})):
        cfg = engine_config(method="fedmf", aggregation="weighted", **kw)
        sim = Simulation(cfg, load_data(cfg))
        for _ in range(rounds):
            sim.step()
        out[name] = sim.Q
    return out


def check_scaffold_first_round(answer) -> Feedback:
    """The largest absolute difference between FedAvg's and SCAFFOLD's item tables after the first round."""
    if missing(answer):
        return todo("a number: (tables['scaffold'] - tables['fedavg']).abs().max() after one round")
    tables = scaffold_pair(1)
    diff = float((tables["scaffold"] - tables["fedavg"]).abs().max())
    ok = close(answer, diff, abs_=1e-12)
    return Feedback(ok, f"{diff:g}: every control variate starts at zero, so the first round's correction c - c_i is "
                        "zero and SCAFFOLD is FedAvg; from the second round on, c steers every local step" if ok else
                    f"{answer} is not it: run one round of each and compare their item tables")


def dropout_pair(dropout: float = 0.3, secagg_threshold: float = 0.25, rounds: int = 3):
    """FedMF on the notebook's small engine run with `dropout`, in plaintext and under secure aggregation: their
    item tables and how many clients dropped each round."""
    from ..fed.engine import Simulation, load_data

    out = {}
    for name, kw in (("plain", {}), ("secagg", {"encryption": "secagg", "secagg_threshold": secagg_threshold})):
        cfg = engine_config(method="fedmf", dropout=dropout, rounds=rounds, **kw)
        sim = Simulation(cfg, load_data(cfg))
        rows = [sim.step() for _ in range(rounds)]
        out[name] = sim.Q
        out["dropped"] = [int(r["clients_dropped"]) for r in rows]
    return out


def secagg_refusal(dropout: float, secagg_threshold: float, rounds: int = 6) -> str:
    """Run secure aggregation with `dropout` for `rounds` rounds: the server's refusal, or that every round
    unmasked."""
    from ..fed.engine import Simulation, load_data
    from ..privacy.secagg import SecureAggregationError

    cfg = engine_config(method="fedmf", dropout=dropout, encryption="secagg", secagg_threshold=secagg_threshold,
                        rounds=rounds)
    sim = Simulation(cfg, load_data(cfg))
    try:
        for _ in range(rounds):
            sim.step()
    except SecureAggregationError as e:
        return str(e)
    return f"all {rounds} rounds unmasked: enough clients uploaded every round"


def check_secagg_threshold(answer, n_sampled: int = 20, share: float = 0.5) -> Feedback:
    """How many of the sampled clients must upload for the server to unmask, at this threshold share?"""
    if missing(answer):
        return todo(f"a whole number: the fewest of {n_sampled} sampled clients whose uploads the server unmasks at "
                    f"secagg_threshold={share:g}")
    from ..fed.dropout import threshold

    t = threshold(n_sampled, share)
    ok = answer == t
    return Feedback(ok, f"{t}: strictly more than {share:g} of {n_sampled}; with fewer, the 'sum' of so few uploads "
                        "would reveal them (one survivor's sum is its own update)" if ok else
                    f"{answer} is not it: the server needs strictly more than {share:g} x {n_sampled} survivors")


def backdoor_runs(defenses=("none", "clip", "median"), attacker_share: float = 0.1, rounds: int = 6,
                  attack: str = "replacement", krum_f: int = 4):
    """FedMF on the notebook's small engine run with a share of attackers pushing the least popular item
    (`attack`: "replacement" or "dba"), under each defense: the last round's HR@10 and backdoor success, one row
    per defense. Krum tolerates `krum_f` attackers a round (about twice the 2 of the run's 20 clients)."""
    import pandas as pd

    from ..fed.engine import run

    rows = []
    for d in defenses:
        cfg = engine_config(method="fedmf", aggregation="weighted", attack=attack, attacker_share=attacker_share,
                            defense=d, krum_f=krum_f, rounds=rounds, eval_every=rounds)
        last = run(cfg, progress=False).table.dropna(subset=["hr"]).iloc[-1]
        rows.append({"defense": d, "HR@10": round(float(last["hr"]), 4),
                     "backdoor success": round(float(last["backdoor_success"]), 4)})
    return pd.DataFrame(rows)


def check_replacement_boost(answer, attackers_weight: float = 0.04) -> Feedback:
    """By what factor must attackers holding this share of the round's FedAvg weight scale their change of the
    target row, for the average to land it exactly where they want?"""
    if missing(answer):
        return todo(f"a number: the boost gamma when the attackers hold {attackers_weight:.0%} of the FedAvg weight")
    gamma = 1.0 / attackers_weight
    ok = close(answer, gamma, rel=0.01)
    return Feedback(ok, f"{gamma:g}: the server adds sum_u w_u Delta_u, so the attackers' gamma x (goal - row) arrives "
                        f"scaled by their weight {attackers_weight:g}; gamma = 1 / {attackers_weight:g} cancels it "
                        "(model replacement)" if ok else
                    f"{answer} is not it: after the weighted average, what is left of gamma x (goal - row)?")


def check_krum_counts(answer, clients: int = 60, f: int = 5) -> Feedback:
    """Multi-Krum with this many clients in a round and krum_f = f: how many neighbours enter each client's score,
    and how many clients does the server average? Answer a pair."""
    if missing(answer):
        return todo(f"a pair (neighbours in a score, clients averaged) for {clients} clients and krum_f = {f}")
    want = (clients - f - 2, clients - f)
    ok = isinstance(answer, (tuple, list)) and len(answer) == 2 and tuple(int(a) for a in answer) == want
    return Feedback(ok, f"{want}: each score sums the squared distances to the M - f - 2 nearest (so that up to f "
                        "attackers plus the client itself leave honest neighbours in it), and the M - f lowest "
                        "scores are averaged" if ok else
                    f"{answer} is not it: Krum tolerates f attackers among M = {clients}; count the neighbours that "
                    "stay honest, then how many clients survive once the f highest scores are dropped")


def personal_quality(values=(0.01, 1.0), rounds: int = 6, kind: str = "ditto"):
    """FedMF on the notebook's small engine run with personal models (`kind` "ditto" or "pfedme", values of lambda;
    "apfl" or "perfedavg", values of alpha): the last round's HR@10 of the global model and of the personal models,
    one row per value."""
    import pandas as pd

    from ..fed.engine import run

    label, field = {"ditto": ("lambda", "ditto_lambda"), "apfl": ("alpha", "apfl_alpha"),
                    "pfedme": ("lambda", "pfedme_lambda"), "perfedavg": ("alpha", "perfedavg_alpha")}[kind]
    rows = []
    for v in values:
        cfg = engine_config(method="fedmf", aggregation="weighted", personalization=kind, rounds=rounds,
                            eval_every=rounds, **{field: v})
        last = run(cfg, progress=False).table.dropna(subset=["hr"]).iloc[-1]
        rows.append({label: v, "global HR@10": round(float(last["hr"]), 4),
                     "personal HR@10": round(float(last["hr_personal"]), 4)})
    return pd.DataFrame(rows)


def ditto_quality(lambdas=(0.01, 1.0), rounds: int = 6):
    """Ditto's `personal_quality`, one row per lambda."""
    return personal_quality(lambdas, rounds, "ditto")


def check_apfl_gradient_share(answer, alpha: float = 0.25) -> Feedback:
    """APFL scores with alpha v + (1 - alpha) w: which share of the mixed row's gradient reaches V_u's row?"""
    if missing(answer):
        return todo(f"a number: the factor on V_u's gradient when alpha = {alpha:g}")
    ok = close(answer, alpha, rel=0.01)
    return Feedback(ok, f"{alpha:g}: the chain rule through alpha V_u + (1 - alpha) W_i gives V_u alpha times the "
                        "mixed row's gradient; with alpha = 1 the personal table learns alone, with alpha = 0 not at "
                        "all (the personal model is then the global one)" if ok else
                    f"{answer} is not it: differentiate alpha V_u + (1 - alpha) W with respect to V_u")


def check_ditto_full_pull(answer, lr: float = 0.5) -> Feedback:
    """For which lambda does one personal step erase an untouched row's gap to the global table?"""
    if missing(answer):
        return todo(f"a number: the lambda at which lr x lambda = 1 with lr = {lr:g}")
    lam = 1.0 / lr
    ok = close(answer, lam, rel=0.01)
    return Feedback(ok, f"{lam:g}: each step moves a row by lr x lambda of its gap to Q; at 1 it lands on Q (the "
                        "personal model then forgets itself every step, and beyond it overshoots, so the config "
                        "refuses lambda >= 1 / lr)" if ok else
                    f"{answer} is not it: a row no batch touches moves by lr x lambda x (V - Q) per step")


def check_pfedme_local_step(answer, lr: float = 0.5, lam: float = 1.0) -> Feedback:
    """pFedMe: after a batch's K personal steps, which share of its gap to theta does the local model w close?"""
    if missing(answer):
        return todo(f"a number: the share of (w - theta) that w moves with lr = {lr:g}, lambda = {lam:g}")
    share = lr * lam
    ok = close(answer, share, rel=0.01)
    return Feedback(ok, f"{share:g}: w <- w - lr lambda (w - theta), so w covers lr x lambda of the gap each batch; "
                        "what it sends is the sum of those moves, not theta itself" if ok else
                    f"{answer} is not it: write pFedMe's update of w after the personal steps")

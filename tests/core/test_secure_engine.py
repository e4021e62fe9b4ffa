"""Encryption in the engine: CKKS / secure aggregation / Paillier rounds, ledger, wall-clock, config."""
import numpy as np
import pytest

from labcore.config import ConfigError, RunConfig, paper_ml1m
from labcore.fed.engine import Simulation, run
from labcore.net.message import frame_bytes
from labcore.privacy.secagg import FixedPoint, secure_aggregate

from conftest import shared_data

FAST = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2, eval_every=5, rounds=4, rank_every=0)


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _one_round(cfg, data):
    sim = Simulation(cfg, data)
    q0 = sim.Q.clone()
    row = sim.step()
    return sim, row, (sim.Q - q0).double().numpy()


# --- configuration ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, message", [
    (dict(encryption="rsa"), r"encryption='rsa' .*none, ckks, secagg, paillier"),
    (dict(encryption="ckks", method="svd"), r"encryption='ckks' .*method='svd'.*Allowed combinations: ckks: fedmf, "
                                            r"colr, scolr; secagg: fedmf, colr, scolr; paillier: topk"),
    (dict(encryption="secagg", method="svd"), r"encryption='secagg' .*method='svd'"),
    (dict(encryption="ckks", method="topk"), r"encryption='ckks' .*method='topk'.*paillier"),
    (dict(encryption="paillier", method="colr"), r"encryption='paillier' .*method='colr'.*ckks or secagg"),
    (dict(encryption="paillier", method="topk"), r"aggregation='item_mean' .*'weighted'"),
    (dict(encryption="paillier", method="topk", aggregation="weighted"), r"compress_down=True .*false"),
    (dict(encryption="ckks", up_bits=4), r"up_bits=4 .*must be 0 with encryption='ckks'"),
    (dict(encryption="ckks", down_bits=4), r"down_bits=4 .*must be 0"),
    (dict(encryption="secagg", clients_per_round=1), r"clients_per_round=1 .*>= 2"),
    (dict(encryption="secagg", he_real_clients=1), r"he_real_clients=1 .*>= 2"),
    (dict(ckks_degree=4096), r"ckks_degree=4096 .*8192, 16384, 32768"),
    (dict(ckks_coeff_bits=(60, 60, 60, 60)), r"ckks_coeff_bits=\(60, 60, 60, 60\) totals 240 bits.*128-bit.*218"),
    (dict(ckks_degree=16384, ckks_coeff_bits=(60,) * 8), r"totals 480 bits.*438 bits for ckks_degree=16384"),
    (dict(ckks_scale_bits=55), r"ckks_scale_bits=55 overflows.*first prime.*\(60, ckks_scale_bits, 60\)"),
    (dict(ckks_scale_bits=50, ckks_coeff_bits=(60, 40, 60)), r"ckks_scale_bits=50 overflows.*inner prime"),
    (dict(ckks_coeff_bits=(60, 60)), r"ckks_coeff_bits=\(60, 60\) needs at least 3 primes"),
    (dict(ckks_coeff_bits=[60, "x", 60]), r"ckks_coeff_bits=.*tuple (of prime sizes|\(a JSON list\) of numbers)"),
    (dict(paillier_key_bits=1000), r"paillier_key_bits=1000 .*1024..8192"),
    (dict(encryption="ckks", he_real_every=0), r"he_real_every=0 .*1..1000000"),
    (dict(paillier_key_bits=1100), r"paillier_key_bits=1100 .*multiple of 256"),
])
def test_invalid_encryption_settings_name_the_field(bad, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(**bad)


def test_encryption_settings_round_trip_and_only_change_the_key_when_used():
    c = RunConfig(encryption="ckks", ckks_degree=16384, ckks_coeff_bits=(60, 40, 40, 60), ckks_scale_bits=40)
    assert RunConfig(**c.to_dict()) == c and c.describe().endswith("+CKKS")
    from labcore.config import from_query

    assert from_query(c.to_query()) == c
    plain = RunConfig()
    assert plain.replace(ckks_degree=32768, he_real_clients=5).key() == plain.key()  # unused without encryption
    assert c.replace(he_real_clients=5).key() != c.key() and c.replace(paillier_key_bits=1024).key() == c.key()
    assert c.replace(he_real_every=4).key() != c.key() and plain.replace(he_real_every=4).key() == plain.key()
    secagg = RunConfig(encryption="secagg")
    assert secagg.replace(he_real_every=4).key() == secagg.key()  # secure aggregation masks every round for real


# --- CKKS --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method, aggregation", [("colr", "item_mean"), ("colr", "weighted"), ("fedmf", "item_mean"),
                                                 ("scolr", "item_mean"), ("scolr", "weighted")])
def test_ckks_aggregate_equals_plaintext_within_1e6(tiny, method, aggregation):
    """Every client encrypted for real: the decrypted aggregate (as applied to Q) matches the plain run's."""
    cfg = RunConfig(method=method, aggregation=aggregation, **{**FAST, "rank": 4})
    _, _, plain = _one_round(cfg, tiny)
    sim, row, enc = _one_round(cfg.replace(encryption="ckks", he_real_clients=8), tiny)
    assert row["he_check_err"] < 1e-6 and not row["he_extrapolated"]
    assert _rel(enc, plain) < 1e-6  # float32 model: what is left is float32 rounding, far below 1e-6 of the max
    ups = sim.ledger.frame().query("direction == 'up'")
    assert set(ups["kind"]) <= {"ciphertext", "indices"}  # no float part travels in clear
    assert (ups.query("part == 'item_mask'")["kind"] == "ciphertext").all()


def test_ckks_rounds_between_real_ones_are_scaled_from_the_last_real_round(tiny):
    """he_real_every = 3: rounds 0, 3, 6 encrypt for real (their check error measured), the others sum in plaintext
    and repeat the last real round's per-ciphertext bytes and times; the model stays the every-round run's within
    CKKS's error, and the bytes within the spread of real ciphertexts' sizes."""
    cfg = RunConfig(method="colr", encryption="ckks", **{**FAST, "rounds": 7})
    every, sampled = (run(cfg.replace(he_real_every=k), data=tiny, use_cache=False, progress=False)
                      for k in (1, 3))
    t, ref = sampled.table, every.table
    real = t["round"] % 3 == 0
    assert t.loc[real, "he_check_err"].lt(1e-6).all() and t.loc[~real, "he_check_err"].isna().all()
    assert ref["he_check_err"].lt(1e-6).all() and t["he_extrapolated"].all()
    for col in ("he_client_s", "he_server_s"):
        v = t[col].to_numpy()
        assert all(v[r] == v[r - r % 3] for r in range(7)) and len(set(v[real])) == 3
    assert np.allclose(t["bytes_up"], ref["bytes_up"], rtol=1e-3) and (t["bytes_down"] == ref["bytes_down"]).all()
    for name in ("hr", "ndcg"):
        assert t[name].dropna().tolist() == pytest.approx(ref[name].dropna().tolist(), abs=1e-6)


def test_ckks_ledger_measures_ciphertexts_and_scales_the_others(tiny):
    cfg = RunConfig(method="colr", encryption="ckks", he_real_clients=3, **FAST)
    sim = Simulation(cfg, tiny)
    row = sim.step()
    assert row["he_extrapolated"] and row["he_check_err"] < 1e-6
    led = sim.ledger.frame().query("round == 0").set_index(["direction", "part"])
    up_a = led.loc[("up", "A")]
    assert up_a["kind"] == "ciphertext" and up_a["messages"] == 8
    # one CKKS ciphertext (r * N = 100 values <= 4096 slots) per client and part
    from labcore.privacy.ckks import encrypt_update

    one = len(encrypt_update(sim.secure.ctx, np.full(100, 1e-3))[0])
    per_client = (up_a["bytes"] / 8) - frame_bytes("A", 0) - 4
    assert abs(per_client - one) / one < 0.01
    down = led.loc[("down", "A")]
    assert down["kind"] == "ciphertext" and down["messages"] == 8 and 0 < down["bytes"] / 8 < per_client  # rescaled
    assert ("down", "B_seed") in led.index  # the rest of the broadcast is unchanged
    assert row["bytes_up_client"] == pytest.approx((up_a["bytes"] + led.loc[("up", "item_mask"), "bytes"]) / 8)


def test_ckks_times_enter_the_wall_clock(tiny):
    cfg = RunConfig(method="colr", **FAST)
    plain = run(cfg, data=tiny, use_cache=False, progress=False).table
    enc = run(cfg.replace(encryption="ckks"), data=tiny, use_cache=False, progress=False).table
    assert (enc["he_client_s"] > 0).all() and (enc["he_server_s"] > 0).all() and plain["he_client_s"].isna().all()
    extra = enc["t_comp"] - plain["t_comp"]
    lo = enc["he_server_s"] + cfg.r_comp * enc["he_client_s"] * 0.3
    hi = enc["he_server_s"] + cfg.r_comp * enc["he_client_s"] * 3
    assert (extra > lo).all() and (extra < hi).all()
    assert (enc["bytes_up_client"] > 50 * plain["bytes_up_client"]).all()  # ciphertext expansion


def test_training_with_ckks_ends_within_0005_hr_of_plaintext():
    from labcore.data import load_dataset

    data = load_dataset("synthetic", size="small", seed=0)
    cfg = RunConfig(method="colr", rank=4, dim=16, clients_per_round=30, rounds=60, eval_every=60, rank_every=0)
    plain = run(cfg, data=data, use_cache=False, progress=False)
    enc = run(cfg.replace(encryption="ckks"), data=data, use_cache=False, progress=False)
    assert plain.final["hr"] > 0.2  # it learned something
    assert abs(enc.final["hr"] - plain.final["hr"]) <= 0.005
    assert enc.table["he_check_err"].max() < 1e-6


def test_ckks_headroom_overflow_is_a_clear_error(tiny):
    cfg = RunConfig(method="fedmf", encryption="ckks", ckks_scale_bits=52, lr=1e4, **FAST)  # |x| < 2**7
    sim = Simulation(cfg, tiny)
    with pytest.raises(ValueError, match="exceed the CKKS headroom|NaN or inf"):
        for _ in range(3):
            sim.step()


# --- secure aggregation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["colr", "scolr", "fedmf"])
def test_secagg_sum_is_exact_and_matches_plaintext(tiny, method):
    cfg = RunConfig(method=method, **{**FAST, "rank": 4})
    _, _, plain = _one_round(cfg, tiny)
    sim, row, sec = _one_round(cfg.replace(encryption="secagg", he_real_clients=8), tiny)
    assert row["he_check_err"] < 1e-8  # ring rounding only (2**-32), the ring sum itself is checked bit for bit
    assert _rel(sec, plain) < 1e-6
    led = sim.ledger.frame().query("round == 0")
    masked = led.query("direction == 'up' and kind == 'ciphertext'")
    n = tiny.n_items * (cfg.rank if method != "fedmf" else cfg.dim) + tiny.n_items  # update + item bitmap
    assert masked["bytes"].item() == 8 * (8 * n + frame_bytes(masked["part"].item(), 0))
    assert "secagg.public_keys" in set(led.query("direction == 'down'")["part"])


def test_secagg_on_engine_payloads_is_exact_with_and_without_a_dropped_client(tiny):
    sim = Simulation(RunConfig(method="colr", **FAST), tiny)
    sim.keep_view = True
    sim.step()
    X = sim.view["decoded"].reshape(8, -1).double().numpy()
    codec = FixedPoint(32, 64)

    def exact(rows):
        acc = np.zeros(X.shape[1], np.uint64)
        for i in rows:
            acc = codec.add(acc, codec.encode(X[i], len(X)))
        return codec.decode(acc)

    full, rep = secure_aggregate(X, codec=codec, round_id=1)
    assert np.array_equal(full, exact(range(8))) and not rep.recovered
    part, rep = secure_aggregate(X, dropped=[3], codec=codec, round_id=1)
    assert np.array_equal(part, exact([i for i in range(8) if i != 3])) and rep.recovered


# --- Paillier / Top-K --------------------------------------------------------------------------------------
def test_paillier_topk_round(tiny):
    cfg = RunConfig(method="topk", topk_ratio=0.05, aggregation="weighted", compress_down=False, **FAST)
    _, _, plain = _one_round(cfg, tiny)
    enc_cfg = cfg.replace(encryption="paillier", paillier_key_bits=1024, he_real_values=3)
    sim, row, enc = _one_round(enc_cfg, tiny)
    assert row["he_check_err"] < 1e-9 and row["he_extrapolated"]
    assert _rel(enc, plain) < 1e-6
    led = sim.ledger.frame().query("round == 0").set_index(["direction", "part"])
    k = int(np.ceil(0.05 * tiny.n_items * cfg.dim))
    assert led.loc[("up", "values"), "kind"] == "ciphertext"
    assert led.loc[("up", "values"), "bytes"] == 8 * (k * 256 + frame_bytes("values", 0))  # 2 x 1024 bits each
    assert led.loc[("up", "indices"), "kind"] == "indices"  # in clear, as in the paper
    union = led.loc[("down", "indices"), "bytes"] / 8 - frame_bytes("indices", 0)
    assert led.loc[("down", "values"), "bytes"] / 8 == union / 4 * 256 + frame_bytes("values", 0)
    assert row["he_client_s"] > 0.01  # k encryptions per client, value by value


# --- ML-1M (slow) --------------------------------------------------------------------------------------------
needs_ml1m = pytest.mark.skipif(shared_data() is None or not (shared_data() / "ml-1m").is_dir(),
                                reason="set LABCORE_DATA to a folder with ml-1m/")


@pytest.mark.slow
@pytest.mark.timeout(3600)
@needs_ml1m
def test_ml1m_colr4_with_ckks_ends_within_0005_hr_of_plaintext():
    """CoLR@4, the paper's ML-1M settings, 1000 rounds (~3 min plain + ~5 min with CKKS on 2 idle cores)."""
    cfg = paper_ml1m(method="colr", rank=4)
    plain = run(cfg, use_cache=False, progress=False)
    enc = run(cfg.replace(encryption="ckks"), use_cache=False, progress=False)
    assert abs(enc.final["hr"] - plain.final["hr"]) <= 0.005
    assert enc.table["he_check_err"].max() < 1e-6 and enc.table["he_extrapolated"].all()

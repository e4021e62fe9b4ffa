"""CKKS aggregation, parameter validation, cost explorer and Table 3 (smoke)."""
import math

import numpy as np
import pytest

from labcore.net.message import Message
from labcore.privacy import check_scheme
from labcore.privacy.ckks import (
    CkksAggregator,
    CkksParams,
    aggregate,
    ciphertext_parts,
    decrypt_aggregate,
    encrypt_update,
    make_context,
)
from labcore.privacy.costs import PAPER_TABLE3, TABLE3_PARAMS, TABLE3_SETTINGS, ckks_costs, table3_frame, table3_rows


def _updates(M=5, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, 1e-2, (M, n))  # the size of model updates
    w = rng.random(M) + 0.1
    return X, w / w.sum()


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_aggregate_matches_plaintext_within_1e6():
    # Scale 2**50 (CkksParams.precise): CKKS error after encrypt + one plaintext
    # multiply/rescale is ~sqrt(N) * 2**-scale_bits absolute (~1e-8 at 2**40), i.e.
    # ~1e-6 relative on weighted means of ~1e-2 values; 10 more bits give ~1e-9.
    params = CkksParams.precise()
    ctx = make_context(params)
    X, w = _updates()
    cts = [encrypt_update(ctx, x) for x in X]
    agg = aggregate(cts, w, ctx)
    out = decrypt_aggregate(ctx, agg, X.shape[1])
    assert _rel(out, w @ X) < 1e-6


def test_default_params_precision_and_server_cannot_decrypt():
    ctx = make_context(CkksParams())
    assert ctx.secret.is_private() and not ctx.public.is_private()
    X, w = _updates(M=3, n=2000, seed=1)
    out, rep = CkksAggregator().aggregate(X, w)
    assert _rel(out, w @ X) < 1e-5  # default scale 2**40: ~1e-6, documented
    import tenseal as ts

    v = ts.ckks_vector_from(ctx.public, encrypt_update(ctx, X[0])[0])
    with pytest.raises(Exception):
        v.decrypt()


@pytest.mark.parametrize("n", [1, 4095, 4096, 4097, 10000])
def test_ciphertext_count(n):
    ctx = make_context(CkksParams())
    x = np.full(n, 1e-3)
    assert len(encrypt_update(ctx, x)) == math.ceil(n / 4096) == CkksParams().n_ciphertexts(n)


def test_aggregator_report_and_extrapolation():
    X, w = _updates(M=5, n=5000, seed=2)
    params = CkksParams.precise()
    out, rep = CkksAggregator(params).aggregate(X, w)
    assert not rep.extrapolated and rep.n_real_clients == 5
    assert rep.ciphertexts_per_client == 2
    assert rep.plaintext_bytes_per_client == 4 * 5000
    one = sum(len(b) for b in encrypt_update(make_context(params), X[0]))
    assert abs(rep.ciphertext_bytes_per_client - one) / one < 0.01  # measured len(), compression varies by bytes
    assert rep.encrypt_s_per_client > 0 and rep.server_aggregate_s > 0 and rep.decrypt_s > 0
    assert rep.ratio > 10

    out2, rep2 = CkksAggregator(params, max_real_clients=2).aggregate(X, w)
    assert rep2.extrapolated and rep2.n_real_clients == 2 and "plaintext" in rep2.notes
    assert _rel(out2, w @ X) < 1e-6
    assert len(rep2.encrypt_s_measured) == 2


def test_ciphertext_parts_are_measured_by_the_ledger():
    ctx = make_context(CkksParams())
    cts = encrypt_update(ctx, np.full(5000, 1e-2))
    msg = Message.of("up", ciphertext_parts(cts))
    sizes = msg.part_sizes()
    assert len(sizes) == 2
    assert all(p.kind == "ciphertext" for p in msg.parts)
    assert sum(b for b, _ in sizes.values()) > sum(len(c) for c in cts)


def test_zero_weight_client_is_skipped():
    ctx = make_context(CkksParams.precise())
    X, _ = _updates(M=3, n=100, seed=3)
    w = np.array([0.5, 0.0, 0.5])
    out = decrypt_aggregate(ctx, aggregate([encrypt_update(ctx, x) for x in X], w, ctx), 100)
    assert _rel(out, w @ X) < 1e-6


def test_invalid_degree():
    with pytest.raises(ValueError, match="poly_modulus_degree=4096.*8192, 16384, 32768"):
        CkksParams(poly_modulus_degree=4096)


def test_modulus_chain_too_long_for_degree():
    with pytest.raises(ValueError, match=r"coeff_mod_bit_sizes.*240 bits.*218 bits.*8192"):
        CkksParams(8192, (60, 60, 60, 60), 40)
    with pytest.raises(ValueError, match="438"):
        CkksParams(16384, (60,) * 8, 40)
    CkksParams(16384, (60, 40, 40, 40, 40, 40, 60), 40)  # 320 <= 438: fine


def test_overflowing_scale():
    with pytest.raises(ValueError, match="global_scale_bits=50 overflows.*inner prime"):
        CkksParams(8192, (60, 40, 40, 60), 50)
    with pytest.raises(ValueError, match=r"global_scale_bits=40 overflows.*first prime.*\+ 8"):
        CkksParams(8192, (45, 40, 40, 60), 40)
    with pytest.raises(ValueError, match="at least 3 primes"):
        CkksParams(8192, (60, 60), 40)


def test_unknown_scheme():
    with pytest.raises(ValueError) as e:
        check_scheme("rsa")
    msg = str(e.value)
    assert "rsa" in msg and "'ckks'" in msg and "'paillier'" in msg and "'secagg'" in msg
    assert check_scheme("CKKS") == "ckks"


def test_cost_explorer_fields_and_speed():
    params = CkksParams()
    c = ckks_costs(10000, params)
    for key in ("n_ciphertexts", "ciphertext_bytes", "plaintext_bytes", "encrypt_s", "add_s", "decrypt_s",
                "max_abs_error", "rel_error", "security_bits", "times_source", "bytes_source"):
        assert key in c
    assert c["n_ciphertexts"] == 3 and c["plaintext_bytes"] == 40000 and c["security_bits"] == 128
    assert c["bytes_source"] == "measured" and "calibrated" in c["times_source"]
    assert 0 < c["max_abs_error"] < 1e-6 and c["rel_error"] < 1e-5
    for n in (10000, 12000, 20000, 4096):  # calibrated once per parameter set (speed: benchmarks/app_latency.py)
        assert ckks_costs(n, params)["ciphertext_bytes"] > 0
    est = ckks_costs(10000, params, measure=False)
    assert est["encrypt_s"] is None and "formula" in est["bytes_source"]


def test_cost_explorer_step_structure():
    params = CkksParams()
    s = params.slots
    sizes = {n: ckks_costs(n, params)["ciphertext_bytes"] for n in (100, s // 2, s, s + 1, 2 * s, 2 * s + 1)}
    one = sizes[s]
    for n in (100, s // 2):  # same single ciphertext while n fits the N/2 slots
        assert abs(sizes[n] - one) / one < 0.02
    assert abs(sizes[s + 1] - 2 * one) / one < 0.04 and abs(sizes[2 * s] - 2 * one) / one < 0.04
    assert abs(sizes[2 * s + 1] - 3 * one) / one < 0.06


def test_table3_smoke():
    rows = table3_rows(n_items=500, d=16, ranks=(1, 2, 4, 8), topk_fracs=(1 / 64, 2 / 64),
                       params=CkksParams(16384, (60, 40, 40, 60), 40), n_clients=2, smoke=True)
    by = {r["method"]: r for r in rows}
    assert set(by) == {"FedMF", "TopK@1/64", "TopK@2/64", "CoLR@1", "CoLR@2", "CoLR@4", "CoLR@8"}
    for r in rows:
        for key in ("client_s", "server_s", "ciphertext_kb", "plaintext_kb", "ratio", "extrapolated", "basis"):
            assert key in r
        assert r["paper"] == dict(zip(("client_s", "server_s", "ciphertext_kb", "plaintext_kb", "ratio"),
                                      PAPER_TABLE3[r["method"]]))
    # 8192 slots: r*N = 500..4000 values all fit one ciphertext -> constant size; FedMF (8000) too
    kb = [by[f"CoLR@{r}"]["ciphertext_kb"] for r in (1, 2, 4, 8)]
    assert max(kb) / min(kb) < 1.02
    assert by["CoLR@1"]["n_ciphertexts"] == 1 and by["FedMF"]["n_ciphertexts"] == 1
    # Top-K doubles with k; plaintext KB is 8 bytes per (value, index)
    assert by["TopK@2/64"]["ciphertext_kb"] == pytest.approx(2 * by["TopK@1/64"]["ciphertext_kb"], rel=1e-6)
    assert by["TopK@1/64"]["plaintext_kb"] == pytest.approx(125 * 8 / 1024)
    assert by["TopK@1/64"]["extrapolated"] and "extrapolated" in by["TopK@1/64"]["basis"]


def test_table3_colr_steps_at_paper_size():
    """Our Table 3 parameters (N=32768: 16,384 values per ciphertext) show the paper's step structure at ML-1M size."""
    rows = table3_rows(ranks=(1, 2, 4, 8, 16), topk_fracs=(), smoke=True, n_clients=2)
    by = {r["method"]: r for r in rows}
    assert TABLE3_PARAMS.poly_modulus_degree == 32768 and "N=32768" in TABLE3_SETTINGS
    # r * 3706 values: 1..4 fit one ciphertext (constant size), then one more per 16,384 values
    assert [by[f"CoLR@{r}"]["n_ciphertexts"] for r in (1, 2, 4, 8, 16)] == [1, 1, 1, 2, 4]
    kb = [by[f"CoLR@{r}"]["ciphertext_kb"] for r in (1, 2, 4, 8, 16)]
    assert max(kb[:3]) / min(kb[:3]) < 1.02
    assert kb[3] == pytest.approx(2 * kb[0], rel=0.03) and kb[4] == pytest.approx(4 * kb[0], rel=0.03)
    pt = [by[f"CoLR@{r}"]["plaintext_kb"] for r in (1, 2, 4)]
    assert pt[1] == pytest.approx(2 * pt[0]) and pt[2] == pytest.approx(4 * pt[0])  # ratio falls while ct is flat
    assert by["FedMF"]["n_ciphertexts"] == math.ceil(3706 * 64 / 16384)
    assert by["FedMF"]["paper"]["ciphertext_kb"] == 24587


def test_table3_frame_states_both_settings():
    df = table3_frame(ranks=(1,), topk_fracs=(), smoke=True, n_clients=2)
    assert list(df["method"]) == ["FedMF", "CoLR@1"]
    assert {"client_s", "paper_client_s", "ciphertext_kb", "paper_ciphertext_kb", "basis"} <= set(df.columns)
    assert "Paper" in df.attrs["settings"] and "Ours" in df.attrs["settings"]


@pytest.mark.slow
def test_table3_full_size():
    """ML-1M size with our parameters: 2048-bit Paillier (per-value sample), real CKKS rounds (4 real clients of 60)."""
    rows = table3_rows()
    by = {r["method"]: r for r in rows}
    assert by["FedMF"]["n_ciphertexts"] == 15 and by["FedMF"]["basis"].startswith("measured: real CKKS round")
    assert by["TopK@1/64"]["ratio"] == pytest.approx((512 + 4) / 8)
    for a, b in (("TopK@1/64", "TopK@2/64"), ("TopK@8/64", "TopK@16/64")):
        assert by[b]["ciphertext_kb"] == pytest.approx(2 * by[a]["ciphertext_kb"], rel=1e-3)
    kb = [by[f"CoLR@{r}"]["ciphertext_kb"] for r in (1, 2, 4, 8, 16, 32)]
    assert max(kb[:3]) / min(kb[:3]) < 1.02 and kb[5] == pytest.approx(8 * kb[0], rel=0.03)
    # CoLR's client and server overheads stay far below Top-K's (the paper's conclusion)
    assert by["CoLR@4"]["client_s"] * 10 < by["TopK@1/64"]["client_s"]
    assert by["CoLR@4"]["server_s"] * 10 < by["TopK@1/64"]["server_s"]

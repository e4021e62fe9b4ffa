"""Config validation: every bad value is rejected with the field name and what is allowed."""
import pytest

from labcore.config import ConfigError, RunConfig, from_dict, from_query


@pytest.mark.parametrize("bad, message", [
    (dict(rank=65), r"rank=65 .*must be <= dim \(64\)"),
    (dict(up_bits=33), r"up_bits=33 .*0\.\.32"),
    (dict(down_bits=-1), r"down_bits=-1 .*0\.\.32"),
    (dict(topk_ratio=0.0), r"topk_ratio=0\.0 .*\(0, 1\]"),
    (dict(topk_ratio=1.5), r"topk_ratio=1\.5"),
    (dict(method="lora"), r"method='lora' .*fedmf, colr, scolr, svd, topk"),
    (dict(dataset="netflix"), r"dataset='netflix' .*synthetic, ml-1m, ml-100k, pinterest"),
    (dict(b_init="uniform"), r"b_init='uniform' .*normal, orthonormal, sphere"),
    (dict(lr=0.0), r"lr=0\.0 .*> 0"),
    (dict(rounds="ten"), r"rounds='ten' .*integer"),
    (dict(method="scolr", rank=4, scolr_min_rank=5), r"scolr_min_rank=5 .*<= rank \(4\)"),
    (dict(bandwidth_tiers=((0.5, 1, 1),)), r"bandwidth_tiers=.*add up to 1"),
    (dict(encryption="rot13"), r"encryption='rot13'"),
])
def test_invalid_values_name_the_field_and_the_allowed_values(bad, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(bad)


def test_unknown_fields_are_listed_with_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown config field\(s\) rnak; valid fields are: .*rank"):
        from_dict({"rnak": 4})


def test_config_is_frozen_hashable_and_round_trips_through_a_query_string():
    c = RunConfig(method="scolr", rank=8, lr=0.1, b_as_seed=False, bandwidth_tiers=((0.5, 1, 1), (0.5, 0.2, 0.1)))
    with pytest.raises(Exception):
        c.rank = 2
    assert hash(c) == hash(RunConfig(**c.to_dict()))
    q = c.to_query()
    assert all(isinstance(v, str) for v in q.values()) and "dataset" not in q
    assert from_query(q) == c
    assert c.key() == from_query(q).key() and c.key() != RunConfig().key()
    assert c.replace(checkpoint_every=7).key() == c.key()  # bookkeeping does not change the result


def test_strings_from_the_url_or_cli_are_coerced_or_rejected():
    assert from_query({"rank": "8", "b_as_seed": "false", "lr": "0.05"}).rank == 8
    with pytest.raises(ConfigError, match="b_as_seed='maybe'"):
        from_query({"b_as_seed": "maybe"})


@pytest.fixture
def keys_before_small_rank_kernel(monkeypatch):
    """Keys as computed before CoLR / SCoLR at small rank had a kernel of their own: the regression values below
    date from then, and every other part of the key must still give them."""
    monkeypatch.setattr(RunConfig, "small_rank_kernel", lambda self: False)


def test_a_small_rank_colr_run_has_a_key_of_its_own_and_nothing_else_does():
    # Keys computed before the kernel compiled for its rank (`fed.kernels.fused_lowrank`): its runs (CoLR / SCoLR at
    # rank <= 4 without FedProx) differ in their last bits, so results cached before must not be served for them;
    # larger ranks, FedProx and the other methods train as before and keep their keys.
    from labcore.config import SMALL_RANK, paper_ml1m

    assert SMALL_RANK == 4
    assert RunConfig().key() != "8a54d6c889ad1eac"  # CoLR@4
    assert paper_ml1m(client_schedule="uniform").key() != "ba417dc33eacefc1"
    assert RunConfig(method="colr", down_bits=8).key() != "3d6092e3026d8d13"
    assert RunConfig(method="scolr", rank=4).key() != "9dedeaefcc0f228f"
    assert paper_ml1m(method="colr", rank=2).key() != "95fb3f6ff7e9237f"
    assert RunConfig(method="scolr", rank=8).key() == "147e4d8fbea58bf4"
    assert paper_ml1m(method="colr", rank=8).key() == "42f7f35245a68e9f"
    assert RunConfig(method="colr", rank=16).key() == "4a2000750f0cedd0"
    assert RunConfig(method="scolr", rank=32).key() == "c0940d72bd5c41a7"
    assert paper_ml1m(method="colr", rank=16).key() == "2b02a663234f0f35"
    assert RunConfig(method="colr", prox_mu=0.01).key() == "d284698e7efb67bc"
    assert paper_ml1m(method="fedmf", dim=64).key() == "5c338ac0184b646b"
    assert RunConfig(method="topk", up_bits=8).key() == "972d70b0b7a55032"
    assert RunConfig(method="colr", rank=4).small_rank_kernel() and not RunConfig(method="fedmf").small_rank_kernel()


def test_default_cache_keys_are_unchanged_by_the_data_skew_field(keys_before_small_rank_kernel):
    # Regression values computed before data_skew existed: stored results are found by these keys, so a new
    # field at its default must not change them.
    from labcore.config import paper_ml1m

    assert RunConfig().key() == "8a54d6c889ad1eac"
    assert paper_ml1m(client_schedule="uniform").key() == "ba417dc33eacefc1"  # the preset before it rotated
    assert RunConfig(data_skew=1.0).key() == RunConfig().key()


def test_a_quantized_uplinks_key_changed_with_its_summation_order_and_nothing_elses(keys_before_small_rank_kernel):
    # Keys of the code that summed quantized uplinks densely (computed with it): results cached that way, whose
    # numbers differ past float rounding, must not be served for the rows sum. Float32 uplinks keep their keys.
    assert RunConfig(method="colr", up_bits=8).key() != "14251a8f898b602d"
    assert RunConfig(method="fedmf", up_bits=4, down_bits=8).key() != "e58f467a9badcd9f"
    assert RunConfig(method="colr", down_bits=8).key() == "3d6092e3026d8d13"  # a quantized downlink alone


def test_a_quantized_uplink_drawn_by_rows_has_a_key_of_its_own_and_nothing_else_does(keys_before_small_rank_kernel):
    # Keys of the code that drew a number per value of each client's whole table (computed with it): FedMF, CoLR and
    # SCoLR over a noiseless link now draw per held value, so their cached results must not be served; Top-K and SVD
    # draw as before, over any link, and keep their keys.
    assert RunConfig(method="colr", up_bits=8).key() != "ea5304068fd1ddad"
    assert RunConfig(method="fedmf", up_bits=4, down_bits=8).key() != "bbce5d01f850a585"
    assert RunConfig(method="scolr", up_bits=4).key() != "634b1e8f9ab3d74f"
    assert RunConfig(method="colr", up_bits=8, up_link_budget=8).key() != "040cac6f49f28833"  # within the budget
    assert RunConfig(method="topk", up_bits=8).key() == "972d70b0b7a55032"
    assert RunConfig(method="svd", up_bits=4).key() == "b2371ce3573b4fe3"
    assert RunConfig(method="topk", up_bits=8, up_link_budget=2).key() == "e26929659e611b39"  # a noisy link


def test_a_row_quantized_uplink_over_a_noisy_link_has_a_key_of_its_own_and_nothing_else_does(keys_before_small_rank_kernel):
    # Keys of the code that drew the channel with torch for every value of each client's whole table (computed with
    # it): FedMF, CoLR and SCoLR now draw it from their packed codes where a bucket has a norm, so their cached
    # results must not be served; their runs over a noiseless link keep their keys.
    assert RunConfig(method="colr", up_bits=8, up_link_budget=2).key() != "3333cf9cb3593942"
    assert RunConfig(method="fedmf", up_bits=8, up_link_budget=6).key() != "90fe8f4bfcff8297"
    assert RunConfig(method="scolr", up_bits=4, up_link_budget=1).key() != "149b47ef8e15df1c"
    assert RunConfig(method="colr", up_bits=8).key() == "85eeb1d6cd3ee89d"


def test_a_row_quantized_uplink_whose_channel_draws_from_the_level_table_has_a_key_of_its_own(keys_before_small_rank_kernel):
    # Keys of the code that drew Eq. 6's normal and uniform for every value of a bucket with a norm (computed with it):
    # the received levels now come from their exact distribution with one uniform, other numbers, so those cached
    # results must not be served; a noiseless link and the methods quantized whole keep their keys.
    assert RunConfig(method="colr", up_bits=8, up_link_budget=2).key() != "5f4a0524912ede4f"
    assert RunConfig(method="fedmf", up_bits=8, up_link_budget=6).key() != "32c8fd692d60cfea"
    assert RunConfig(method="scolr", up_bits=4, up_link_budget=1).key() != "d0567dc9e1873b4d"
    assert RunConfig(method="colr", up_bits=8).key() == "85eeb1d6cd3ee89d"
    assert RunConfig(method="topk", up_bits=8, up_link_budget=2).key() == "e26929659e611b39"


def test_a_low_rank_run_over_a_noisy_link_with_weighted_aggregation_has_a_key_of_its_own(keys_before_small_rank_kernel):
    # Keys of the code that weighted CoLR / SCoLR's received tables through a copy of their (M, N, r) view (computed
    # with it): they are now weighted in their storage's order, other last bits, so those cached results must not be
    # served; the item mean, FedMF's noisy link and a noiseless weighted CoLR keep their keys.
    assert RunConfig(method="colr", up_bits=8, up_link_budget=2, aggregation="weighted").key() != "5f496649aa6234a1"
    assert RunConfig(method="scolr", up_bits=4, up_link_budget=1, aggregation="weighted").key() != "7aeb6aa97d240fd0"
    assert RunConfig(method="colr", up_bits=8, up_link_budget=2).key() == "b62c553d09d8dccd"
    assert RunConfig(method="fedmf", up_bits=8, up_link_budget=6, aggregation="weighted").key() == "8d2a7f86bdaba737"
    assert RunConfig(method="colr", up_bits=8, aggregation="weighted").key() == "59468f7782152b16"


def test_data_skew_is_in_the_key_and_the_link_and_only_for_synthetic_data():
    skewed = RunConfig(data_skew=2.0)
    assert skewed.key() != RunConfig().key() and RunConfig(data_skew=0.0).key() != skewed.key()
    assert skewed.to_query() == {"data_skew": "2.0"} and from_query(skewed.to_query()) == skewed
    assert from_query({"data_skew": "0"}).data_skew == 0.0
    with pytest.raises(ConfigError, match=r"data_skew=2\.5 .*allowed range is 0\.0\.\.2\.0"):
        RunConfig(data_skew=2.5)
    with pytest.raises(ConfigError, match=r"data_skew=2\.0 .*applies to synthetic data only"):
        RunConfig(dataset="ml-1m", data_skew=2.0)
    assert RunConfig(dataset="ml-1m").data_skew == 1.0


def test_coerce_field_turns_link_strings_into_the_field_type():
    from labcore.config import coerce_field

    assert coerce_field("data_skew", "1.5") == 1.5 and coerce_field("rank", "8") == 8
    assert coerce_field("bandwidth_tiers", "[[1, 1, 1]]") == ((1, 1, 1),)
    with pytest.raises(ConfigError, match="data_skew='lots' is invalid: expected a number"):
        coerce_field("data_skew", "lots")


def test_client_schedule_is_checked_and_changes_the_key_only_when_not_the_default():
    with pytest.raises(ConfigError, match=r"client_schedule='roundrobin' .*uniform, rotating"):
        from_dict({"client_schedule": "roundrobin"})
    base = RunConfig()
    assert RunConfig(client_schedule="uniform").key() == base.key()  # stored results keep their keys
    rot = from_query({"client_schedule": "rotating"})
    assert rot.client_schedule == "rotating" and rot.key() != base.key()

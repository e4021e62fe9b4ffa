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


def test_the_key_hashes_the_store_version_and_the_fields_off_their_defaults(monkeypatch):
    """The whole rule: a new field at its default changes no key, and raising the store version changes every key
    (what a change of the numbers does, so that no result made another way is served)."""
    from labcore import config
    from labcore.typed_config import hash_key

    assert RunConfig().key() == hash_key({"store": config.STORE_VERSION})
    c = RunConfig(method="fedmf", dim=16, lr=0.05)
    assert c.key() == hash_key({"store": config.STORE_VERSION, "method": "fedmf", "dim": 16, "lr": 0.05})
    assert RunConfig(method="colr", rank=4).key() == RunConfig().key()  # CoLR@4 is the default
    dp = RunConfig(method="fedmf", client_schedule="poisson", aggregation="weighted", dp_mode="local")
    before = {cfg: cfg.key() for cfg in (RunConfig(), c, RunConfig(method="topk", up_bits=8), dp)}
    monkeypatch.setattr(config, "STORE_VERSION", config.STORE_VERSION + 1)
    assert all(cfg.key() != key for cfg, key in before.items())


def test_fields_that_cannot_change_the_numbers_stay_out_of_the_key():
    base = RunConfig(method="colr", up_bits=8)
    assert base.replace(checkpoint_every=7).key() == base.key()  # bookkeeping
    assert RunConfig(up_link_budget=4).key() == RunConfig().key()  # a budget over a float32 link
    assert base.replace(up_link_budget=4).key() != base.key()  # ... acts on quantized levels
    assert RunConfig(secagg_threshold=0.9).key() == RunConfig().key()  # no dropout: every threshold is met
    assert RunConfig(straggler_policy="drop").key() == RunConfig().key()  # no stragglers: no policy applies
    assert RunConfig(ditto_lambda=0.5).key() == RunConfig().key()  # another personalization's setting
    assert RunConfig(ckks_degree=16384).key() == RunConfig().key()  # an encryption not in use


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


def test_every_field_belongs_to_exactly_one_group_in_the_groups_order():
    from labcore.config import FIELD_NAMES, GROUPS

    in_groups = [name for g in GROUPS.values() for name in g.names()]
    assert tuple(in_groups) == FIELD_NAMES  # each once, and the flat order is the groups' order
    assert all(0 < len(g.names()) <= 16 for g in GROUPS.values())


def test_a_group_is_the_configs_fields_of_that_group():
    from labcore.config import PrivacyConfig

    c = RunConfig(method="fedmf", encryption="secagg", dropout=0.1)
    p = c.group("privacy")
    assert isinstance(p, PrivacyConfig) and p.encryption == "secagg" and not hasattr(p, "method")
    assert c.group("heterogeneity").dropout == 0.1
    with pytest.raises(ConfigError, match=r"group='dp' is invalid: allowed values are data, method, training"):
        c.group("dp")


def test_each_group_names_its_own_fields_that_cannot_change_a_run():
    from labcore.config import GROUPS

    c = RunConfig()
    unused = {name: set(g.unused(c)) for name, g in GROUPS.items()}
    for name, fields_ in unused.items():
        assert fields_ <= set(GROUPS[name].names()), name
    assert "secagg_threshold" in unused["privacy"] and "straggler_policy" in unused["heterogeneity"]
    assert "checkpoint_every" in unused["training"] and "server_momentum" in unused["algorithm"]

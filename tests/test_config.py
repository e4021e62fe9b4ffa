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

"""Every number of every config is finite and bounded, checked once in `labcore.typed_config` for all of them;
each refusal names the field and what is allowed (issue items: inf through "> 0" checks, nested tiers, seeds)."""
from __future__ import annotations

import pytest

from labcore.typed_config import ConfigError


@pytest.mark.parametrize("query, message", [
    ({"lr": "inf"}, r"^lr=inf is invalid: expected a finite number$"),
    ({"weight_decay": "inf"}, r"^weight_decay=inf is invalid"),
    ({"sec_per_sample": "inf"}, r"^sec_per_sample=inf is invalid"),
    ({"sec_per_sample": "1e300"}, r"^sec_per_sample=1e\+300 is invalid: must be >= 0 and at most 1$"),
    ({"lr": "nan"}, r"^lr=nan is invalid"),
    ({"bandwidth_tiers": "[[1.0,1e309,1]]"}, r"^bandwidth_tiers=.* every number is finite; inf is not"),
    ({"bandwidth_tiers": "[[1,true,1]]"}, r"^bandwidth_tiers=.* every item is a number; True is not"),
    ({"bandwidth_tiers": "[" * 3000}, r"^bandwidth_tiers='\[\[\[.*\(3,002 characters\) is invalid: a JSON list "
                                      r"nested at most 5 levels deep"),
    ({"ckks_coeff_bits": "[" * 3000 + "]" * 3000}, r"^ckks_coeff_bits=.* at most 4096 characters"),
    ({"ckks_scale_bits": str(2**64)}, r"^ckks_scale_bits=18446744073709551616 is invalid: allowed range is 20\.\.60"),
])
def test_run_config_refuses_non_finite_nested_and_overlong_values_by_name(query, message):
    from labcore.config import from_query

    with pytest.raises(ConfigError, match=message):
        from_query(query)


def test_coerce_field_refuses_deep_lists_without_recursion_error():
    from labcore.config import coerce_field

    for name in ("bandwidth_tiers", "ckks_coeff_bits"):
        with pytest.raises(ConfigError, match=f"^{name}="):
            coerce_field(name, "[" * 3000)
    assert coerce_field("bandwidth_tiers", "[[0.5, 1, 1], [0.5, 0.2, 0.2]]") == ((0.5, 1, 1), (0.5, 0.2, 0.2))


def test_fl_backdoor_target_label_is_a_class_of_the_task():
    from labcore.flalgos.config import from_dict

    with pytest.raises(ConfigError, match=r"^target_label=10 is invalid: allowed range is 0\.\.9: task='digits' has "
                                          r"10 classes$"):
        from_dict({"attack": "replacement", "attackers": "1", "target_label": "10"})
    assert from_dict({"task": "femnist", "attack": "replacement", "attackers": "1", "target_label": "61"})
    with pytest.raises(ConfigError, match=r"^mf_dataset='netflix' is invalid: allowed values are synthetic-tiny"):
        from_dict({"task": "mf", "mf_dataset": "netflix"})


@pytest.mark.parametrize("field", ["seed", "graph_seed"])
def test_sdp_seeds_name_their_field_and_the_rng_range(field):
    from labcore.sdp.config import from_dict

    for bad in (str(2**64), "-1"):
        with pytest.raises(ConfigError, match=rf"^{field}=-?\d+ is invalid: allowed range is 0\.\.{2**63 - 1}$"):
            from_dict({field: bad})
    assert getattr(from_dict({field: str(2**63 - 1)}), field) == 2**63 - 1


def test_sttfedrec_init_std_is_refused_at_validation():
    from labcore.sttfedrec.config import from_dict

    with pytest.raises(ConfigError, match=r"^init_std=inf is invalid: expected a finite number$"):
        from_dict({"init_std": "inf"})
    with pytest.raises(ConfigError, match=r"^init_std=100\.0 is invalid: must be > 0 and at most 10$"):
        from_dict({"init_std": "100"})

"""A site config's `routing` section: labels required or refused, speed, transfer rate;
bad values are refused naming the field, and the rules reach the site's entry."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gateway.scheduling.constraints import LabelRules
from gateway.siteconfig import SiteConfigError, validate_site_config
from gateway.siteconfig.routing import DEFAULT_TRANSFER_RATE_MB_S
from tests.siteconfig.conftest import GOOD


def with_routing(routing: Any) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    data["routing"] = routing
    return data


def test_defaults_and_rules() -> None:
    plain = validate_site_config(copy.deepcopy(GOOD))
    assert (plain.routing.speed, plain.routing.transfer_rate_mb_s) == (
        1.0, DEFAULT_TRANSFER_RATE_MB_S)
    assert plain.routing.label_rules() == LabelRules()
    config = validate_site_config(with_routing({
        "requires_labels": {"residency": ["eu", "ch"], "class": []},
        "refuses_labels": {"export": "controlled"},
        "speed": 2.5, "transfer_rate_mb_s": 120, "zones": ["eu", "eu-north"]}))
    assert config.routing.zones == ["eu", "eu-north"]
    assert config.routing.label_rules() == LabelRules(
        requires={"residency": frozenset({"eu", "ch"}), "class": frozenset()},
        refuses={"export": frozenset({"controlled"})})
    assert (config.routing.speed, config.routing.transfer_rate_mb_s) == (2.5, 120.0)


@pytest.mark.parametrize(("routing", "field", "words"), [
    ({"speed": 0}, "routing.speed", "greater than 0"),
    ({"transfer_rate_mb_s": -1}, "routing.transfer_rate_mb_s", "greater than 0"),
    ({"requires_labels": {"bad key!": "x"}}, "routing.requires_labels.bad key!",
     "not a valid label key"),
    ({"refuses_labels": {"residency": ["eu\n"]}}, "routing.refuses_labels.residency[0]",
     "not a valid label value"),
    ({"requires_labels": {"residency": ["eu"]}, "refuses_labels": {"residency": ["eu"]}},
     "routing.refuses_labels.residency", "both required and refused (eu)"),
    ({"requires_labels": {"residency": ["eu"]}, "refuses_labels": {"residency": []}},
     "routing.refuses_labels.residency", "both required and refused (any value)"),
    ({"requires_labels": {"residency": ["eu", "eu"]}}, "routing.requires_labels.residency",
     "listed twice"),
    ({"colour": "red"}, "routing.colour", "unknown field"),
    ({"zones": ["eu\n"]}, "routing.zones[0]", "zone"),
])
def test_bad_routing_is_refused_naming_the_field(routing: dict[str, Any], field: str,
                                                 words: str) -> None:
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(with_routing(routing), "alpha.yaml")
    problems = {p.field: p.message for p in caught.value.problems}
    assert field in problems, problems
    assert words in problems[field], problems[field]


def test_requiring_and_refusing_different_values_is_fine() -> None:
    config = validate_site_config(with_routing({
        "requires_labels": {"residency": ["eu"]}, "refuses_labels": {"residency": ["us"]}}))
    assert config.routing.label_rules().problem({"residency": "eu"}, "alpha") is None

"""The site neighbourhood between cores (`optimize/search/neighbourhood.py`)."""

from __future__ import annotations

from tests.support.differential import SEEDS, case

from gpusolve.optimize.model import Built, build
from gpusolve.optimize.search import neighbourhood


def _three_sites() -> Built:
    for seed in SEEDS:
        built = build(case(seed)[0])
        if len(built.used) >= 3:
            return built
    raise AssertionError("no enumerated instance has three sites")


def _plan_using(built: Built, sites: set[str]) -> dict[int, int]:
    return {var.index: int(site in sites) for site, var in built.used.items()}


def test_the_plan_s_sites_and_the_unused_one_with_the_least_bound() -> None:
    built = _three_sites()
    first, second, third, *_ = sorted(built.used)
    opening = {first: 0.0, second: 7.0, third: 3.0}
    kept = neighbourhood.sites(built, _plan_using(built, {first}), opening, slack=10.0)
    assert kept == {first, third}


def test_no_neighbourhood_when_every_unused_site_costs_the_slack_or_more() -> None:
    built = _three_sites()
    first, second, third, *_ = sorted(built.used)
    opening = {first: 0.0, second: 7.0, third: 3.0}
    assert neighbourhood.sites(built, _plan_using(built, {first}), opening, slack=3.0) is None
    everywhere = _plan_using(built, set(built.used))
    assert neighbourhood.sites(built, everywhere, opening, slack=100.0) is None


def test_sites_without_a_bound_are_not_candidates() -> None:
    built = _three_sites()
    first, second, *_ = sorted(built.used)
    kept = neighbourhood.sites(built, _plan_using(built, {first}), {second: 1.0}, slack=10.0)
    assert kept == {first, second}


def test_elsewhere_closes_exactly_the_choices_at_other_sites() -> None:
    built = _three_sites()
    first, second, *_ = sorted(built.used)
    closed = neighbourhood.elsewhere(built, frozenset({first, second}))
    for o in built.owned:
        assert (o.var.index in closed) == (o.placement.site not in {first, second})
    assert not closed & {c.var.index for c in built.cloud}

"""The dichotomy bound (`dichotomy.py`): which workload it splits on, and that the weaker
half's LP bound holds for every plan while lifting the LP's bound where a workload is
split between places."""

from __future__ import annotations

import pytest
from tests.support.differential import SEEDS, case, leading_lp, normalised
from tests.support.optimize_reference import optimum

from gpusolve.optimize.model import Built, build
from gpusolve.optimize.search import dichotomy
from gpusolve.optimize.tuning import DEFAULT


def _built_with_cloud_and_owned(others: int = 0) -> tuple[Built, str]:
    """A built random instance and one of its workloads that can run both in the cloud
    and at two sites, in an instance where `others` more workloads run in two places."""
    for seed in SEEDS:
        built = build(case(seed)[0])
        by_workload = dichotomy.groups(built)
        placed_twice = sum(1 for by_group in by_workload.values() if len(by_group) >= 2)
        for workload, by_group in by_workload.items():
            if None in by_group and len(by_group) >= 3 and placed_twice > others:
                return built, workload
    raise AssertionError("no instance has a workload with cloud and two sites")


def _integral(built: Built) -> list[float]:
    """LP values putting every workload wholly on its first choice."""
    values = [0.0] * len(built.model.proto.variables)
    for by_group in dichotomy.groups(built).values():
        first = next(iter(by_group.values()))
        values[first[0]] = 1.0
    return values


def _spread(built: Built, workload: str, masses: dict[dichotomy.Group, float]) -> list[float]:
    values = _integral(built)
    by_group = dichotomy.groups(built)[workload]
    for indices in by_group.values():
        for index in indices:
            values[index] = 0.0
    for group, mass in masses.items():
        values[by_group[group][0]] = mass
    return values


def test_no_workload_split_across_places_gives_no_split() -> None:
    built, workload = _built_with_cloud_and_owned()
    assert dichotomy.split(built, _integral(built)) is None
    # Split between two choices of the same place is no split either.
    cloud = dichotomy.groups(built)[workload][None]
    values = _spread(built, workload, {})
    if len(cloud) >= 2:
        values[cloud[0]] = values[cloud[1]] = 0.5
        assert dichotomy.split(built, values) is None


@pytest.mark.parametrize("heaviest", ["cloud", "site"])
def test_the_split_puts_the_heaviest_place_on_one_side(heaviest: str) -> None:
    built, workload = _built_with_cloud_and_owned()
    by_group = dichotomy.groups(built)[workload]
    site_a, site_b = [group for group in by_group if group is not None][:2]
    top = None if heaviest == "cloud" else site_a
    rest = [group for group in (None, site_a, site_b) if group != top]
    masses = {top: 0.5, rest[0]: 0.3, rest[1]: 0.2}
    halves = dichotomy.split(built, _spread(built, workload, masses))
    assert halves is not None
    inside, outside = halves
    assert sorted(inside) == sorted(by_group[top])
    everything = [index for indices in by_group.values() for index in indices]
    assert sorted(inside + outside) == sorted(everything)


def test_the_most_evenly_split_workload_is_chosen() -> None:
    built, workload = _built_with_cloud_and_owned(others=1)
    by_workload = dichotomy.groups(built)
    other = next(w for w, groups in by_workload.items() if w != workload and len(groups) >= 2)
    values = _spread(built, workload, dict(zip(by_workload[workload], [0.9, 0.1], strict=False)))
    first, second = list(by_workload[other])[:2]
    for index in by_workload[other][first] + by_workload[other][second]:
        values[index] = 0.0
    values[by_workload[other][first][0]] = 0.6
    values[by_workload[other][second][0]] = 0.4
    halves = dichotomy.split(built, values)
    assert halves is not None
    assert sorted(halves[0]) == sorted(by_workload[other][first])


def _bounds(seed: int) -> tuple[float, float | None, float | None]:
    """The LP's bound, the dichotomy's and the optimum, all on the normalised leading
    criterion (None: no dichotomy bound; no plan)."""
    built, head, translated, lp = leading_lp(seed)
    if lp is None:
        return float("nan"), None, None
    lifted = dichotomy.bound(translated, built, lp, 10.0)
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    return lp.bound, lifted, None if ref is None else normalised(head, ref[0])


def test_the_bound_holds_for_every_plan_and_lifts_the_lp() -> None:
    lifted_on = []
    for seed in SEEDS:
        lp_bound, lifted, best = _bounds(seed)
        if lifted is None:
            continue
        assert lifted >= lp_bound * (1 + DEFAULT.dichotomy_min_gain) - 1e-6, seed
        if best is not None:
            assert lifted <= best + 1e-6, seed
        lifted_on.append(seed)
    # Enough instances have a split workload for the check above to mean something.
    assert len(lifted_on) >= 5, lifted_on

"""Differential tests: the CP-SAT model against a brute-force enumerator.

On a few hundred seeded random small instances (up to 3 workloads, 4 SKUs, 3 sites, 2 cloud
offers per workload; small racks so packing and availability matter; some options violate
requirements; budgets sometimes binding; all four objectives) the model must find exactly
the reference optimum, including the lexicographic TCO at that optimum, and the same
feasibility verdict, with every packing formulation (pattern columns, and both fallbacks:
the relaxation with lazy cuts and one vector per rack); every plan must pass the
independent checker. Infeasible instances must be
explained by a set of requirements that really conflicts and is minimal, a minimum-weight
correction set, and exact relaxation amounts. Top-k must return the reference's next-best
distinct plans.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any, Literal

import pytest
from tests.factories.instances import ONE
from tests.support.differential import SEEDS, case
from tests.support.optimize_reference import (
    business_key,
    choices_of,
    feasible_under,
    optimum,
)

from gpusolve.optimize import solve as solve_module
from gpusolve.optimize.alternatives import alternatives
from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.explain import explain, relaxation
from gpusolve.optimize.ir import Instance, Solution
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.search import core, lazy, neighbourhood, warmstart
from gpusolve.optimize.solve import solve
from gpusolve.optimize.stages import var_bounds
from gpusolve.optimize.tuning import Tuning
from gpusolve.optimize.validate import check


def _assert_matches(
    seed: int, solution: Solution, instance: Instance, ref: tuple[int, int] | None
) -> None:
    if ref is None:
        assert solution.status == "infeasible", f"seed {seed}: reference has no plan"
        return
    assert solution.status == "optimal", f"seed {seed}: {solution.status}"
    assert solution.costs is not None
    assert (solution.objective_value, solution.costs.objective_tco) == ref, f"seed {seed}"
    assert solution.best_bound == solution.objective_value
    assert check(instance, solution) == [], f"seed {seed}"


@pytest.mark.parametrize("seed", SEEDS)
def test_model_matches_enumeration(seed: int) -> None:
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    _assert_matches(seed, solve(instance, ONE), instance, ref)


@pytest.mark.parametrize("seed", SEEDS[::5])
def test_warm_start_matches_enumeration(seed: int) -> None:
    """These instances are below the warm start's size threshold: force it on. The search
    then starts from the warm start's restricted plan (LP pool included); the optimum must
    not move."""
    config = dataclasses.replace(ONE, tuning=Tuning(warm_min_choices=0))
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    _assert_matches(seed, solve(instance, config), instance, ref)


@pytest.mark.parametrize("seed", SEEDS[::10])
def test_large_model_settings_match_enumeration(seed: int) -> None:
    """Models above the LNS threshold are solved without LNS workers, by the two full
    subsolvers: still exact."""
    tuning = Tuning(lns_max_choices=0, parallel_min_choices=0)
    config = dataclasses.replace(ONE, workers=2, tuning=tuning)
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    _assert_matches(seed, solve(instance, config), instance, ref)


@pytest.mark.parametrize("fallback", ["lazy", "bins"])
@pytest.mark.parametrize("seed", SEEDS[::3])
def test_pattern_fallbacks_match_enumeration(seed: int, fallback: Literal["lazy", "bins"]) -> None:
    """pattern_limit=0 forces every site onto the fallback: the packing relaxation with
    lazy exact cuts, or one integer vector per rack."""
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    solution = solve(instance, ONE, BuildOptions(pattern_limit=0, fallback=fallback))
    _assert_matches(seed, solution, instance, ref)


@pytest.mark.parametrize("seed", SEEDS[::3])
def test_cuts_at_any_hint_keep_the_optimum(seed: int) -> None:
    """A hint's cuts (`lazy.hinted_cuts`) hold for every plan, not only near the hint: from
    an arbitrary hint, every variable random within its domain, the optimum is unchanged.
    pattern_limit=0 puts every site on the relaxation."""
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    built = build(instance, BuildOptions(pattern_limit=0))
    solution = solve_module.solve_built(built, ONE, hint=_random_hint(built, seed)).solution
    _assert_matches(seed, solution, instance, ref)


def test_hints_cut_on_most_instances() -> None:
    """The test above is only as good as the cuts it makes: most instances get some."""
    made = 0
    for seed in SEEDS[::3]:
        instance, _ = case(seed)
        built = build(instance, BuildOptions(pattern_limit=0))
        made += bool(lazy.hinted_cuts(built.relaxed, _random_hint(built, seed)))
    assert made >= len(SEEDS[::3]) // 2


def _random_hint(built: Built, seed: int) -> dict[int, int]:
    """Every variable of the model at a random value within its domain (at most 6 above
    its lower bound, so counts stay near what small racks hold)."""
    rng = random.Random(seed)
    bounds = var_bounds(built.model)
    return {
        var.index: rng.randint(
            bounds[var.index][0], min(bounds[var.index][1], bounds[var.index][0] + 6)
        )
        for var in built.all_vars()
    }


def test_generator_covers_the_interesting_cases() -> None:
    """The differential test is only as good as its instances: make sure they include
    infeasible ones, multi-rack packings, rack limits, budgets that cut, and each objective."""
    seen: set[str] = set()
    for seed in SEEDS:
        instance, evaluated = case(seed)
        ref = optimum(instance, evaluated)
        seen.add(instance.objective)
        if ref is None:
            seen.add("infeasible")
            continue
        seen.add("feasible")
        if any(count > 1 for e in evaluated if not e.violated for _, count in e.racks):
            seen.add("multi-rack")
        for e in evaluated:
            seen |= {name.split(":")[0] for name in e.violated}
    assert seen >= {
        "min-tco",
        "min-capex",
        "min-monthly",
        "max-throughput",
        "infeasible",
        "feasible",
        "multi-rack",
        "racks",
        "capex",
        "monthly",
        "deadline",
        "regions",
    }


def _weight(instance: Instance, names: frozenset[str]) -> int:
    reqs = instance.requirements
    return sum(max(1, reqs[n].weight) if n in reqs else 1 for n in names)


@pytest.mark.parametrize("seed", SEEDS)
def test_explanation_is_a_minimal_conflict(seed: int) -> None:
    instance, evaluated = case(seed)
    found = explain(instance, ONE)
    if optimum(instance, evaluated) is not None:
        assert found is None
        return
    assert found is not None
    unplaceable = tuple(w for w in instance.workloads if not choices_of(instance, w))
    assert found.unplaceable == unplaceable
    if unplaceable:
        return
    names = frozenset(build(instance, BuildOptions(mode="explain")).literals)
    conflict = frozenset(found.conflict)
    assert found.minimal
    assert not feasible_under(evaluated, conflict), "the conflict must really conflict"
    for name in conflict:
        assert feasible_under(evaluated, conflict - {name}), f"{name} is not needed"
    assert set(found.requirements) >= conflict
    # Minimum correction set: relaxing it restores a plan, and nothing lighter does.
    correction = frozenset(found.correction)
    assert feasible_under(evaluated, names - correction)
    cheaper = [
        subset
        for k in range(len(names) + 1)
        for subset in map(frozenset, itertools.combinations(sorted(names), k))
        if _weight(instance, subset) < _weight(instance, correction)
    ]
    assert not any(feasible_under(evaluated, names - s) for s in cheaper)


@pytest.mark.parametrize("seed", SEEDS[::2])
def test_relaxation_amounts_are_exact(seed: int) -> None:
    instance, evaluated = case(seed)
    names = frozenset(build(instance, BuildOptions(mode="explain")).literals)
    for name in ("capex", "monthly", *(f"racks:{s}" for s in sorted(instance.sites))):
        others = names - {name}
        pool = [e for e in evaluated if not (e.violated & others)]
        expected: int | None = None
        if pool and name == "capex" and instance.capex_max is not None:
            expected = min(e.capex for e in pool)
        elif pool and name == "monthly" and instance.monthly_max is not None:
            expected = min(-(-e.opex // instance.horizon_months) for e in pool)
        elif pool and name in names and name.startswith("racks:"):
            expected = min(dict(e.racks).get(name.removeprefix("racks:"), 0) for e in pool)
        found = relaxation(instance, name, ONE)
        assert (found.needed if found else None) == expected, f"seed {seed} {name}"


@pytest.mark.parametrize("seed", SEEDS[::3])
def test_top_k_are_the_next_best_distinct_plans(seed: int) -> None:
    instance, evaluated = case(seed)
    plans = alternatives(instance, 4, ONE)
    feasible = [e for e in evaluated if not e.violated]
    if not feasible:
        assert plans == []
        return
    sign = -1 if instance.objective == "max-throughput" else 1
    taken: set[tuple[tuple[str, str, str], ...]] = set()
    previous: int | None = None
    for plan in plans:
        solution = plan.solution
        assert solution.costs is not None and solution.objective_value is not None
        assert check(instance, solution) == []
        rest = [e for e in feasible if business_key(instance, e.keys) not in taken]
        best = min(sign * e.primary(instance.objective) for e in rest)
        at_best = [e for e in rest if sign * e.primary(instance.objective) == best]
        assert solution.objective_value == sign * best
        assert solution.costs.objective_tco == min(e.tco + e.penalties for e in at_best)
        if previous is not None:
            assert sign * solution.objective_value >= sign * previous
        previous = solution.objective_value
        key = business_key(instance, tuple((c.option, c.site) for c in solution.choices))
        assert key not in taken
        taken.add(key)
    remaining = {business_key(instance, e.keys) for e in feasible} - taken
    assert len(plans) == 4 or not remaining


@pytest.mark.parametrize("seed", SEEDS[::4])
def test_core_search_matches_enumeration(seed: int) -> None:
    """Force the core search (`core.py`) on: each core's optimum must be proven against
    the LP's bound on everything outside it, or the core grows until it is."""
    config = dataclasses.replace(ONE, tuning=Tuning(core_min_choices=0))
    instance, evaluated = case(seed)
    ref = optimum(instance, evaluated)
    _assert_matches(seed, solve(instance, config), instance, ref)


def test_core_search_from_the_lp_face_alone_matches_enumeration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No warm start and no candidates kept: the first core is the LP optimum's face (zero
    reduced cost), often without the optimum or any plan, so cores must grow, and the site
    neighbourhood (`neighbourhood.py`) runs between them; both must have happened on some
    of the instances for this test to mean anything."""
    monkeypatch.setattr(warmstart, "candidates", lambda *args: [])
    grown: set[int] = set()
    searched: set[int] = set()
    seed = -1
    grow = core.next_threshold
    pick = neighbourhood.sites

    def counted(*args: Any) -> float | None:
        threshold = grow(*args)
        if threshold is not None:
            grown.add(seed)
        return threshold

    def picked(*args: Any) -> frozenset[str] | None:
        kept = pick(*args)
        if kept is not None:
            searched.add(seed)
        return kept

    monkeypatch.setattr(core, "next_threshold", counted)
    monkeypatch.setattr(neighbourhood, "sites", picked)
    config = dataclasses.replace(ONE, warm_start=False, tuning=Tuning(core_min_choices=0))
    for seed in SEEDS[::4]:
        instance, evaluated = case(seed)
        ref = optimum(instance, evaluated)
        _assert_matches(seed, solve(instance, config), instance, ref)
    assert len(grown) >= 5, sorted(grown)
    assert len(searched) >= 3, sorted(searched)

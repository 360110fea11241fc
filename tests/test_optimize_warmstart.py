"""The standalone-cheapest warm start: what it picks, when it gives up, and that it never
changes the optimum."""

from __future__ import annotations

import dataclasses

from ortools.sat.python import cp_model
from tests.factories.instances import ONE, TWO, instance, owned, rented, site
from tests.support.solutions import plan

from gpusolve.optimize.ir import Instance, SolveConfig
from gpusolve.optimize.model import build
from gpusolve.optimize.search import relaxation, warmstart
from gpusolve.optimize.solve import criteria, fold, solve
from gpusolve.optimize.tuning import Tuning


def day_and_night() -> Instance:
    # Alone, each workload would rent (3000) rather than buy 4 servers: capex 4000 +
    # energy 12 x 4 x 10 = 480 + 2 racks x 5 x 12 = 120 -> 4600. Together they share the
    # same 4 servers (day and night), so owning once (4600) beats renting twice (6000).
    return instance(
        ("train", "infer"),
        (owned("t", "train", 4, "day"), owned("i", "infer", 4, "night")),
        (
            rented("ct", "train", 4, 3000),
            rented("ci", "infer", 4, 3000),
        ),
    )


# These hand-made instances are far below the size threshold: the warm start is forced on.
WARM = Tuning(warm_min_choices=0)
# One fallback choice per workload: its standalone one, and its rentals.
ONE_FALLBACK = dataclasses.replace(WARM, fallback_choices=1)


def warm(config: SolveConfig, tuning: Tuning = WARM) -> SolveConfig:
    return dataclasses.replace(config, tuning=tuning)


def hint_objective(
    inst: Instance, with_lp: bool = False, tuning: Tuning = WARM
) -> tuple[dict[int, int], int]:
    built = build(inst)
    head = criteria(built)[:1]
    objective, _ = fold(head)
    lp = relaxation.translate(built.model, head[0].normalised()).solve(10.0) if with_lp else None
    values = None if lp is None else lp.values
    hint = warmstart.warm_hint(built, objective, 10.0, values, tuning)
    model = built.model.clone()
    for var in built.all_vars():
        model.add(var == hint[var.index])
    model.minimize(built.tco + built.penalties)
    solver = cp_model.CpSolver()
    assert solver.solve(model) == cp_model.OPTIMAL, "the hint must be a feasible plan"
    return hint, int(solver.objective_value)


def test_standalone_prices_owned_options_as_if_alone() -> None:
    inst = day_and_night()
    option = inst.owned[0]
    assert warmstart.standalone_owned(inst, option, option.placements[0]) == 4600


def test_the_hint_is_the_standalone_plan_and_the_solve_still_finds_the_joint_optimum() -> None:
    # One fallback choice per workload is its standalone one (here the rental), so without
    # the LP pool the restricted plan is the standalone plan.
    inst = day_and_night()
    built = build(inst)
    chosen = {var.index for var in warmstart.standalone_choices(built)}
    assert chosen == {c.var.index for c in built.cloud}
    hint, cost = hint_objective(inst, tuning=ONE_FALLBACK)
    assert len(hint) == len(built.all_vars())
    assert cost == 6000
    tuning = dataclasses.replace(ONE_FALLBACK, parallel_min_choices=0)  # 2 workers for TWO
    for config in (warm(ONE, tuning), warm(TWO, tuning)):
        solution = solve(inst, config)
        assert solution.status == "optimal" and solution.objective_value == 4600
        assert plan(solution) == {"train": ("t", "sz"), "infer": ("i", "sz")}


def test_the_lp_pool_finds_the_shared_plan_the_standalone_choices_miss() -> None:
    # The LP relaxation shares the 4 servers between day and night, so its support is the
    # two owned choices on (h100, sz); the pool opens them and the hint is the joint
    # optimum (4600) instead of renting twice (6000).
    inst = day_and_night()
    built = build(inst)
    support = {o.var.index for o in built.owned if o.option.key == "t"}
    pool = {var.index for var in warmstart.pool_choices(built, support)}
    assert pool == {o.var.index for o in built.owned}
    assert hint_objective(inst, tuning=ONE_FALLBACK)[1] == 6000
    assert hint_objective(inst, with_lp=True, tuning=ONE_FALLBACK)[1] == 4600


def test_without_the_lp_the_pool_keeps_only_the_supported_rentals() -> None:
    inst = day_and_night()
    built = build(inst)
    rental = next(c.var.index for c in built.cloud if c.option.key == "ct")
    assert [var.index for var in warmstart.pool_choices(built, {rental})] == [rental]


def two_purchases_one_budget(cloud: bool = True) -> Instance:
    # Each workload alone buys 2 servers (capex 2000, TCO 2300 < renting at 5000), but a
    # 3000 capex cap allows only one purchase: the standalone plan (4000) breaks it.
    rentals = (
        rented("ca", "a", 2, 5000),
        rented("cb", "b", 2, 5000),
    )
    return instance(
        ("a", "b"),
        (owned("oa", "a", 2), owned("ob", "b", 2)),
        rentals if cloud else (),
        capex_max=3000,
    )


def test_when_the_standalone_plan_breaks_a_budget_the_hint_is_the_best_fallback_plan() -> None:
    # With one owned choice per workload the fallback is that choice or renting: the best
    # such plan buys for one workload and rents for the other, 2300 + 5000.
    inst = two_purchases_one_budget()
    built = build(inst)
    standalone = [var.index for var in warmstart.standalone_choices(built)]
    assert standalone == [o.var.index for o in built.owned]
    _, cost = hint_objective(inst, tuning=ONE_FALLBACK)
    assert cost == 2300 + 5000
    with_hint = solve(inst, warm(ONE, ONE_FALLBACK))
    without = solve(inst, dataclasses.replace(warm(ONE, ONE_FALLBACK), warm_start=False))
    assert with_hint.status == without.status == "optimal"
    assert with_hint.objective_value == without.objective_value == 2300 + 5000


def test_the_fallback_keeps_the_cheapest_choices_and_every_rental() -> None:
    # One server at three sites, rent 5 / 10 / 20 a month: standalone 1000 + 12 x (10 +
    # rent) = 1180 / 1240 / 1360; renting 9000. Two choices kept: the two cheapest sites,
    # and the rental although it is the dearest.
    sites = (site("a", rent=5), site("b", rent=10), site("c", rent=20))
    inst = instance(
        ("w",),
        (owned("o", "w", 1, sites=("c", "a", "b")),),
        (rented("r", "w", 1, 9000),),
        sites,
    )
    built = build(inst)
    ranked = warmstart.ranked_choices(built)
    name = {o.var.index: o.placement.site for o in built.owned}
    name |= {c.var.index: c.option.key for c in built.cloud}
    assert [name[var.index] for var in ranked["w"]] == ["a", "b", "c", "r"]
    allowed = {name[var.index] for var in warmstart.fallback_choices(built, ranked, 2)}
    assert allowed == {"a", "b", "r"}


def test_no_hint_when_neither_the_standalone_plan_nor_the_fallback_fits() -> None:
    # Without rentals the budget allows one purchase for two workloads: no plan at all.
    inst = two_purchases_one_budget(cloud=False)
    built = build(inst)
    objective, _ = fold(criteria(built)[:1])
    assert warmstart.warm_hint(built, objective, 10.0, None, WARM) == {}
    assert solve(inst, warm(ONE)).status == "infeasible"


def test_no_hint_when_a_workload_has_no_choice_in_the_model() -> None:
    # A 20 kW server cannot go into 10 kW racks and there is no rental: no plan to hint.
    inst = instance(("w",), (owned("o", "w", 1, sku="hot"),), (), (site(rack_w=10_000),))
    built = build(inst)
    objective, _ = fold(criteria(built)[:1])
    assert warmstart.warm_hint(built, objective, 10.0, None, WARM) == {}

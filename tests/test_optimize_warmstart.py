"""The standalone-cheapest warm start: what it picks, when it gives up, and that it never
changes the optimum."""

from __future__ import annotations

import dataclasses

import pytest
from ortools.sat.python import cp_model
from tests.test_optimize_cases import ONE, TWO, instance, owned, plan, site

from gpusolve.optimize import warmstart
from gpusolve.optimize.ir import CloudOption, Instance
from gpusolve.optimize.model import build
from gpusolve.optimize.solve import criteria, fold, solve


def day_and_night() -> Instance:
    # Alone, each workload would rent (3000) rather than buy 4 servers: capex 4000 +
    # energy 12 x 4 x 10 = 480 + 2 racks x 5 x 12 = 120 -> 4600. Together they share the
    # same 4 servers (day and night), so owning once (4600) beats renting twice (6000).
    return instance(
        ("train", "infer"),
        (owned("t", "train", 4, "day"), owned("i", "infer", 4, "night")),
        (
            CloudOption("ct", "train", "cloud", "cloud", 4, cost_total=3000),
            CloudOption("ci", "infer", "cloud", "cloud", 4, cost_total=3000),
        ),
    )


@pytest.fixture(autouse=True)
def always_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """These hand-made instances are far below the size threshold."""
    monkeypatch.setattr(warmstart, "MIN_CHOICES", 0)


def hint_objective(inst: Instance) -> tuple[dict[int, int], int]:
    built = build(inst)
    objective, _ = fold(criteria(built)[:1])
    hint = warmstart.greedy_hint(built, objective, 10.0)
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
    inst = day_and_night()
    built = build(inst)
    chosen = {var.index for var in warmstart.standalone_choices(built)}
    assert chosen == {c.var.index for c in built.cloud}
    hint, cost = hint_objective(inst)
    assert len(hint) == len(built.all_vars())
    assert cost == 6000
    for config in (ONE, TWO):
        solution = solve(inst, config)
        assert solution.status == "optimal" and solution.objective_value == 4600
        assert plan(solution) == {"train": ("t", "sz"), "infer": ("i", "sz")}


def test_no_hint_when_the_standalone_plan_breaks_a_shared_budget() -> None:
    # Each workload alone buys 2 servers (capex 2000, TCO 2300 < renting at 5000), but a
    # 3000 capex cap allows only one purchase: the standalone plan (4000) breaks it.
    inst = instance(
        ("a", "b"),
        (owned("oa", "a", 2), owned("ob", "b", 2)),
        (
            CloudOption("ca", "a", "cloud", "cloud", 2, cost_total=5000),
            CloudOption("cb", "b", "cloud", "cloud", 2, cost_total=5000),
        ),
        capex_max=3000,
    )
    built = build(inst)
    objective, _ = fold(criteria(built)[:1])
    assert warmstart.greedy_hint(built, objective, 10.0) == {}
    with_hint = solve(inst, ONE)
    without = solve(inst, dataclasses.replace(ONE, warm_start=False))
    assert with_hint.status == without.status == "optimal"
    assert with_hint.objective_value == without.objective_value == 2300 + 5000


def test_no_hint_when_a_workload_has_no_choice_in_the_model() -> None:
    # A 20 kW server cannot go into 10 kW racks and there is no rental: no plan to hint.
    inst = instance(("w",), (owned("o", "w", 1, sku="hot"),), (), (site(rack_w=10_000),))
    built = build(inst)
    objective, _ = fold(criteria(built)[:1])
    assert warmstart.greedy_hint(built, objective, 10.0) == {}

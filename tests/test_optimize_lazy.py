"""The packing relaxation with lazy exact cuts (`optimize/search/lazy.py`)."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from tests.factories.instances import ONE, instance, owned, rented
from tests.support.optimize_reference import min_racks

from gpusolve.optimize import solve as solve_module
from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.ir import Instance, OwnedOption, Placement, Site, Sku
from gpusolve.optimize.model import build
from gpusolve.optimize.packing import RelaxedSite
from gpusolve.optimize.patterns import Shape, maximal_fills
from gpusolve.optimize.search import lazy, staged
from gpusolve.optimize.search.staged import LazyStages
from gpusolve.optimize.solve import solve
from gpusolve.optimize.tuning import DEFAULT, Tuning
from gpusolve.optimize.validate import check


def brute_force_racks(shapes: list[Shape], counts: list[int], rack_w: int, units: int) -> int:
    """Fewest racks by trying every grouping of the items (the reference enumeration's
    `min_racks`; trying every rack number for every item took minutes on nine items)."""
    items = tuple(
        (s.power_w, s.rack_units) for s, c in zip(shapes, counts, strict=True) for _ in range(c)
    )
    return min_racks(items, rack_w, units)


shape = st.builds(Shape, st.integers(1, 10), st.integers(1, 10))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(shape, st.integers(0, 3)), min_size=1, max_size=3))
def test_exact_packing_matches_brute_force(items: list[tuple[Shape, int]]) -> None:
    shapes, counts = merged(items)
    if sum(counts) > 6:
        counts = [min(c, 2) for c in counts]
    expected = brute_force_racks(shapes, counts, 10, 10)
    assert lazy.rack_count(shapes, counts, 10, 10) == expected
    fills = lazy.pack(tuple(shapes), tuple(counts), 10, 10)
    assert len(fills) == expected
    assert [sum(f[h] for f in fills) for h in range(len(shapes))] == counts
    for fill in fills:
        assert sum(s.power_w * c for s, c in zip(shapes, fill, strict=True)) <= 10
        assert sum(s.rack_units * c for s, c in zip(shapes, fill, strict=True)) <= 10


def test_lower_bound_counts_power_space_and_per_shape() -> None:
    shapes = [Shape(7, 1), Shape(4, 1)]
    assert lazy.lower_bound(shapes, [3, 1], 10, 10) == math.ceil(25 / 10)
    assert lazy.lower_bound([Shape(1, 4)], [5], 10, 10) == math.ceil(5 / 2)


# Three 7 kW servers and one 4 kW server in 10 kW racks: the summed capacities and the
# "at most one item above half a rack" count say 3 racks, but 7 + 4 > 10, so 4 are needed.
HOT = Sku("hot", capex=100, power_w=7_000, rack_units=1, cooling=frozenset({"air"}))
WARM = Sku("warm", capex=100, power_w=4_000, rack_units=1, cooling=frozenset({"air"}))
SITE = Site("sz", "east", "air", 10_000, 10, 10, 1_000, 0, {"hot": 1, "warm": 1})


def tight_instance() -> Instance:
    return Instance(
        workloads=("a", "b"),
        skus={"hot": HOT, "warm": WARM},
        sites={"sz": SITE},
        owned=(
            OwnedOption("a", "a", "hot", 3, "always", (Placement("sz"),)),
            OwnedOption("b", "b", "warm", 1, "always", (Placement("sz"),)),
        ),
        cloud=(rented("b-cloud", "b", 1, 10_000_000, offer="rent", region="east"),),
        horizon_months=12,
    )


@pytest.fixture
def cuts_added(monkeypatch: pytest.MonkeyPatch) -> list[lazy.Cut]:
    """Every cut the solves add, in order."""
    added: list[lazy.Cut] = []
    original = lazy.violated

    def counting(*args: Any) -> list[lazy.Cut]:
        cuts = original(*args)
        added.extend(cuts)
        return cuts

    monkeypatch.setattr(lazy, "violated", counting)
    return added


@pytest.mark.parametrize("fallback", ["lazy", "bins"])
def test_relaxation_is_made_exact_by_cuts(
    fallback: Literal["lazy", "bins"], cuts_added: list[lazy.Cut]
) -> None:
    instance = tight_instance()
    options = BuildOptions(pattern_limit=0, fallback=fallback)
    assert build(instance, options).stats["relaxed_sites"] == (fallback == "lazy")
    solution = solve(instance, ONE, options)
    assert solution.status == "optimal"
    assert check(instance, solution) == []
    assert sum(solution.racks.values()) == 4
    assert solution.costs is not None and solution.costs.rack_rent == 4 * 12 * 1_000
    if fallback == "lazy":
        # A 7 kW server fills a rack alone, two 4 kW share one: weights 1 and 1/2 (of 840)
        # say 3.5 racks for (3, 1), so the linear row alone already forbids 3.
        assert cuts_added == [lazy.Cut("sz", (3, 1), 4, (840, 420), 840)]


def test_explain_mode_never_relaxes() -> None:
    built = build(tight_instance(), BuildOptions(mode="explain", pattern_limit=0))
    assert built.stats["relaxed_sites"] == 0 and built.stats["bin_sites"] == 1


def test_exact_packing_of_a_relaxed_site(
    cuts_added: list[lazy.Cut],
) -> None:
    """A site upgraded to per-rack variables needs no cuts and packs exactly."""
    all_exact = dataclasses.replace(ONE, tuning=Tuning(exact_after_cuts=0))
    instance = tight_instance()
    solution = solve(instance, all_exact, BuildOptions(pattern_limit=0))
    assert solution.status == "optimal" and check(instance, solution) == []
    assert sum(solution.racks.values()) == 4
    assert cuts_added == []


def test_a_site_cut_twice_becomes_exact() -> None:
    from gpusolve.optimize.ir import SolveConfig

    built = build(tight_instance(), BuildOptions(pattern_limit=0))
    stages = LazyStages(built, SolveConfig(), None, 0.0)
    first = [lazy.Cut("sz", (3, 1), 4)]
    stages._upgrade(first)
    stages.cuts += first
    assert stages.exact == set()
    stages._upgrade([lazy.Cut("sz", (3, 2), 5)])
    assert stages.exact == {"sz"}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(shape, min_size=1, max_size=4, unique=True),
    st.lists(st.integers(0, 6), min_size=4, max_size=4),
)
def test_dual_weights_hold_for_every_rack(shapes: list[Shape], counts: list[int]) -> None:
    """Whatever the plan: every rack a fill can make weighs at most the scale, over all
    shapes (those absent from `counts` included, through the size extension)."""
    shapes = sorted(shapes, reverse=True)
    counts = counts[: len(shapes)]
    if not any(counts):
        return
    weights = lazy.dual_weights(shapes, counts, 10, 10)
    assert len(weights) == len(shapes)
    for fill in maximal_fills(shapes, 10, 10):
        assert sum(w * f for w, f in zip(weights, fill, strict=True)) <= 840
    # The weighted row never undercuts the true count on the counts it was built for.
    needed = lazy.rack_count(shapes, counts, 10, 10)
    assert sum(w * c for w, c in zip(weights, counts, strict=True)) <= 840 * needed


def merged(items: list[tuple[Shape, int]]) -> tuple[list[Shape], list[int]]:
    """Distinct shapes, largest first, and the summed count of each."""
    total: dict[Shape, int] = {}
    for s, c in items:
        total[s] = total.get(s, 0) + c
    shapes = sorted(total, reverse=True)
    return shapes, [total[s] for s in shapes]


def relaxed_site(shapes: list[Shape], rack_w: int, units: int) -> RelaxedSite:
    """The packing facts of a relaxed site; the model handles are placeholders."""
    model = cp_model.CpModel()
    demand = tuple(model.new_int_var(0, 10, f"d{h}") for h in range(len(shapes)))
    return RelaxedSite(
        "s", tuple(shapes), rack_w, units, demand, model.new_int_var(0, 10, "r"), (), 10
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(shape, st.integers(0, 2)), min_size=1, max_size=3),
    st.integers(0, 4),
)
def test_packs_is_exact_on_small_sites(items: list[tuple[Shape, int]], racks: int) -> None:
    shapes, counts = merged(items)
    rel = relaxed_site(shapes, 10, 10)
    assert lazy.packs(rel, counts, racks) == (brute_force_racks(shapes, counts, 10, 10) <= racks)


def test_packs_says_no_when_first_fit_misses_and_the_fills_are_too_many() -> None:
    # 5, 4, 3, 3, 3, 2 kW in 10 kW racks: 2 racks (5+3+2, 4+3+3), first-fit decreasing 3.
    shapes = [Shape(5, 1), Shape(4, 1), Shape(3, 1), Shape(2, 1)]
    counts = [1, 1, 3, 1]
    rel = relaxed_site(shapes, 10, 42)
    assert lazy.packs(rel, counts, 2)
    assert not lazy.packs(rel, counts, 1)  # the lower bound alone
    assert not lazy.packs(rel, counts, 2, fill_limit=1)  # not known to fit: never claimed
    assert lazy.packs(rel, counts, 3, fill_limit=1)  # first-fit decreasing needs no fills


def test_a_timed_out_stage_tries_the_cheaper_of_the_repaired_and_the_packed_plan() -> None:
    built = build(instance(("a",), (owned("o", "a", 1),)))
    x = built.choice_vars()[0]
    objective = 3 * x + 5
    watch = staged.PackedPlans(built, [], DEFAULT.fill_limit)
    repaired = {x.index: 1}  # worth 8
    assert staged.cheapest_first(objective, repaired, watch) == [repaired]
    watch.objective, watch.values = 6, {x.index: 0}
    assert staged.cheapest_first(objective, repaired, watch) == [watch.values, repaired]
    watch.objective = 9
    assert staged.cheapest_first(objective, repaired, watch) == [repaired, watch.values]
    assert staged.cheapest_first(objective, repaired, None) == [repaired]


def test_settling_on_plans_that_do_not_hold_is_unknown_never_infeasible() -> None:
    built = build(instance(("a",), (owned("o", "a", 1),)))
    stages = LazyStages(built, ONE, None, time.perf_counter())
    nothing = {var.index: 0 for var in built.all_vars()}  # no choice: breaks exactly-one
    assert stages.settle(built.tco, [nothing], [])[1] == cp_model.UNKNOWN
    real = solve_module.solve_built(built, ONE).values
    solver, status = stages.settle(built.tco, [nothing, real], [])
    assert status == cp_model.FEASIBLE
    assert solver.value(built.choice_vars()[0]) == 1


def test_a_packing_too_large_to_check_makes_the_site_exact(
    cuts_added: list[lazy.Cut],
) -> None:
    """With no fills allowed, (3 hot, 1 warm) cannot be packed exactly: first-fit needs 4
    racks, the lower bound says 3. The cut says only what is known and the site is packed
    per rack from then on; the optimum is the same."""
    no_fills = dataclasses.replace(ONE, tuning=Tuning(fill_limit=0))
    instance = tight_instance()
    solution = solve(instance, no_fills, BuildOptions(pattern_limit=0))
    assert solution.status == "optimal" and check(instance, solution) == []
    assert sum(solution.racks.values()) == 4
    assert cuts_added == [lazy.Cut("sz", (3, 1), 3, exact=True, enough=4)]
    assert cuts_added[0].repair == 4


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(shape, st.integers(0, 2)), min_size=1, max_size=3),
    st.booleans(),
)
def test_a_packing_holds_the_counts_in_the_fewest_racks_known(
    items: list[tuple[Shape, int]], few_fills: bool
) -> None:
    shapes, counts = merged(items)
    rel = relaxed_site(shapes, 10, 10)
    limit = DEFAULT.fill_limit if few_fills else 0
    racks = lazy.packing(rel, counts, limit)
    known = lazy.rack_count(shapes, counts, 10, 10, limit)
    for rack in racks:
        assert sum(s.power_w * n for s, n in zip(shapes, rack, strict=True)) <= 10
        assert sum(s.rack_units * n for s, n in zip(shapes, rack, strict=True)) <= 10
    assert [sum(column) for column in zip(*racks, strict=True)] == (counts if racks else [])
    fewest = brute_force_racks(shapes, counts, 10, 10)
    if known is not None:
        assert len(racks) == fewest
    else:  # first-fit's racks, when the exact packing was not affordable
        assert len(racks) == lazy.estimates(shapes, counts, 10, 10)[1] >= fewest


def test_the_hint_of_a_site_packed_per_rack_is_a_whole_plan() -> None:
    """A stage that packs a relaxed site per rack hints the rack variables too: the hinted
    plan alone, every variable fixed to its hint, is a solution of the stage's model."""
    built = build(tight_instance(), BuildOptions(pattern_limit=0))
    plan = solve_module.solve_built(built, ONE).values
    assert plan[built.relaxed[0].racks.index] == 4
    stages = LazyStages(built, ONE, None, time.perf_counter())
    stages.exact = {"sz"}
    model = stages.stage_model(built.tco, plan, [])
    assert len(model.proto.solution_hint.vars) == len(model.proto.variables)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.cp_model_presolve = False
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    # Fewer racks than the packing needs: no rack hint, the search places them.
    short = plan | {built.relaxed[0].racks.index: 3}
    model = stages.stage_model(built.tco, short, [])
    assert len(model.proto.solution_hint.vars) == len(built.all_vars())


def test_a_stage_that_cannot_beat_a_bound_stops_at_its_first_cut(
    cuts_added: list[lazy.Cut],
) -> None:
    """`give_up`: once a relaxed optimum is at least that, the cut is kept but the stage is
    not solved again; it returns the repaired plan as merely feasible with that bound.
    Unless the relaxed optimum came quickly: then the stage is solved again to its end."""
    built = build(tight_instance(), BuildOptions(pattern_limit=0))
    never_early = dataclasses.replace(ONE, tuning=Tuning(give_up_share=0.0))
    stages = LazyStages(built, never_early, None, time.perf_counter())
    solver, status, bound = stages.run(built.tco, {}, 0.0, 10.0, give_up=0)
    assert status == cp_model.FEASIBLE and len(cuts_added) == 1
    assert stages.cuts == cuts_added
    # The repaired plan: the 4 racks the cut found, at least the relaxed bound.
    assert solver.value(built.relaxed[0].racks) == 4
    assert solver.objective_value >= bound
    stages = LazyStages(built, never_early, None, time.perf_counter())
    solver, status, bound = stages.run(built.tco, {}, 0.0, 10.0, give_up=None)
    assert status == cp_model.OPTIMAL and solver.objective_value == bound
    # The first solve takes milliseconds of the 10 s: far under the share, so not given up.
    quarter = dataclasses.replace(ONE, tuning=Tuning(give_up_share=0.25))
    stages = LazyStages(built, quarter, None, time.perf_counter())
    solver, status, bound = stages.run(built.tco, {}, 0.0, 10.0, give_up=0)
    assert status == cp_model.OPTIMAL and solver.objective_value == bound

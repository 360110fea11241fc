"""Hand-computed optimiser cases: the arithmetic is in the comments."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from ortools.sat.python import cp_model
from tests.factories.instances import ONE, TWO, instance, owned, rented, site
from tests.support.solutions import plan

from gpusolve.optimize import search
from gpusolve.optimize.alternatives import alternatives
from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.explain import explain, relaxation
from gpusolve.optimize.ir import (
    Instance,
    ObjectiveKind,
    OwnedOption,
    Placement,
    Requirement,
    Solution,
)
from gpusolve.optimize.model import build
from gpusolve.optimize.runner import Stages
from gpusolve.optimize.search.relaxation import translate
from gpusolve.optimize.solve import criteria, fold, group, relative_gap, solve, solve_built
from gpusolve.optimize.tuning import Tuning
from gpusolve.optimize.validate import check


def test_day_and_night_work_share_servers() -> None:
    # Training by day on 4 servers, batch inference by night on 4 servers: 4 servers, not 8.
    # capex 4 x 1000 = 4000; energy 12 months x 4 x 10 = 480; 2 servers per 20 kW rack ->
    # 2 racks x 5 x 12 = 120; TCO 4600.
    inst = instance(
        ("train", "infer"), (owned("t", "train", 4, "day"), owned("i", "infer", 4, "night"))
    )
    solution = solve(inst, ONE)
    assert solution.status == "optimal"
    assert solution.servers == {("h100", "sz"): 4}
    assert solution.costs is not None
    assert (solution.costs.capex, solution.costs.energy, solution.costs.rack_rent) == (
        4000,
        480,
        120,
    )
    assert solution.objective_value == 4600
    assert solution.racks == {("sz", (("h100", 2),)): 2}
    # The same work around the clock needs 8 servers: capex 8000.
    always = instance(("train", "infer"), (owned("t", "train", 4), owned("i", "infer", 4)))
    assert solve(always, ONE).servers == {("h100", "sz"): 8}


def test_day_work_and_always_work_add_up_by_slot() -> None:
    # Always 3 + day 2 = 5 by day, always 3 + night 4 = 7 by night -> 7 servers.
    inst = instance(
        ("a", "d", "n"),
        (owned("a", "a", 3), owned("d", "d", 2, "day"), owned("n", "n", 4, "night")),
    )
    assert solve(inst, ONE).servers == {("h100", "sz"): 7}


def test_a_20_kw_server_does_not_go_into_10_kw_racks() -> None:
    # The only owned option is a 20 kW server at a site of 10 kW racks: it can never be
    # placed, so the workload rents (12000) or, without a cloud offer, has no plan at all.
    small = (site(rack_w=10_000),)
    rent = rented("c", "w", 8, 12_000, offer="cloud-a100")
    inst = instance(("w",), (owned("o", "w", 1, sku="hot"),), (rent,), small)
    solution = solve(inst, ONE)
    assert plan(solution) == {"w": ("c", None)}
    assert solution.objective_value == 12_000
    no_cloud = instance(("w",), (owned("o", "w", 1, sku="hot"),), (), small)
    assert solve(no_cloud, ONE).status == "infeasible"
    why = explain(no_cloud, ONE)
    assert why is not None and why.unplaceable == ("w",) and why.conflict == ()


def test_a_budget_cap_forces_cloud() -> None:
    # Owning: 2 servers = capex 2000 (+ energy 240 + rent 60 = 2300 TCO) beats renting at
    # 5000, but a 1500 capex cap leaves only the rental.
    rent = rented("c", "w", 2, 5000)
    free = instance(("w",), (owned("o", "w", 2),), (rent,))
    assert plan(solve(free, ONE)) == {"w": ("o", "sz")}
    capped = dataclasses.replace(free, capex_max=1500)
    solution = solve(capped, ONE)
    assert plan(solution) == {"w": ("c", None)}
    assert solution.objective_value == 5000
    assert check(capped, solution) == []


def test_explain_names_the_capex_cap_alone() -> None:
    # Even the cheapest plan (1 server, capex 1000) exceeds a capex cap of 900.
    inst = instance(("w",), (owned("o", "w", 1), owned("p", "w", 3)), capex_max=900)
    why = explain(inst, ONE)
    assert why is not None
    assert why.conflict == ("capex",) and why.correction == ("capex",) and why.minimal
    assert why.requirements["capex"].description == "purchase budget of 900"
    found = relaxation(inst, "capex", ONE)
    assert found is not None and (found.needed, found.delta) == (1000, 100)


def test_explain_names_deadline_and_capex_together() -> None:
    # Fast option: 4 servers, capex 4000, meets the 72 h deadline. Slow option: 1 server,
    # capex 1000, misses it. A 2500 cap admits only the slow one: deadline vs capex.
    inst = instance(
        ("w",),
        (
            owned("fast", "w", 4),
            owned("slow", "w", 1, violates=frozenset({"deadline:w"})),
        ),
        capex_max=2500,
        requirements={"deadline:w": Requirement("deadline:w", "deadline of 72 h for w", 5)},
    )
    assert solve(inst, ONE).status == "infeasible"
    why = explain(inst, ONE)
    assert why is not None
    assert why.conflict == ("capex", "deadline:w")  # names are sorted
    # The deadline weighs 5 and the cap 1: relaxing the cap is the cheaper correction.
    assert why.correction == ("capex",)
    found = relaxation(inst, "capex", ONE)
    assert found is not None and found.needed == 4000  # "feasible if the cap is 1500 higher"
    assert found.delta == 1500
    assert relaxation(inst, "deadline:w", ONE) is None  # not a numeric requirement


def test_explain_names_a_full_site() -> None:
    # 6 servers, 2 per rack -> 3 racks, but only 2 are available: racks:sz alone.
    inst = instance(("w",), (owned("o", "w", 6),), sites=(site(racks=2),))
    why = explain(inst, ONE)
    assert why is not None and why.conflict == ("racks:sz",)
    assert why.requirements["racks:sz"].description == "2 racks available at sz"
    found = relaxation(inst, "racks:sz", ONE)
    assert found is not None and (found.current, found.needed) == (2, 3)


def test_explain_returns_none_when_a_plan_exists() -> None:
    assert explain(instance(("w",), (owned("o", "w", 1),)), ONE) is None


def test_monthly_cap_is_compared_over_the_horizon() -> None:
    # 1 server: energy 10 + rent 5 = 15 per month = 180 over 12 months. A cap of 15/month
    # allows it (180 <= 12 x 15); 14/month does not (180 > 168), and the rental at 120
    # (10/month) is taken instead.
    rent = rented("c", "w", 1, 1200)
    base = instance(("w",), (owned("o", "w", 1),), (rent,))
    ok = solve(dataclasses.replace(base, monthly_max=15), ONE)
    assert plan(ok) == {"w": ("o", "sz")}
    assert "monthly" in ok.binding  # no slack left for another rack-month or server-month
    capped = dataclasses.replace(base, monthly_max=14, objective="min-monthly")
    cloudy = dataclasses.replace(capped, cloud=(dataclasses.replace(rent, cost_total=120),))
    assert plan(solve(cloudy, ONE)) == {"w": ("c", None)}


def test_binding_reports_tight_caps_and_full_sites() -> None:
    # 4 servers, capex exactly at the 4000 cap, 2 racks of 2 x 10 kW: every available rack
    # is taken and each rack's power is what stops a third server.
    inst = instance(("w",), (owned("o", "w", 4),), sites=(site(racks=2),), capex_max=4000)
    solution = solve(inst, ONE)
    assert set(solution.binding) == {"capex", "racks:sz", "rack_power:sz"}
    # 5 servers in one 60 kW rack: 50 kW and 40 of 42 U; a sixth would fit by power but
    # not by space, yet one rack is all five need: nothing binds (issue 35).
    dense = instance(("w",), (owned("o", "w", 5),), sites=(site(rack_w=60_000),))
    assert solve(dense, ONE).binding == ()
    # 6 servers: 60 kW fits one rack by power, 48 U does not: space takes a second rack.
    denser = instance(("w",), (owned("o", "w", 6),), sites=(site(rack_w=60_000),))
    assert solve(denser, ONE).binding == ("rack_space:sz",)


def test_max_throughput_spends_the_budget_then_saves() -> None:
    # Capex cap 3000: options 4 servers/400 tok/s (too dear), 3 servers/300 tok/s,
    # 2 servers/300 tok/s. Best throughput within budget: 300; cheapest at 300: 2 servers.
    inst = instance(
        ("w",),
        (
            owned("big", "w", 4, throughput=400),
            owned("mid", "w", 3, throughput=300),
            owned("lean", "w", 2, throughput=300),
        ),
        capex_max=3000,
        objective="max-throughput",
    )
    solution = solve(inst, ONE)
    assert solution.objective_value == 7500  # 300 of the best 400 tok/s, in 1/10,000
    assert plan(solution) == {"w": ("lean", "sz")}


def test_max_throughput_never_adds_tokens_of_different_models() -> None:
    # Three servers' budget. A small model runs 10,000 tok/s on 2 servers, 6,000 on 1; a
    # big one 1,000 on 2, 500 on 1. Adding tokens/s feeds the small model (10,500 against
    # 7,000); by shares of each one's best, 60% + 100% beats 100% + 50%.
    small = (owned("s2", "small", 2, throughput=10_000), owned("s1", "small", 1, throughput=6_000))
    big = (owned("b2", "big", 2, throughput=1_000), owned("b1", "big", 1, throughput=500))
    inst = instance(("small", "big"), small + big, capex_max=3000, objective="max-throughput")
    solution = solve(inst, ONE)
    assert plan(solution) == {"small": ("s1", "sz"), "big": ("b2", "sz")}
    assert solution.objective_value == 6_000 + 10_000
    # A weight says how much a workload counts: at 3 the small model's share wins.
    weighted = dataclasses.replace(inst, throughput_weights={"small": 3.0})
    assert plan(solve(weighted, ONE)) == {"small": ("s2", "sz"), "big": ("b1", "sz")}


def test_min_capex_counts_cloud_rental_as_spend() -> None:
    # min-capex: owning costs capex 2000, renting 1500 of rental (no capex). Rental is
    # spend too, so it wins at 1500; if it were free of charge in the objective, any
    # rental at any price would.
    rent = rented("c", "w", 2, 1500)
    inst = instance(("w",), (owned("o", "w", 2),), (rent,), objective="min-capex")
    solution = solve(inst, ONE)
    assert plan(solution) == {"w": ("c", None)} and solution.objective_value == 1500
    dear = dataclasses.replace(inst, cloud=(dataclasses.replace(rent, cost_total=2500),))
    assert plan(solve(dear, ONE)) == {"w": ("o", "sz")}


def test_penalties_and_tie_breaks() -> None:
    # Two parallelism variants with the same servers (same cost): the one with more memory
    # headroom wins. A soft-rule penalty of 1 on it flips the choice.
    a = owned("tp8", "w", 2, headroom_permille=100)
    b = owned("tp4pp2", "w", 2, headroom_permille=250)
    assert plan(solve(instance(("w",), (a, b)), ONE)) == {"w": ("tp4pp2", "sz")}
    penalised = dataclasses.replace(b, penalty=1)
    assert plan(solve(instance(("w",), (a, penalised)), ONE)) == {"w": ("tp8", "sz")}


def test_fewer_racks_break_a_cost_tie() -> None:
    # Rent is free at both sites, so 2 servers cost the same at either; 40 kW racks take
    # both servers in 1 rack, 10 kW racks need 2. The tie-break picks the big racks.
    sites = (site("small", rack_w=10_000, rent=0), site("big", rack_w=40_000, rent=0))
    inst = instance(("w",), (owned("o", "w", 2, sites=("small", "big")),), sites=sites)
    solution = solve(inst, ONE)
    assert plan(solution) == {"w": ("o", "big")}
    assert solution.racks == {("big", (("h100", 2),)): 1}


def test_top_k_plans_are_distinct_and_ordered() -> None:
    # Three ways: own at sz (2000 + 240 energy + 60 rent = 2300), own at wx with dearer
    # rent (2000 + 240 + 2 x... = 2360), rent (5000). Two variants at sz are one plan.
    sites = (site("sz"), site("wx", rent=10))
    opts = (owned("a", "w", 2, sites=("sz", "wx")), owned("a2", "w", 2, sites=("sz",)))
    rent = rented("c", "w", 2, 5000)
    inst = instance(("w",), opts, (rent,), sites=sites)
    found = alternatives(inst, 5, ONE)
    assert [(plan(p.solution)["w"][1], p.cost_delta) for p in found] == [
        ("sz", 0),
        ("wx", 60),  # rent 10 instead of 5 for 1 rack over 12 months
        (None, 2700),
    ]
    assert [p.objective_delta for p in found] == [0, 60, 2700]
    assert [(p.tco_delta, p.penalties_delta) for p in found] == [(0, 0), (60, 0), (2700, 0)]
    assert all(check(inst, p.solution) == [] for p in found)


def test_top_k_keeps_tco_and_penalties_apart() -> None:
    # At sz the plan costs 2300 plus a soft-rule penalty of 100; at wx 2360 and none. The
    # best is wx; sz is next: 60 cheaper in money, 100 dearer in penalties, 40 in all.
    sites = (site("sz"), site("wx", rent=10))
    places = (Placement("sz", penalty=100), Placement("wx"))
    inst = instance(("w",), (OwnedOption("a", "w", "h100", 2, "always", places),), sites=sites)
    best, alt = alternatives(inst, 2, ONE)
    assert plan(best.solution)["w"][1] == "wx" and plan(alt.solution)["w"][1] == "sz"
    assert (alt.tco_delta, alt.penalties_delta, alt.cost_delta) == (-60, 100, 40)


def test_objective_is_integral_and_model_valid() -> None:
    inst = instance(("w",), (owned("o", "w", 2),), capex_max=5000, monthly_max=1000)
    kinds: tuple[ObjectiveKind, ...] = ("min-tco", "min-capex", "min-monthly", "max-throughput")
    for kind in kinds:
        built = build(dataclasses.replace(inst, objective=kind))
        for stage in group(criteria(built)):
            model = built.model.clone()
            objective, _ = fold(stage)
            model.minimize(objective)
            assert not model.proto.has_floating_point_objective()
            assert model.validate() == ""
    explain_model = build(inst, BuildOptions(mode="explain"))
    assert set(explain_model.literals) == {"capex", "monthly", "racks:sz"}
    assert all(v.name == f"req:{n}" for n, v in explain_model.literals.items())


def _without_time(solution: Solution) -> Solution:
    return dataclasses.replace(solution, wall_s=0.0)


def _tie_heavy() -> Instance:
    # Two workloads, each with three equally priced variants at two identical sites: many
    # plans of equal cost; the tie-breaks must pick one and always the same one.
    sites = (site("a", rent=0), site("b", rent=0))
    opts = tuple(
        owned(f"{w}{i}", w, 2, sites=("a", "b"), headroom_permille=100)
        for w in ("x", "y")
        for i in range(3)
    )
    return instance(("x", "y"), opts, sites=sites)


def test_repeated_solves_are_identical(parallel_always: Tuning) -> None:
    inst = _tie_heavy()
    one = dataclasses.replace(ONE, tuning=parallel_always)
    two = dataclasses.replace(TWO, tuning=parallel_always)
    first = _without_time(solve(inst, one))
    assert all(_without_time(solve(inst, one)) == first for _ in range(3))
    assert all(_without_time(solve(inst, two)) == first for _ in range(3))
    assert plan(first) == {"x": ("x0", "a"), "y": ("y0", "a")}  # earliest listed


def test_gap_and_bound() -> None:
    solution = solve(instance(("w",), (owned("o", "w", 2),)), ONE)
    assert solution.best_bound == solution.objective_value
    assert relative_gap(solution) == 0.0
    assert relative_gap(Solution(status="infeasible")) is None


def test_dominated_options_are_not_built() -> None:
    # Same workload, SKU and slot: 2 servers dominate 3 servers with the same placements;
    # a night-only option with 3 servers is not dominated by an always-on one.
    opts = (
        owned("two", "w", 2),
        owned("three", "w", 3),
        owned("night", "w", 3, "night"),
        owned("twin", "w", 2),  # equal to "two": the first listed is kept
    )
    built = build(instance(("w",), opts))
    assert sorted(o.option.key for o in built.owned) == ["night", "two"]
    assert built.stats["owned_options_in"] == 4 and built.stats["owned_options"] == 2


def test_a_fleet_too_big_for_a_site_is_not_offered_there() -> None:
    # 6 servers at 2 per rack need 3 racks: "small" has 2 (free rent), "big" 10 (rent 100).
    # A 1-server workload that only "small" hosts keeps that site in use.
    opts = (owned("o", "w", 6, sites=("small", "big")), owned("v1", "v", 1, sites=("small",)))
    small, big = site("small", racks=2, rent=0), site("big", rent=100)
    inst = instance(("w", "v"), opts, sites=(small, big))
    built = build(inst)
    assert [(o.option.key, o.placement.site) for o in built.owned] == [
        ("o", "big"),
        ("v1", "small"),
    ]
    # 7000 capex + 12 months x (70 energy + 3 x 100 rent at "big") = 11440.
    assert solve(inst, ONE).objective_value == 11_440
    # The LP no longer buys half the fleet at the free site (3 servers beside v's one):
    # its bound is the optimum of the folded objective (cost, then the tie-breaks).
    objective, _ = fold(group(criteria(built))[0])
    model = built.model.clone()
    model.minimize(objective)
    lp = translate(model, objective).solve(10.0)
    solver = cp_model.CpSolver()
    assert solver.solve(model) == cp_model.OPTIMAL
    assert lp is not None and lp.bound == pytest.approx(solver.objective_value)
    # With the site's racks relaxed, or in explain mode, the placement is built; explain
    # mode ties it to the rack requirement's literal.
    assert len(build(inst, BuildOptions(relax=frozenset({"racks:small"}))).owned) == 3
    tied = build(inst, BuildOptions(mode="explain"))
    assert [o.placement.violates for o in tied.owned] == [
        frozenset({"racks:small"}),
        frozenset(),
        frozenset(),
    ]


def test_malformed_instance_is_rejected() -> None:
    bad = instance(("w",), (owned("o", "w", 1, sites=("nowhere",)),))
    with pytest.raises(ValueError, match="unknown site nowhere"):
        build(bad)


def test_checker_catches_broken_plans() -> None:
    inst = instance(("w",), (owned("o", "w", 4),), sites=(site(racks=2),), capex_max=4000)
    good = solve(inst, ONE)
    assert check(inst, good) == []
    assert good.costs is not None
    fewer = dataclasses.replace(good, servers={("h100", "sz"): 3})
    assert any("servers" in p for p in check(inst, fewer))
    crammed = dataclasses.replace(good, racks={("sz", (("h100", 4),)): 1})
    assert any("too much" in p for p in check(inst, crammed))
    many = dataclasses.replace(good, racks={("sz", (("h100", 1),)): 4})
    assert any("available" in p for p in check(inst, many))
    cheap = dataclasses.replace(good, costs=dataclasses.replace(good.costs, capex=1))
    assert any("reported costs" in p for p in check(inst, cheap))
    nothing = dataclasses.replace(good, choices=())
    assert any("0 choices" in p for p in check(inst, nothing))


def test_clone_keeps_variables_usable() -> None:
    # The design relies on variables of the base model addressing its clones by index.
    model = cp_model.CpModel()
    x = model.new_int_var(0, 5, "x")
    clone = model.clone()
    clone.add(x >= 3)
    clone.minimize(x)
    solver = cp_model.CpSolver()
    assert solver.solve(clone) == cp_model.OPTIMAL and solver.value(x) == 3


@pytest.mark.parametrize(("threshold", "expected"), [(10_000, 1), (0, 2)])
def test_small_models_are_solved_by_one_worker(
    threshold: int, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = dataclasses.replace(TWO, tuning=Tuning(parallel_min_choices=threshold))
    seen: list[int] = []
    original = cp_model.CpSolver.solve

    def solve_and_record(self: cp_model.CpSolver, *args: object, **kwargs: object) -> object:
        seen.append(self.parameters.num_workers)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "solve", solve_and_record)
    assert solve(_tie_heavy(), config).status == "optimal"
    assert seen and set(seen) == {expected}


def test_the_outcome_records_each_stage() -> None:
    """The benchmark reads stage times from here: one record per solve, stage 1 first."""
    built = build(_tie_heavy())
    outcome = solve_built(built, ONE)
    names = [record.what for record in outcome.stages]
    assert outcome.solution.status == "optimal"
    assert names and names[0].startswith("stage 1: min-tco")
    assert len(names) == len(group(criteria(built)))
    assert all(record.status == "OPTIMAL" and record.wall_s >= 0 for record in outcome.stages)


def test_the_exact_model_does_not_import_the_large_instance_search() -> None:
    """The dependency runs one way: `solve.py` calls the search, the model never does."""
    code = (
        "import sys\n"
        "from gpusolve.optimize import explain, model, patterns, prune, readout, validate\n"
        "from gpusolve.optimize import cpsat, runner, stages\n"
        "assert not [m for m in sys.modules if m.startswith('gpusolve.optimize.search')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_small_models_take_the_exact_stages_and_large_ones_the_search() -> None:
    built = build(_tie_heavy())
    assert search.for_model(built, ONE, None, 0.0) is None
    warm = dataclasses.replace(ONE, tuning=Tuning(warm_min_choices=0))
    assert isinstance(search.for_model(built, warm, None, 0.0), Stages)

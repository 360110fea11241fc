"""A search stopped at its limit answers with a plan whenever one of the fallbacks holds
(all-rent, greedy, or the restricted set), each completed and checked on the model, never
with "no plan" (exit 3). Every limit here is CP-SAT's deterministic work, never the wall
clock: 1e-6 units stop a stage solve of the benchmark's instances before its first plan
on any machine. The hand instances are so small that CP-SAT's first propagation solves
them whatever the limit, so their tests stop stage 1 by a stand-in (`stopped_search`).
The arithmetic is in the comments (the hand instances' prices: `factories/instances.py`)."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import pytest
from ortools.sat.python import cp_model
from tests.factories.instances import ONE, instance, owned, rented, site
from tests.support.shipped import ROOT
from tests.support.solutions import plan

from gpusolve.analyses.probing import NOT_FOUND, plan_key
from gpusolve.optimize import cpsat
from gpusolve.optimize.alternatives import alternatives
from gpusolve.optimize.ir import Instance, Solution, SolveConfig
from gpusolve.optimize.model import build
from gpusolve.optimize.runner import First, Stages
from gpusolve.optimize.search import warmstart
from gpusolve.optimize.solve import solve, solve_built
from gpusolve.optimize.tuning import Tuning
from gpusolve.optimize.validate import check

sys.path.insert(0, str(ROOT / "benchmarks"))

from generator import generate

# Stage solves stop at once; the fallback's completion has its own work (`Tuning`).
STOPPED = SolveConfig(time_limit_s=600, work_limit=1e-6, workers=1, seed=1)
TWENTY = SolveConfig(time_limit_s=600, work_limit=20, workers=1, seed=1)
# The same, each selection completed in a model cut down to its choices (as on models of
# 50,000 choices or more), its plan checked by the independent validator.
CUT = dataclasses.replace(STOPPED, tuning=Tuning(fallback_cut_min_choices=0))
BOTH = pytest.mark.parametrize("config", [STOPPED, CUT], ids=["whole", "cut"])
CHAT = ROOT / "examples" / "chat-day-lora-night.yaml"


@pytest.fixture
def stopped_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage 1 of the exact stages stops before any plan, proving nothing."""

    def first(self: Stages, group: Any, hint: Any) -> First:
        return First(cp_model.CpSolver(), cp_model.UNKNOWN, None)

    monkeypatch.setattr(Stages, "first", first)


def _stopped(solution: Solution, inst: Instance, kind: str, objective: int) -> None:
    """A fallback plan: merely feasible, of that kind and objective, a bound at most its
    objective (hence a gap), and no violation found by the independent validator."""
    assert solution.status == "feasible", solution.status
    assert solution.fallback == kind
    assert solution.objective_value == objective
    assert solution.best_bound is not None and solution.best_bound <= objective
    assert check(inst, solution) == []


# Two workloads whose standalone-cheapest choices are rentals. Owning a's 2 servers:
# capex 2000 + energy 2 x 10 x 12 = 240 + one 20 kW rack 5 x 12 = 60, TCO 2300 > 1800;
# owning b's one server: 1000 + 120 + 60 = 1180 > 900. Every mix costs more than renting
# both (2300 + 900, 1800 + 1180, both owned 3000 + 360 + two racks 120 = 3480).
RENTING = instance(
    ("a", "b"),
    (owned("oa", "a", 2), owned("ob", "b", 1)),
    (rented("ra", "a", 2, 1800), rented("rb", "b", 1, 900)),
)


@BOTH
def test_a_stopped_search_answers_with_the_all_rent_plan(
    stopped_search: None, config: SolveConfig
) -> None:
    # Each workload's cheapest rental: 1800 + 900 = 2700 (greedy takes the same choices).
    solution = solve(RENTING, config)
    _stopped(solution, RENTING, "all-rent", 2700)
    assert plan(solution) == {"a": ("ra", None), "b": ("rb", None)}


SHARED = instance(
    ("train", "infer"),
    (owned("t", "train", 4, "day"), owned("i", "infer", 4, "night")),
    (rented("rt", "train", 4, 4500),),
)


def test_with_work_enough_the_optimum_is_proven_and_no_fallback() -> None:
    for inst, optimum in ((RENTING, 2700), (SHARED, 4600)):
        proven = solve(inst, ONE)
        assert proven.status == "optimal" and proven.fallback is None
        assert proven.objective_value == optimum


@BOTH
def test_a_workload_without_a_rental_gets_the_greedy_plan(
    stopped_search: None, config: SolveConfig
) -> None:
    # Training by day on 4 servers (standalone 4000 + 480 + two racks 120 = 4600, or a
    # rental at 4500) and inference by night on 4 servers (4600, nothing to rent). Greedy
    # rents the first (4500 < 4600) and buys the second: 9100. The optimum shares the four
    # servers (4600): the fallback is what it is, and its gap says so.
    solution = solve(SHARED, config)
    _stopped(solution, SHARED, "greedy", 9100)
    assert plan(solution) == {"train": ("rt", None), "infer": ("i", "sz")}


@BOTH
def test_a_fallback_that_breaks_a_requirement_is_not_taken(
    stopped_search: None, config: SolveConfig
) -> None:
    # A monthly cap of 200 (2400 over 12 months): renting both spends 2700, so all-rent
    # fails the model's check (and greedy is the same choices). The restricted set has
    # every mix: rent a and own b spends 1800 + (energy 10 + rent 5) x 12 = 1980 and
    # costs 1800 + 1180 = 2980, the cheapest mix within the cap.
    capped = dataclasses.replace(RENTING, monthly_max=200)
    solution = solve(capped, config)
    _stopped(solution, capped, "restricted", 2980)
    assert plan(solution) == {"a": ("ra", None), "b": ("ob", "sz")}


@BOTH
def test_greedy_counts_the_racks_the_workloads_before_it_took(
    stopped_search: None, config: SolveConfig
) -> None:
    # Two identical workloads of 2 servers (one 20 kW rack each). sz has one rack at 5 a
    # month, bj ten at 7: each alone is cheapest at sz (2000 + 240 + 60 = 2300), so
    # without counting racks both would take sz's only rack. Greedy puts the second at bj:
    # 2000 + 240 + 7 x 12 = 2324; 4624 in all.
    sites = (site("sz", racks=1), site("bj", racks=10, rent=7))
    inst = instance(
        ("a", "b"),
        (owned("oa", "a", 2, sites=("sz", "bj")), owned("ob", "b", 2, sites=("sz", "bj"))),
        sites=sites,
    )
    solution = solve(inst, config)
    _stopped(solution, inst, "greedy", 4624)
    assert plan(solution) == {"a": ("oa", "sz"), "b": ("ob", "bj")}


def test_the_fallback_keeps_the_callers_cuts(stopped_search: None) -> None:
    # Cut a's rental (as `alternatives` cuts an earlier plan): all-rent and greedy need it,
    # so the restricted set answers: a owned and b rented, 2300 + 900 = 3200.
    built = build(RENTING)
    ra = next(c.var for c in built.cloud if c.option.key == "ra")

    def forbid(model: cp_model.CpModel) -> None:
        model.add(ra == 0)

    solution = solve_built(built, STOPPED, prepare=forbid).solution
    _stopped(solution, RENTING, "restricted", 3200)
    assert plan(solution) == {"a": ("oa", "sz"), "b": ("rb", None)}


def test_no_fallback_holds_and_no_plan_is_invented(stopped_search: None) -> None:
    # A capex cap of 500 and nothing to rent for b: no plan exists, and none is made up.
    inst = dataclasses.replace(RENTING, capex_max=500, cloud=RENTING.cloud[:1])
    solution = solve(inst, STOPPED)
    assert solution.status in ("unknown", "infeasible")
    assert not solution.choices and solution.fallback is None


def test_a_fallback_is_no_next_best_plan_and_no_sensitivity_edge(stopped_search: None) -> None:
    # Top-k lists plans the search found: a fallback ends the list. A sensitivity probe
    # that ends on a fallback found no plan in time; it does not move the plan.
    assert alternatives(RENTING, 3, STOPPED) == []
    solution = solve(RENTING, STOPPED)
    assert solution.fallback == "all-rent"
    assert plan_key(solution, RENTING) == NOT_FOUND


@pytest.mark.parametrize(("scale", "seed"), [("S", 0), ("M", 0)])
def test_a_benchmark_instance_stopped_at_once_still_has_a_plan(scale: str, seed: int) -> None:
    # S: 3 workloads x 10 SKUs x 5 sites (the exact stages): 1e-6 units of work find no
    # plan in stage 1, and the answer is a fallback. M: 10 x 30 x 10 (the large search,
    # from the warm start's size): stage 1 starts from the warm start's complete plan and
    # may keep it at no work, or answer with a fallback. Either way a plan, valid, with a gap.
    inst = generate(scale, seed)
    solution = solve(inst, STOPPED)
    assert solution.status == "feasible" and solution.choices
    assert solution.fallback is not None or scale == "M"
    assert solution.objective_value is not None and solution.best_bound is not None
    assert solution.best_bound <= solution.objective_value
    assert check(inst, solution) == []


def test_a_large_search_without_a_warm_start_starts_from_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # M (the large search): the warm start finds nothing, so the fallback is looked for
    # before stage 1 and hints it; the answer at work enough is still the proven optimum.
    inst = generate("M", 0)
    proven = solve(inst, TWENTY)
    monkeypatch.setattr(warmstart, "warm_hint", lambda *args, **kwargs: {})
    outcome = solve_built(build(inst), TWENTY)
    assert outcome.stages[0].what.startswith("fallback: ")
    assert outcome.stages[1].what.startswith("stage 1")
    assert outcome.solution.status == proven.status == "optimal"
    assert outcome.solution.fallback is None
    assert outcome.solution.objective_value == proven.objective_value
    # Stopped at once, it answers with that fallback, or with stage 1's plan from that
    # fallback's hint (a fallback answers only when strictly better than what stage 1
    # holds, so never a dearer plan): a valid plan either way.
    stopped = solve_built(build(inst), STOPPED)
    assert stopped.stages[0].what.startswith("fallback: ")
    assert stopped.solution.status == "feasible" and stopped.solution.choices
    assert check(inst, stopped.solution) == []


def test_plan_stopped_before_any_plan_exits_0_and_says_it_is_the_fallback(
    gpusolve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every stage solve of the command gets 1e-6 units of work: the search finds nothing,
    # the command still answers with a plan (exit 0, not 3), and says which one it is.
    real = cpsat.solver_for

    def stopped(*args: Any, **kwargs: Any) -> cp_model.CpSolver:
        solver = real(*args, **kwargs)
        solver.parameters.max_deterministic_time = 1e-6
        return solver

    monkeypatch.setattr(cpsat, "solver_for", stopped)
    result = gpusolve("plan", "-q", str(CHAT), "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["status"] == "feasible" and data["solver"]["status"] == "feasible"
    assert data["solver"]["fallback"] in ("all-rent", "greedy", "restricted")
    assert data["solver"]["gap"] is not None and not data["solver"]["proven_optimal"]
    assert any("without a better plan than the fallback" in w for w in data["warnings"])
    text = gpusolve("plan", "-q", str(CHAT))
    assert text.code == 0 and "fallback" in text.out

"""The MILP backend (`optimize/milp/`): a CP-SAT model read from its proto as MILP rows and
solved by HiGHS gives the optimum CP-SAT proves, on models whose optimum is worked out by hand
and on random small MILPs; what is not a MILP row is refused, never approximated."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
from ortools.sat.python import cp_model

from gpusolve.optimize import interrupt
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.milp.highs import CHECKS_PER_WORK, solve_milp
from gpusolve.optimize.milp.solve import solve_with_highs
from gpusolve.optimize.milp.translate import NotMilp, translate

# Limits that do not depend on the machine's load: a node budget, a wall clock far beyond.
CONFIG = SolveConfig(time_limit_s=600, work_limit=20, workers=1, seed=1)


def _value(model: cp_model.CpModel, expr: cp_model.LinearExprT) -> int:
    outcome = solve_with_highs(model, CONFIG)
    assert outcome is not None and outcome.values is not None
    return int(outcome.values.value(expr))


def test_a_knapsack_by_hand() -> None:
    # Items (weight, value): (3, 4), (4, 5), (2, 3), capacity 6: pairs 1+3 (weight 5, value
    # 7) and 2+3 (weight 6, value 8) fit, 1+2 does not; minimising -value gives -8.
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(3)]
    m.add(3 * x[0] + 4 * x[1] + 2 * x[2] <= 6)
    m.minimize(-(4 * x[0] + 5 * x[1] + 3 * x[2]))
    outcome = solve_with_highs(m, CONFIG)
    assert outcome is not None and outcome.values is not None
    assert outcome.status == "optimal"
    assert [outcome.values.value(v) for v in x] == [0, 1, 1]
    assert outcome.bound == -8


def test_an_objective_offset_and_negated_literals() -> None:
    # Exactly one of a, b; ~a costs 10 (so b costs 10), a costs 3, offset 100: a is chosen,
    # objective 103.
    m = cp_model.CpModel()
    a, b = m.new_bool_var("a"), m.new_bool_var("b")
    m.add_exactly_one(a, b)
    m.minimize(100 + 3 * a + 10 * (1 - a))
    assert _value(m, 100 + 3 * a + 10 * (1 - a)) == 103
    assert _value(m, a) == 1


def test_an_implication_enforced_by_a_negated_literal() -> None:
    # ~a -> b and ~a -> c; a costs 5, b and c cost 2 each: a = 0 costs 4, a = 1 costs 5.
    m = cp_model.CpModel()
    a, b, c = (m.new_bool_var(n) for n in "abc")
    m.add_bool_and(b, c).only_enforce_if(~a)
    m.minimize(5 * a + 2 * b + 2 * c)
    assert _value(m, 5 * a + 2 * b + 2 * c) == 4


def test_an_enforced_linear_row_is_relaxed_only_when_its_literal_is_false() -> None:
    # y >= 7 when z; z is forced (bool_or); y in [0, 10] costs 1 each: y = 7.
    m = cp_model.CpModel()
    y = m.new_int_var(0, 10, "y")
    z = m.new_bool_var("z")
    m.add(y >= 7).only_enforce_if(z)
    m.add(y <= 8).only_enforce_if(~z)
    m.add_bool_or(z)
    m.minimize(y)
    assert _value(m, y) == 7
    # Without the bool_or, z = 0 frees y down to 0.
    m2 = cp_model.CpModel()
    y2 = m2.new_int_var(0, 10, "y")
    z2 = m2.new_bool_var("z")
    m2.add(y2 >= 7).only_enforce_if(z2)
    m2.minimize(y2 + 0 * z2)
    assert _value(m2, y2) == 0


def test_an_infeasible_model_is_infeasible() -> None:
    m = cp_model.CpModel()
    x = m.new_int_var(0, 5, "x")
    m.add(x >= 3)
    m.add(x <= 2)
    m.minimize(x)
    outcome = solve_with_highs(m, CONFIG)
    assert outcome is not None and outcome.status == "infeasible" and outcome.values is None


@pytest.mark.parametrize(
    "build",
    [
        lambda m, x, y: m.add_max_equality(x, [y, 2]),
        lambda m, x, y: m.add_multiplication_equality(x, [y, y]),
        lambda m, x, y: m.add_linear_expression_in_domain(
            x + y, cp_model.Domain.from_values([1, 3])
        ),
    ],
    ids=["max", "product", "domain-with-holes"],
)
def test_what_is_not_a_milp_row_is_refused(build: object) -> None:
    m = cp_model.CpModel()
    x, y = m.new_int_var(0, 5, "x"), m.new_int_var(0, 5, "y")
    build(m, x, y)  # type: ignore[operator]
    m.minimize(x)
    with pytest.raises(NotMilp):
        translate(m.proto)
    assert solve_with_highs(m, CONFIG) is None  # the caller asks CP-SAT


def _random_milp(rng: random.Random) -> cp_model.CpModel:
    m = cp_model.CpModel()
    xs = [m.new_int_var(0, rng.randint(1, 6), f"x{i}") for i in range(6)]
    bs = [m.new_bool_var(f"b{i}") for i in range(4)]
    for _ in range(5):
        terms = [(rng.randint(-4, 6), v) for v in rng.sample(xs, 3)]
        m.add(sum(a * v for a, v in terms) >= rng.randint(-3, 8))
    for b, x in zip(bs, xs, strict=False):
        m.add(x >= 2).only_enforce_if(b)
    m.add_at_most_one(bs[:3])
    m.add_bool_or([bs[3], ~bs[0]])
    m.minimize(sum(rng.randint(1, 9) * v for v in xs) - sum(rng.randint(0, 12) * b for b in bs))
    return m


@pytest.mark.parametrize("seed", range(12))
def test_highs_proves_the_optimum_cp_sat_proves(seed: int) -> None:
    m = _random_milp(random.Random(seed))
    cp = cp_model.CpSolver()
    cp.parameters.num_workers = 1
    cp_status = cp.solve(m)
    outcome = solve_with_highs(m, CONFIG)
    assert outcome is not None
    if cp_status == cp_model.INFEASIBLE:
        assert outcome.status == "infeasible"
        return
    assert cp_status == cp_model.OPTIMAL and outcome.status == "optimal"
    assert outcome.values is not None
    assert outcome.values.objective_value == cp.objective_value


def test_a_stop_requested_before_the_search_returns_without_a_proof() -> None:
    # Enough items that the proof needs branching (a subset-sum with no exact fit).
    rng = random.Random(7)
    m = cp_model.CpModel()
    xs = [m.new_bool_var(f"x{i}") for i in range(60)]
    weights = [rng.randint(1000, 9999) * 2 for _ in xs]
    m.add(sum(w * x for w, x in zip(weights, xs, strict=True)) >= sum(weights) // 2 + 1)
    m.minimize(sum(w * x for w, x in zip(weights, xs, strict=True)))
    interrupt.reset()
    try:
        interrupt.request_stop()
        answer = solve_milp(translate(m.proto), CONFIG)
    finally:
        interrupt.reset()
    assert answer.status != "optimal"


def test_the_work_limit_is_a_count_of_highs_limit_checks() -> None:
    # A subset-sum HiGHS cannot close at the root: the budget stops it at the same check on
    # every run, whatever the machine's load, with the same incumbent.
    rng = random.Random(3)
    m = cp_model.CpModel()
    xs = [m.new_int_var(0, 3, f"x{i}") for i in range(40)]
    weights = [rng.randint(10_000, 99_999) for _ in xs]
    m.add(sum(w * x for w, x in zip(weights, xs, strict=True)) >= sum(weights) + 1)
    m.minimize(sum(w * x for w, x in zip(weights, xs, strict=True)))
    tiny = SolveConfig(time_limit_s=600, work_limit=5 / CHECKS_PER_WORK, workers=1, seed=1)
    runs = [solve_milp(translate(m.proto), tiny) for _ in range(2)]
    assert runs[0].checks == 6  # the check that finds the budget spent stops it
    assert runs[0].status != "optimal"
    assert runs[0] == runs[1]


class _Seen:
    def __init__(self) -> None:
        self.objectives: list[int] = []

    def append_pair(self, objective: int, bound: int) -> None:
        self.objectives.append(objective)


def test_a_race_returns_the_proven_optimum_and_the_same_answer_every_run() -> None:
    from gpusolve.optimize.milp.race import race
    from gpusolve.optimize.phased.solve import solver_for

    m = _random_milp(random.Random(6))  # a feasible one (seeds 1, 3, 6, 8, 10, 11 are)
    cp = cp_model.CpSolver()
    cp.parameters.num_workers = 1
    assert cp.solve(m) == cp_model.OPTIMAL
    seen = []
    for _ in range(2):
        found = _Seen()
        r = race(m, translate(m.proto), solver_for(CONFIG), CONFIG, found.append_pair)
        assert r.status == "optimal" and r.values is not None
        assert r.values.objective_value == cp.objective_value
        assert r.bound == cp.objective_value
        # Progress only ever improves: objectives fall, bounds never fall.
        assert found.objectives == sorted(found.objectives, reverse=True)
        seen.append(r.values.objective_value)
    assert seen[0] == seen[1]


def test_a_race_picks_its_winner_by_each_solvers_work_never_by_who_finished_first() -> None:
    from gpusolve.optimize.milp.race import Ran, winner

    quick = 1.0
    fast_highs = Ran("optimal", 100, 0.4)
    slow_highs = Ran("optimal", 100, 7.0)
    cp_proved = Ran("optimal", 100, 3.0)
    cp_open = Ran("feasible", 104, 10.0)
    # 1. HiGHS's quick proof, even where CP-SAT proved too.
    assert winner(fast_highs, cp_proved, quick) == "HiGHS"
    # 2. Else CP-SAT's proof within its share, even where HiGHS proved later.
    assert winner(slow_highs, cp_proved, quick) == "CP-SAT"
    assert winner(Ran("feasible", 101, 0.9), cp_proved, quick) == "CP-SAT"
    # 3. Else HiGHS's proof.
    assert winner(slow_highs, cp_open, quick) == "HiGHS"
    # 4. Else the cheaper incumbent, HiGHS's on a tie.
    assert winner(Ran("feasible", 105, 120.0), cp_open, quick) == "CP-SAT"
    assert winner(Ran("feasible", 104, 120.0), cp_open, quick) == "HiGHS"
    assert winner(Ran("unknown", None, 120.0), cp_open, quick) == "CP-SAT"
    assert winner(Ran("unknown", None, 120.0), Ran("unknown", None, 10.0), quick) == "HiGHS"
    # An infeasibility proof is a proof.
    assert winner(Ran("infeasible", None, 0.2), Ran("unknown", None, 0.1), quick) == "HiGHS"


def test_a_race_returns_the_same_solver_s_answer_whichever_thread_runs_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # HiGHS proves this model at its root, within its quick budget: the rules give it the
    # win even where CP-SAT's proof came first in wall time (HiGHS's thread held back).
    import time

    from gpusolve.optimize.milp import race as race_module
    from gpusolve.optimize.phased.solve import solver_for

    m = _random_milp(random.Random(6))
    solve_milp_now = race_module.solve_milp
    solve_cp_sat_now = cp_model.CpSolver.solve

    def highs_late(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)
        return solve_milp_now(*args, **kwargs)

    def cp_sat_late(self: cp_model.CpSolver, *args: Any) -> Any:
        time.sleep(0.5)
        return solve_cp_sat_now(self, *args)

    answers = []
    for late in ("none", "HiGHS", "CP-SAT"):
        if late == "HiGHS":
            monkeypatch.setattr(race_module, "solve_milp", highs_late)
        if late == "CP-SAT":
            monkeypatch.setattr(cp_model.CpSolver, "solve", cp_sat_late)
        r = race_module.race(m, translate(m.proto), solver_for(CONFIG), CONFIG)
        monkeypatch.undo()
        assert r.status == "optimal" and r.values is not None
        values = [r.values.value(v) for v in range(len(m.proto.variables))]
        answers.append((r.solver, values))
    assert answers[0][0] == "HiGHS"
    assert answers[0] == answers[1] == answers[2]


def test_past_its_quick_budget_highs_waits_for_cp_sat_s_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A knapsack of three rows HiGHS proves in 56 checks, past its quick budget (25 here):
    # HiGHS checks past it only once CP-SAT has ended, so the two never share the cores
    # beyond it. CP-SAT is held back half a second, so a HiGHS that searched on beside it
    # would be seen checking.
    import time

    from gpusolve.optimize.milp import race as race_module
    from gpusolve.optimize.phased.solve import solver_for

    rng = random.Random(1)
    m = cp_model.CpModel()
    xs = [m.new_bool_var(f"x{i}") for i in range(30)]
    for _ in range(3):
        weights = [rng.randint(10_000, 99_999) for _ in xs]
        m.add(sum(w * x for w, x in zip(weights, xs, strict=True)) <= sum(weights) // 2)
    m.minimize(-sum(rng.randint(10_000, 99_999) * x for x in xs))
    cp_sat_running = [False]
    checks_seen: list[tuple[int, bool]] = []
    solve_cp_sat_now = cp_model.CpSolver.solve
    at_now = race_module._HighsStop.at

    def cp_sat_late(self: cp_model.CpSolver, *args: Any) -> Any:
        cp_sat_running[0] = True
        try:
            time.sleep(0.5)
            return solve_cp_sat_now(self, *args)
        finally:
            cp_sat_running[0] = False

    def at(self: Any, checks: int) -> bool:
        checks_seen.append((checks, cp_sat_running[0]))
        return at_now(self, checks)

    monkeypatch.setattr(cp_model.CpSolver, "solve", cp_sat_late)
    monkeypatch.setattr(race_module._HighsStop, "at", at)
    config = SolveConfig(time_limit_s=600, work_limit=4, workers=1, seed=1)
    race_module.race(m, translate(m.proto), solver_for(config), config)
    quick = race_module.HIGHS_QUICK_WORK * CHECKS_PER_WORK
    assert max(c for c, _ in checks_seen) > quick, checks_seen  # HiGHS reached it
    # The first check past the budget waits (it may start while CP-SAT runs); none after.
    assert [c for c, running in checks_seen if running and c > quick + 1] == []


def test_reading_a_models_hints_leaves_a_model_without_hints_without_them() -> None:
    # CP-SAT searches differently from a present but empty hint (on the shipped schedule
    # example's buy-now baseline, 6.3 units of work to the proof instead of 1.0), so the
    # start the race hands HiGHS is read without creating the field; a hint stays whole.
    from gpusolve.optimize.milp.solve import hints

    m = _random_milp(random.Random(6))
    assert not m.proto.has_solution_hint()
    assert hints(m) == {}
    assert not m.proto.has_solution_hint()
    x = m.get_int_var_from_proto_index(1)
    m.add_hint(x, 1)
    assert hints(m) == {1: 1}


def test_a_race_on_an_infeasible_model_is_infeasible() -> None:
    from gpusolve.optimize.milp.race import race
    from gpusolve.optimize.phased.solve import solver_for

    m = cp_model.CpModel()
    x = m.new_int_var(0, 5, "x")
    m.add(2 * x == 5)
    m.minimize(x)
    r = race(m, translate(m.proto), solver_for(CONFIG), CONFIG)
    assert r.status == "infeasible" and r.values is None


@pytest.fixture(scope="module")
def chat_schedule(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A small schedule (growing demand over two quarters): its file and its instance."""
    from tests.support.phased import CHAT_NORTH, QUARTERS

    from gpusolve.plan.inputs import prepare_run
    from gpusolve.plan.phased.inputs import build_phased

    path = tmp_path_factory.mktemp("chat") / "chat.yaml"
    path.write_text(CHAT_NORTH + QUARTERS, encoding="utf-8")
    return path, build_phased(prepare_run(path, [], [])).instance


def test_every_schedule_solver_gives_the_same_schedule_cost(
    chat_schedule: tuple[Path, object],
) -> None:
    from gpusolve.optimize.phased.solve import solve_phased

    _, pi = chat_schedule
    answers = {}
    for solver in ("race", "cp-sat", "highs"):
        config = dataclasses.replace(CONFIG, schedule_solver=solver)
        s = solve_phased(pi, config)  # type: ignore[arg-type]
        answers[solver] = (s.status, s.tco)
        assert s.solver == {"race": s.solver, "cp-sat": "CP-SAT", "highs": "HiGHS"}[solver]
    assert answers["race"] == answers["cp-sat"] == answers["highs"]
    assert answers["race"][0] == "optimal"


def test_the_command_line_names_the_schedule_solver(chat_schedule: tuple[Path, object]) -> None:
    from tests.support.cli import run_cli

    from gpusolve.models.schedule import Schedule

    path, _ = chat_schedule
    code, out = run_cli("plan", "-q", str(path), "--format", "json", "--schedule-solver", "highs")
    assert code == 0, out
    notes = Schedule.model_validate_json(out).model_notes
    assert any(note.startswith("solved by HiGHS") for note in notes)

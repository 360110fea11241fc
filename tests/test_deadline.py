"""`--time-limit` is a limit for the whole command: every search started after the command
set its deadline ends by it (`optimize/interrupt.stop_at`), CP-SAT's and HiGHS's alike, and
the deadline is lifted when the command returns. No test here times anything: the deadlines
are set in the past or far ahead, and what is checked is the limit each solver is given."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest
from ortools.sat.python import cp_model

from gpusolve.optimize import interrupt
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.milp.highs import solve_milp
from gpusolve.optimize.milp.translate import translate


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    interrupt.reset()
    interrupt.stop_at(None)
    yield
    interrupt.stop_at(None)
    interrupt.reset()


def _watched(limit_s: float) -> float:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit_s
    interrupt.watch(solver, announce=False)
    return float(solver.parameters.max_time_in_seconds)


def test_a_solve_is_cut_to_what_is_left_before_the_deadline() -> None:
    assert _watched(60.0) == 60.0  # no deadline: the solve's own limit
    interrupt.stop_at(time.monotonic() + 3600)
    assert _watched(60.0) == 60.0  # a deadline beyond it changes nothing
    interrupt.stop_at(time.monotonic() - 1)
    assert _watched(60.0) == 0.001  # past it: the solvers' minimum
    assert interrupt.past_deadline()


def test_highs_gets_no_time_past_the_deadline() -> None:
    rng = random.Random(3)
    m = cp_model.CpModel()
    xs = [m.new_int_var(0, 3, f"x{i}") for i in range(40)]
    weights = [rng.randint(10_000, 99_999) for _ in xs]
    m.add(sum(w * x for w, x in zip(weights, xs, strict=True)) >= sum(weights) + 1)
    m.minimize(sum(w * x for w, x in zip(weights, xs, strict=True)))
    config = SolveConfig(time_limit_s=600, work_limit=None, workers=1, seed=1)
    interrupt.stop_at(time.monotonic() - 1)
    assert solve_milp(translate(m.proto), config).status != "optimal"


def test_the_plan_command_sets_its_deadline_and_lifts_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pathlib import Path

    from gpusolve.runs import plan as runs_plan

    seen: list[float] = []

    def record(request: object, progress: object) -> object:
        seen.append(interrupt.seconds_left())
        raise RuntimeError("stop here")

    monkeypatch.setattr(runs_plan, "_run_plan", record)
    request = runs_plan.PlanRequest(Path("x.yaml"), (), (), time_limit_s=30.0)
    with pytest.raises(RuntimeError):
        runs_plan.run_plan(request)
    assert 0 < seen[0] <= 30.0
    assert not interrupt.past_deadline() and interrupt.seconds_left() == float("inf")
    without = runs_plan.PlanRequest(Path("x.yaml"), (), ())
    with pytest.raises(RuntimeError):
        runs_plan.run_plan(without)
    assert seen[1] == float("inf")


def test_a_sensitivity_probe_past_the_deadline_is_not_searched() -> None:
    from gpusolve.analyses.probing import NO_PLAN, NOT_FOUND, past_deadline

    assert past_deadline(1.5, NO_PLAN) is None  # no deadline: the probe searches
    interrupt.stop_at(time.monotonic() + 3600)
    assert past_deadline(1.5, NO_PLAN) is None
    interrupt.stop_at(time.monotonic() - 1)
    probe = past_deadline(1.5, NO_PLAN)
    assert probe is not None and probe.key == NOT_FOUND and probe.tco is None
    assert "time limit" in probe.description

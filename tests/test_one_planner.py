"""One planner over time: a purchase schedule is a kind of finished plan.

A schedule of one period is the single plan of the same inputs, to the yuan, on every
shipped example (each period is built from the single model's own families); the analyses
take `Solved` whatever the kind; `run_plan` has no branch before `make_plan`; a
schedule's analyses solve the schedule's own instance.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from tests.support.phased import CHAT_NORTH, QUARTERS
from tests.support.shipped import EXAMPLES, ROOT

from gpusolve.analyses import payback, sensitivity, topk, whynot
from gpusolve.models.periods import Periods
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.phased.ir import PhasedInstance
from gpusolve.plan import make_plan
from gpusolve.plan.inputs import Inputs, prepare_run
from gpusolve.plan.phased.inputs import build_phased
from gpusolve.plan.solved import Phased, PlanOptions, Single, Solved

# A deterministic limit (CP-SAT's work), with a wall clock far beyond it: no test here
# depends on the machine's load.
CONFIG = SolveConfig(time_limit_s=600, work_limit=60, workers=1, seed=1)
PHASED = ROOT / "examples" / "phased-growth.yaml"
PHASED_CATALOG = (ROOT / "catalog", ROOT / "examples" / "phased" / "catalog.yaml")


def _one_period(run: Inputs) -> Inputs:
    """The same inputs planned as a schedule of one period as long as the horizon."""
    periods = Periods(length_months=run.reqs.horizon_months)
    return dataclasses.replace(run, reqs=run.reqs.model_copy(update={"periods": periods}))


SINGLE = [p for p in EXAMPLES if "\nscenarios:" not in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", SINGLE, ids=[p.stem for p in SINGLE])
def test_a_schedule_of_one_period_is_the_single_plan_to_the_yuan(path: Path) -> None:
    run = prepare_run(path, [], [])
    single = make_plan(run, PlanOptions(config=CONFIG)).solution
    assert isinstance(single, Single) and single.solution is not None
    costs = single.solution.costs
    assert single.solution.status == "optimal" and costs is not None
    from gpusolve.optimize.phased.solve import solve_phased

    pi = build_phased(_one_period(run)).instance
    schedule = solve_phased(pi, CONFIG)
    assert schedule.status == "optimal", schedule.reason
    assert (schedule.tco, schedule.penalties, schedule.resale) == (
        costs.tco,
        costs.penalties,
        costs.resale,
    )


def test_the_phased_example_over_one_period_is_its_single_plan() -> None:
    run = prepare_run(PHASED, PHASED_CATALOG, [])
    flat = run.reqs.model_copy(update={"periods": None, "budget": _first_year(run)})
    flat_run = dataclasses.replace(run, reqs=_without_timing(flat))
    single = make_plan(flat_run, PlanOptions(config=CONFIG)).solution
    assert isinstance(single, Single) and single.solution is not None
    costs = single.solution.costs
    assert costs is not None
    from gpusolve.optimize.phased.solve import solve_phased

    schedule = solve_phased(build_phased(_one_period(flat_run)).instance, CONFIG)
    assert (schedule.tco, schedule.penalties) == (costs.tco, costs.penalties)


def _first_year(run: Inputs) -> Any:
    return run.reqs.budget.model_copy(update={"capex_by_year": None})


def _without_timing(reqs: Any) -> Any:
    """Every workload from month 0 to the horizon at its stated demand (a single plan
    has no timing)."""
    cleared = {"start_month": 0, "end_month": None, "demand_growth": None}
    workloads = [w.model_copy(update=cleared) for w in reqs.workloads]
    return reqs.model_copy(update={"workloads": workloads})


def test_every_analysis_entry_point_takes_solved() -> None:
    for module in (topk, whynot, payback, sensitivity):
        first = next(iter(inspect.signature(module.run).parameters.values()))
        assert first.annotation in ("Solved", Solved), module.__name__


def test_plan_has_one_pipeline() -> None:
    """No branch to a second planner before `make_plan`: the schedule goes through it."""
    runs = ROOT / "solver" / "gpusolve" / "runs"
    assert not (runs / "phased.py").exists()
    source = (runs / "plan.py").read_text(encoding="utf-8")
    body = source.split("def run_plan(", 1)[1].split("\ndef ", 1)[0]
    assert "run_phased" not in body and "if run.reqs.phased" not in body


@pytest.fixture(scope="module")
def schedule(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    """A six-month chat whose demand quadruples in its second quarter."""
    path = tmp_path_factory.mktemp("chat") / "chat.yaml"
    path.write_text(CHAT_NORTH + "    demand_by_period: [1, 4]\n" + QUARTERS, encoding="utf-8")
    run = prepare_run(path, [], [])
    return make_plan(run, PlanOptions(config=CONFIG, top_k=1, why_not="atlas-800t-a3"))


def test_a_schedule_is_proven_within_its_work_limit(schedule: Solved) -> None:
    assert isinstance(schedule.solution, Phased)
    assert schedule.plan.status == "optimal"
    assert schedule.plan.best_bound == schedule.plan.objective  # type: ignore[union-attr]


def test_a_schedules_analyses_solve_its_own_instance(
    schedule: Solved, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpusolve.optimize.phased.alternatives as alternatives

    seen: list[PhasedInstance] = []
    real = alternatives.solve_phased

    def solve_phased(pi: PhasedInstance, *args: Any, **kwargs: Any) -> Any:
        seen.append(pi)
        return real(pi, *args, **kwargs)

    monkeypatch.setattr(alternatives, "solve_phased", solve_phased)
    after = schedule.with_plan(topk.run(schedule))
    after = after.with_plan(whynot.run(after))
    assert isinstance(schedule.solution, Phased)
    assert seen and all(pi is schedule.solution.instance for pi in seen)
    assert after.plan.alternatives  # type: ignore[union-attr]
    assert after.plan.why_not is not None  # type: ignore[union-attr]


def test_a_schedules_sensitivity_ranges_hold_the_schedule_inside_and_not_beyond(
    schedule: Solved,
) -> None:
    from gpusolve.analyses.schedule_ranges import ScheduleTask, schedule_key

    ranged = sensitivity.run(schedule, bar=False, workers=1)
    assert isinstance(ranged, type(schedule.plan)) and ranged.sensitivity is not None
    ranges = ranged.sensitivity.ranges
    assert ranges and ranged.sensitivity.not_searched is None
    phased = schedule.solution
    assert isinstance(phased, Phased)
    from gpusolve.analyses.schedule_ranges import parameters

    params = {p.words: p for p in parameters(phased.instance, phased.best, "CNY")}
    base_key = schedule_key(phased.best)
    for r in ranges:
        lo = r.low if r.low is not None else r.searched_low
        hi = r.high if r.high is not None else r.searched_high
        assert lo <= r.current <= hi, r
        task = ScheduleTask(params[r.parameter], phased.instance, phased.best, base_key, CONFIG)
        # Inside the range the schedule is the same; just past a reported end it is not.
        assert task.solve_at((lo / r.current) ** 0.5 if r.current else 1.0).key == base_key
        if r.high is not None and r.above is not None:
            assert task.solve_at(r.high / r.current * 1.06).key != base_key

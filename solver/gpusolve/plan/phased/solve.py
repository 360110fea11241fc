"""A purchase schedule from a run: `solve_schedule(run, options) -> Solved`.

The periods' instances (`inputs.py`), then three solves of one model: the rent-as-you-go
and buy-now baselines first (quick, and a schedule to fall back on), then the free
schedule, returned no dearer than the cheaper baseline (`optimize.phased.solve.no_dearer`);
why it or a baseline is infeasible; then, for a schedule, each period's bill of materials
and capacity, and the ordinary single plan priced over the periods beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from gpusolve.plan.solved import Phased, PlanOptions, Solved

if TYPE_CHECKING:
    from gpusolve.optimize.phased.ir import Mode, PhasedSolution
    from gpusolve.plan.inputs import Inputs

Progress = Callable[[str], None]
# A long solve's progress: (stage, incumbent objective or None, best bound or None).
Watch = Callable[[str, int | None, int | None], None]

STAGES: dict[str, str] = {
    "rent": "rent-as-you-go baseline",
    "buy-now": "buy-now baseline",
    "free": "the schedule",
}


def solve_schedule(
    run: Inputs,
    options: PlanOptions,
    progress: Progress = lambda _: None,
    watch: Watch | None = None,
) -> Solved:
    """The cheapest schedule for `run` (or the proof, or the reason, that there is none),
    with its baselines and the analyses that explain a schedule that does not exist."""
    from gpusolve.optimize.phased.solve import no_dearer, solve_phased
    from gpusolve.plan.phased.infeasible import infeasibility
    from gpusolve.plan.phased.inputs import build_phased, check_phased
    from gpusolve.plan.phased.schedule import schedule

    check_phased(run.reqs, str(run.requirements_path or "requirements"))
    phased_inputs = build_phased(run)
    instance = phased_inputs.instance
    config = options.config
    solutions: dict[Mode, PhasedSolution] = {}
    for mode in ("rent", "buy-now", "free"):
        progress(f"solving {STAGES[mode]}")
        found = _watching(watch, STAGES[mode])
        # The free search starts from the cheaper baseline: a schedule of the same model.
        hint = _cheapest(solutions.values()) if mode == "free" else None
        solutions[mode] = solve_phased(instance, config, mode, found=found, hint=hint)
    solutions["free"] = no_dearer(solutions["free"], [solutions["buy-now"], solutions["rent"]])
    best = solutions["free"]
    result = schedule(instance, best, solutions["buy-now"], solutions["rent"], run.reqs.currency)
    result = result.model_copy(
        update={"infeasibility": infeasibility(run, phased_inputs, solutions, config)}
    )
    solved = Solved(run, options, result, Phased(phased_inputs, solutions))
    if not best.periods:
        return solved
    return _with_baseline(solved, progress)


def _cheapest(solutions: Iterable[PhasedSolution]) -> PhasedSolution | None:
    found = [s for s in solutions if s.objective_value is not None and s.periods]
    return min(found, key=lambda s: s.objective_value or 0, default=None)


def _watching(watch: Watch | None, stage: str) -> Callable[[int, int], None] | None:
    if watch is None:
        return None
    watch(stage, None, None)
    return lambda value, bound: watch(stage, value, bound)


def _with_baseline(solved: Solved, progress: Progress) -> Solved:
    """The schedule with each period's BOM and capacity, and the single plan beside it."""
    from dataclasses import replace

    from gpusolve.models.schedule import Schedule
    from gpusolve.plan.phased.baseline import single_period
    from gpusolve.plan.phased.views import single_baseline, with_periods_detail, with_single

    phased = solved.solution
    assert isinstance(phased, Phased) and isinstance(solved.plan, Schedule)
    run, config = solved.run, solved.options.config
    result = with_periods_detail(solved.plan, phased.inputs, phased.best, run)
    progress("pricing the single plan over the periods")
    single = single_period(run, phased.instance, config)
    result = with_single(result, single_baseline(phased.best, single, run.reqs.currency))
    return replace(solved, plan=result, solution=replace(phased, single=single))

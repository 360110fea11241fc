"""`gpusolve plan` with `periods:`: the phased schedule and its baselines, rendered."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.models.schedule import Schedule
from gpusolve.runs.output import CommandOutput, RunResult, written

if TYPE_CHECKING:
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.optimize.phased import Mode, PhasedSolution
    from gpusolve.plan.inputs import Inputs
    from gpusolve.plan.phased import PhasedInputs

EXIT_CODES = {"optimal": 0, "feasible": 0, "infeasible": 1, "timeout": 3}


def run_phased(
    run: Inputs,
    config: SolveConfig,
    requirements: Path,
    fmt: str,
    output: Path | None,
    top_k: int = 0,
    why_not: str | None = None,
) -> RunResult[Schedule]:
    from gpusolve.optimize.phased import solve_phased
    from gpusolve.plan.phased import build_phased, check_phased
    from gpusolve.plan.schedule import schedule
    from gpusolve.render.schedule import render_schedule

    check_phased(run.reqs, str(requirements))
    built = build_phased(run)
    pi = built.instance
    best = solve_phased(pi, config)
    buy_now = solve_phased(pi, config, "buy-now")
    rent = solve_phased(pi, config, "rent")
    result = schedule(pi, best, buy_now, rent, run.reqs.currency)
    result = _analysed(
        result, run, built, {"free": best, "buy-now": buy_now, "rent": rent}, config, top_k, why_not
    )
    text = result.model_dump_json(indent=2) + "\n" if fmt == "json" else render_schedule(result)
    code = EXIT_CODES[result.status]
    if output is not None:
        return RunResult(result, CommandOutput(files=(written(output, text),), exit_code=code))
    return RunResult(result, CommandOutput(stdout=text, exit_code=code))


def _analysed(
    result: Schedule,
    run: Inputs,
    built: PhasedInputs,
    solutions: dict[Mode, PhasedSolution],
    config: SolveConfig,
    top_k: int,
    why_not: str | None,
) -> Schedule:
    """The schedule with its analyses: why it or a baseline is infeasible (always), the
    next-best schedules (--top-k), why not an item (--why-not)."""
    from gpusolve.analyses import phased

    best = solutions["free"]
    update: dict[str, object] = {
        "infeasibility": phased.infeasibility(run, built, solutions, config),
        "alternatives": phased.top_k(built, best, top_k, config),
    }
    if why_not is not None:
        update["why_not"] = phased.why_not(run, built, best, why_not, config)
    return result.model_copy(update=update)

"""`gpusolve plan` with `periods:`: the phased schedule and its baselines, rendered."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.models.schedule import Schedule
from gpusolve.runs.output import CommandOutput, RunResult, written

if TYPE_CHECKING:
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan.inputs import Inputs

EXIT_CODES = {"optimal": 0, "feasible": 0, "infeasible": 1, "timeout": 3}


def run_phased(
    run: Inputs, config: SolveConfig, requirements: Path, fmt: str, output: Path | None
) -> RunResult[Schedule]:
    from gpusolve.optimize.phased import solve_phased
    from gpusolve.plan.phased import build_phased, check_phased
    from gpusolve.plan.schedule import schedule
    from gpusolve.render.schedule import render_schedule

    check_phased(run.reqs, str(requirements))
    built = build_phased(run)
    pi = built.instance
    buy_now = solve_phased(pi, config, "buy-now")
    best = solve_phased(pi, config, warm=buy_now)
    rent = solve_phased(pi, config, "rent")
    result = schedule(pi, best, buy_now, rent, run.reqs.currency)
    text = result.model_dump_json(indent=2) + "\n" if fmt == "json" else render_schedule(result)
    code = EXIT_CODES[result.status]
    if output is not None:
        return RunResult(result, CommandOutput(files=(written(output, text),), exit_code=code))
    return RunResult(result, CommandOutput(stdout=text, exit_code=code))

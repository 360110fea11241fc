"""`gpusolve plan` with `periods:`: the phased schedule and its baselines, rendered."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.models.schedule import Schedule
from gpusolve.runs.output import CommandOutput, RunResult, written

if TYPE_CHECKING:
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.optimize.phased_ir import Mode, PhasedSolution
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
    bom: bool = False,
    catalog_paths: tuple[Path, ...] = (),
) -> RunResult[Schedule]:
    from gpusolve.optimize.phased import no_dearer, solve_phased
    from gpusolve.plan.peak import single_period
    from gpusolve.plan.phased import build_phased, check_phased
    from gpusolve.plan.schedule import schedule
    from gpusolve.plan.schedule_views import single_baseline, with_periods_detail, with_single

    check_phased(run.reqs, str(requirements))
    built = build_phased(run)
    pi = built.instance
    buy_now = solve_phased(pi, config, "buy-now")
    rent = solve_phased(pi, config, "rent")
    best = no_dearer(solve_phased(pi, config), [buy_now, rent])
    result = schedule(pi, best, buy_now, rent, run.reqs.currency)
    result = _analysed(
        result, run, built, {"free": best, "buy-now": buy_now, "rent": rent}, config, top_k, why_not
    )
    if best.periods:  # a schedule: its BOM, capacity, and the single plan beside it
        result = with_periods_detail(result, pi, best, run)
        single = single_period(run, pi, config)
        result = with_single(result, single_baseline(best, single, run.reqs.currency))
    text = schedule_text(result, fmt, bom, run, requirements, catalog_paths)
    code = EXIT_CODES[result.status]
    if output is not None and not result.periods and (bom or fmt in ("html", "csv")):
        # No schedule: the report or BOM asked for is not there; the -o file keeps the last
        # one and the explanation goes to the terminal, as for a single plan.
        said = (f"no schedule: {output} left as it was",)
        return RunResult(result, CommandOutput(before=said, stdout=text, exit_code=code))
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


def schedule_text(
    s: Schedule,
    fmt: str,
    bom: bool,
    run: Inputs,
    requirements: Path,
    catalog_paths: tuple[Path, ...],
) -> str:
    """The HTML report of a schedule, else its bill of materials (--bom), else the
    schedule in its format; a run without a schedule explains itself as text."""
    from gpusolve.render.schedule import render_schedule

    found = bool(s.periods)
    if fmt == "html" and found:
        from gpusolve.report.html import context_for
        from gpusolve.report.schedule import schedule_html

        return schedule_html(s, context_for(run.catalog, list(catalog_paths), [requirements]))
    if bom and found:
        from gpusolve.render.schedule_bom import render_schedule_bom

        return render_schedule_bom(s, fmt)
    if fmt == "json":
        return s.model_dump_json(indent=2) + "\n"
    if fmt == "yaml":
        import yaml

        data = s.model_dump(mode="json")
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    if fmt == "markdown":
        from gpusolve.render.schedule import schedule_markdown

        return schedule_markdown(s)
    return render_schedule(s)
